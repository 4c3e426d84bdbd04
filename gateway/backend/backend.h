/*
 * Backends run workers and processes: local processes, Docker containers,
 * Kubernetes pods and Slurm jobs. A backend is a static table of operations
 * (this struct, the first member of its object). The operations may block
 * (a daemon's answer): they are called only from the backend's own executor
 * thread (executor.h), one at a time, never from the engine, so an
 * implementation needs no locking of its own. What runs is known to its
 * backend by a handle string: a pid, a container id, a Slurm job id.
 */
#ifndef GATEWAY_BACKEND_H
#define GATEWAY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "gateway/k8s_config.h"
#include "gateway/slurm_config.h"
#include "gateway/spec.h"

#define BACKEND_HANDLE_MAX 80

/* Anything a backend can run: a worker, or the body of a Process. */
typedef struct backend_run_spec {
	char *const *argv; /* local: the program; docker: the command, or empty for the image's */
	size_t argc;
	int entrypoint; /* docker: argv replaces the image's entrypoint (a command) */
	char *const *env; /* "NAME=value" */
	size_t nenv;
	char *const *labels; /* docker: "name=value" */
	size_t nlabels;
	const pool_spec *spec; /* image, resources, volumes */
	/* docker and kubernetes: the container's or pod's name (a worker's:
	 * strand-<pool>-<n>), which is then its handle; one already taken gets a
	 * random suffix. NULL: docker names it, kubernetes by the labels. */
	const char *name;
	const char *log_path; /* local: stdout and stderr go here; NULL: the gateway's */
	/* What it belongs to: its pool's id (a worker) or its own (a Process).
	 * The local backend's sandbox gives each one a uid of its own. */
	const char *group;
} backend_run_spec;

typedef struct backend backend;
typedef struct backend_ops {
	const char *name;
	/* Runs programs by their path on hosts that share this one's install
	 * (local, slurm): a worker is strand-worker itself, and a Process's
	 * output goes to its log_path, not kept by the backend. Else (docker,
	 * kubernetes) an image's entrypoint runs, and its output is fetched. */
	int native;
	/* Starts one process or container (a worker is one too) and writes its
	 * handle. Returns CM_OK, or an error with the reason (the backend's own
	 * words) in detail. */
	int (*run)(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
	           size_t detail_len);
	/* Appends the last max bytes of what it wrote (stdout and stderr). */
	int (*logs)(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out);
	/* Returns 1 once it is gone, with its exit code (128 + signal for a
	 * signal, BACKEND_NEVER_STARTED when it never could start) and what it
	 * last said (may be empty); 0 while it runs, or while the backend
	 * cannot tell; BACKEND_QUEUED while it waits in a queue to run at all
	 * (a batch scheduler's, for as long as the cluster is full). */
	int (*poll)(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len);
	/* Asks it to stop (hard: kill it now). */
	void (*stop)(backend *b, const char *handle, int hard);
	/* Removes what is left of it once gone (a container). */
	void (*release)(backend *b, const char *handle);
	/* Optional: the handle of what still runs for owner (a label names it),
	 * for an adoption whose start was never recorded. CM_OK, CM_ENOENT. */
	int (*find)(backend *b, const char *owner, char handle[BACKEND_HANDLE_MAX]);
	void (*free)(backend *b);
} backend_ops;

/* A backend object starts with this; its ops table is static. */
struct backend {
	const backend_ops *ops;
};

/* gpus: devices to hand out through CUDA_VISIBLE_DEVICES (the config's,
 * resolved); sb: the sandbox every program runs in (sandbox.h; NULL:
 * none), the backend's from now on. */
struct sandbox;
backend *backend_local_new(int gpus, struct sandbox *sb);
/* socket: the Docker Engine API's unix socket; a call taking longer than
 * timeout_s fails. */
backend *backend_docker_new(const char *socket, int timeout_s);

/* Runs nothing: an external pool's workers join by themselves
 * (external.c says what its stop and poll mean). */
backend *backend_external_new(void);

/* The exit code of what could never start: not schedulable, no image, a
 * container that cannot be created. Its pool fails with the words. */
#define BACKEND_NEVER_STARTED (-2)

/* poll's answer for a run still waiting for room to start. */
#define BACKEND_QUEUED 2

/* Checks that Slurm answers (squeue); NULL with the cause in detail. */
backend *backend_slurm_new(const slurm_config *cfg, char *detail, size_t detail_len);

/* Checks the server answers, takes the credentials and lists pods at
 * start; NULL with the cause (unreachable, token refused, forbidden) in
 * detail. */
backend *backend_k8s_new(const k8s_config *cfg, int timeout_s, char *detail, size_t detail_len);

#endif
