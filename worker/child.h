/*
 * A program the worker starts with its stdin, stdout and stderr on pipes:
 * an exec task's command (one per task) or a runtime (one per worker).
 */
#ifndef WORKER_CHILD_H
#define WORKER_CHILD_H

#include <stddef.h>
#include <sys/types.h>

typedef struct worker_child {
	pid_t pid;
	int in; /* its stdin, ours to write; -1 once closed */
	int out; /* its stdout, ours to read */
	int err; /* its stderr, ours to read */
} worker_child;

/* Starts argv[0] (searched on PATH) with env (NULL: the worker's own). The
 * worker has threads, so the child makes only async-signal-safe calls
 * before exec; an exec that fails says why on the child's stderr and exits
 * 127. Returns CM_OK, or CM_EIO with why ("pipe: ...", "fork: ..."). */
int worker_child_start(char *const *argv, char *const *env, worker_child *c, char *why, size_t why_len);
/* Closes the pipes still open. */
void worker_child_close(worker_child *c);

#endif
