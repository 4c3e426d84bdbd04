/*
 * Backends start and stop workers. One ops table per backend (local today;
 * docker and kubernetes plug in the same way), called from the engine thread
 * only, so implementations need no locking of their own.
 */
#ifndef GATEWAY_BACKEND_H
#define GATEWAY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/spec.h"

typedef struct backend_worker_spec {
	const char *pool_id;
	const char *worker_id;
	const char *secret;
	const char *hub;
	const char *worker_bin;
	const char *plugin_path;
	const pool_spec *resources;
} backend_worker_spec;

typedef struct backend_ops {
	const char *name;
	/* Starts one worker; *handle identifies it to the other calls. Returns
	 * CM_OK, or an error with the reason (the backend's own words) in
	 * detail. */
	int (*spawn)(const backend_worker_spec *spec, int64_t *handle, char *detail, size_t detail_len);
	/* Never blocks. Returns 1 and sets *exit_code (128 + signal for a
	 * signal) once the worker is gone, 0 while it runs. */
	int (*poll)(int64_t handle, int *exit_code);
	/* Asks the worker to stop (hard: kill it now). */
	void (*stop)(int64_t handle, int hard);
} backend_ops;

extern const backend_ops backend_local;

/* The ops table for a backend name, or NULL. */
const backend_ops *backend_find(const char *name);

#endif
