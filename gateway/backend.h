/*
 * Backends start and stop workers: local processes, Docker containers (and
 * later Kubernetes pods). Each is an object whose first member is this
 * interface, called from the engine thread only, so implementations need no
 * locking of their own. A worker is known to its backend by a handle string:
 * a pid, a container id.
 */
#ifndef GATEWAY_BACKEND_H
#define GATEWAY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "gateway/spec.h"

#define BACKEND_HANDLE_MAX 80

typedef struct backend_worker_spec {
	const char *pool_id;
	const char *worker_id;
	const char *secret;
	const char *hub;
	const char *hub_ca_pem; /* tls+tcp:// hub: the CA the worker trusts (PEM), else NULL */
	const char *hub_server_name; /* ... and the name it checks, or NULL: the URL's host */
	const char *worker_bin; /* local */
	const char *plugin_path; /* local */
	const pool_spec *spec; /* resources, image, volumes, manager */
} backend_worker_spec;

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
	const char *log_path; /* local: stdout and stderr go here; NULL: the gateway's */
} backend_run_spec;

typedef struct backend backend;
struct backend {
	const char *name;
	/* Starts one worker and writes its handle. Returns CM_OK, or an error
	 * with the reason (the backend's own words) in detail. */
	int (*spawn)(backend *b, const backend_worker_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
	             size_t detail_len);
	/* Runs one process or container; writes its handle. */
	int (*run)(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
	           size_t detail_len);
	/* Appends the last max bytes of what it wrote (stdout and stderr). */
	int (*logs)(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out);
	/* Never blocks long. Returns 1 once the worker is gone, with its exit
	 * code (128 + signal for a signal) and what it last said (may be empty);
	 * 0 while it runs, or while the backend cannot tell. */
	int (*poll)(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len);
	/* Asks the worker to stop (hard: kill it now). */
	void (*stop)(backend *b, const char *handle, int hard);
	/* Removes what is left of a worker that is gone (a container). */
	void (*release)(backend *b, const char *handle);
	void (*free)(backend *b);
};

/* gpus: devices to hand out through CUDA_VISIBLE_DEVICES; -1 counts the
 * /dev/nvidiaN devices of this host. */
backend *backend_local_new(int gpus);
/* socket: the Docker Engine API's unix socket. */
backend *backend_docker_new(const char *socket);

#endif
