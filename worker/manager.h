/* The object a manager worker hosts; see manager.c. Not thread-safe: only
 * the worker's running task calls it (one at a time, under worker.c's turns). */
#ifndef WORKER_MANAGER_H
#define WORKER_MANAGER_H

#include "common/common.h"

typedef struct worker_manager worker_manager;
struct worker_runtime;

/* type: dict, list, queue, counter, sleeper, LIB.so:TYPE found on
 * plugin_path, or runtime: the object lives in rt (borrowed; it outlives
 * the manager), a call {method: NAME, args: [ARG]} runs NAME(ARG) there.
 * *out is new. On failure *err is a new message (free it). */
int worker_manager_new(const char *type, const char *plugin_path, struct worker_runtime *rt, worker_manager **out,
                       char **err);
void worker_manager_free(worker_manager *m);
/* Runs one call, arg {"method": M, "args": [...]}; appends
 * {"result": R, "started_ms": T0, "ended_ms": T1} or the error text. */
int worker_manager_call(worker_manager *m, const char *arg, size_t len, cm_buf *out, int *ok);

#endif
