/*
 * What a worker's tasks print: the Python runtime's print() and its
 * stderr, an exec task's stderr. A worker keeps it line by line and sends
 * it to the gateway with its next pull (worker.c), which stores it for
 * GET /v1/pools/{id}/logs, so it reaches the program that submitted the
 * work. A line a task printed before it returned is sent no later than
 * the task's result (worker_output_mark).
 *
 * One per process (the runtime and exec code reach it without a handle,
 * as plugin_api.c's queues); thread-safe. Until worker_output_capture,
 * what is written goes straight to the process's own stdout or stderr
 * (strand-worker --run, whose output is its process's log).
 */
#ifndef WORKER_OUTPUT_H
#define WORKER_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

#define WORKER_OUTPUT_STDOUT 1
#define WORKER_OUTPUT_STDERR 2
#define WORKER_OUTPUT_LINE_MAX 4096 /* a longer line is cut into lines this long */
/* Lines kept waiting for the gateway at most; past it they are counted and
 * replaced by one line saying how many were dropped. */
#define WORKER_OUTPUT_HELD_MAX (1u << 20)

void worker_output_capture(void);
/* Bytes a task wrote on stream (WORKER_OUTPUT_STDOUT or _STDERR). */
void worker_output_write(int stream, const char *data, size_t len);
/* Whether lines wait long enough (or are many enough) to be sent now: no
 * lock taken. */
int worker_output_due(int64_t now_ms);

/* The lines waiting, oldest first, as columns (texts one after another). */
typedef struct worker_output_lines {
	cm_buf text;
	uint32_t *lens, *streams;
	size_t n, cap;
	uint64_t first; /* the number of its first line: the worker counts every line it sent from 0 */
	int more; /* lines waited that did not fit */
} worker_output_lines;
/* How many lines were written so far (the number the next will have): a
 * task's result, marked so as it ends, goes to the gateway only once every
 * line before its mark has, so its lines are readable before its result,
 * however many it printed. */
uint64_t worker_output_mark(void);
/* Copies the first lines waiting, up to max_lines and max_bytes of text,
 * into out (emptied first); an unfinished line waiting goes as a line. */
int worker_output_peek(worker_output_lines *out, size_t max_bytes, size_t max_lines);
/* The gateway recorded the first n lines: they go. */
void worker_output_sent(size_t n);
void worker_output_lines_fini(worker_output_lines *l);

#endif
