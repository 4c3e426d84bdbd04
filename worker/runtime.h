/*
 * A runtime: a long-lived program the worker starts once and feeds tasks
 * named rt:NAME over its stdin and stdout, instead of a process per task
 * (strand's Python runtime is `python3 -m strand.runtime`; the protocol is
 * language-neutral, docs/tasks.md, "Runtimes").
 *
 * Frames both ways: type (1 byte), id (u64), a_len (u32), b_len (u32), all
 * little-endian, then a_len bytes a and b_len bytes b.
 *   runtime -> worker  'S' ready            a: its name, b: its version
 *   worker -> runtime  'C' context key      b: its JSON text, the first time key
 *                                           is named; empty after (key 0: none)
 *                      'T' task id          a: NAME, b: the argument (JSON; for
 *                                           one that named an uploaded value,
 *                                           {"$value_file":"PATH"}: its file)
 *   runtime -> worker  'R' result id        b: the value (JSON)
 *                      'E' error id         a: the error's type, b: its message
 *                                           and the remote traceback
 *                      'P' partly failed id a task of several inputs (a map's
 *                                           chunk) some of which failed alone:
 *                                           a: how many (decimal), b: its error
 *                                           (JSON: which failed, and the rest's
 *                                           values; docs/tasks.md)
 *                      'H' heartbeat        at least every 2 s while a task runs
 *                      'O' output stream    b: what a task printed (stream 1:
 *                                           stdout, 2: stderr), before its
 *                                           result (output.h); the runtime's
 *                                           own stderr is output too
 *                      'Q' queue call id    a: put, get, send or recv; b: its JSON
 *                                           ({queue|pipe, end, item, wait_ms})
 *   worker -> runtime  'A' its answer id    a: ok, empty or error; b: the item
 *                                           (it may come after 'T' frames sent
 *                                           before it: those wait their turn)
 * A job's context is what its tasks share (strand's Python runtime: the
 * function), sent once instead of with every task. A 'T' runs with the
 * context the last 'C' named. A runtime keeps the last 32 context texts it
 * was sent (WORKER_RUNTIME_CONTEXTS_KEPT); the worker sends a text again
 * once it fell out of those.
 * A runtime runs the tasks it is sent one at a time, in order, answering
 * each; several may be sent before the first is answered. A runtime that
 * exits, stops beating for 10 s or sends a frame that is not one of these
 * ends the task it was on with its last stderr lines, and is started again
 * for the next one. Used by the worker's running task only (one at a time).
 */
#ifndef WORKER_RUNTIME_H
#define WORKER_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "worker/values.h"

typedef struct worker_runtime worker_runtime;

#define WORKER_RUNTIME_CONTEXTS_KEPT 32

/* argv_json: the pool's "runtime": the program and its arguments, a JSON
 * array of strings, or "python" (JSON text): `$STRAND_PYTHON -m
 * strand.runtime`, python3 by default. NULL if it is neither. Nothing
 * starts yet. */
worker_runtime *worker_runtime_new(const char *argv_json);
/* Closes its stdin (a runtime exits then), kills what is left. */
void worker_runtime_free(worker_runtime *rt);
/* Ends it as a Process's body ends: an 'X' frame asks its task loop to
 * return, and the calls its task's own processes make (it waits for them
 * at exit, as multiprocessing does) are served until it exits. Its exit
 * code: the Process's (sys.exit's, 1 when it raised; 128 + a signal that
 * ended it; 0 when it had gone already). */
int worker_runtime_finish(worker_runtime *rt);
/* When the last call's runtime ended while it ran a task (a Process's
 * os._exit(3), a crash), the code it ended with (128 + a signal): a
 * Process's exit code then, as multiprocessing's child's; else -1. */
int worker_runtime_lost_code(const worker_runtime *rt);
/* Starts it now, ahead of its first task, so that the program loads (a
 * Python runtime imports for tens of milliseconds) before any task waits
 * for it; its ready frame is read by worker_runtime_await_start, or when
 * the first task comes. CM_OK also when it runs already; else why says
 * why, and the first task tries again. */
int worker_runtime_start(worker_runtime *rt, char *why, size_t why_len);
/* Waits at most wait_ms for the ready frame of the one started ahead.
 * CM_OK once it came (or none runs, or it came before); CM_ETIMEDOUT
 * while it still loads; CM_EUNAVAIL when it ended or said something
 * else: the first task then finds out and starts it again. */
int worker_runtime_await_start(worker_runtime *rt, unsigned wait_ms);
/* A task for worker_runtime_run_many. */
typedef struct worker_runtime_task {
	const char *function; /* NAME, without "rt:" */
	const char *arg; /* JSON text */
	size_t arg_len;
	unsigned timeout_ms; /* 0: none; counted from when the runtime reaches it */
	uint64_t context_key; /* its job's context: 0 none, else the job's key ... */
	const char *context; /* ... and its JSON text */
	size_t context_len;
} worker_runtime_task;

typedef enum worker_runtime_outcome {
	RT_OK, /* out: the result (JSON) */
	RT_ERROR, /* out: the error text */
	RT_LOST /* the runtime died or hung on it (out says how, with its last
	         * words): an attempt lost, as on a crashed worker */
} worker_runtime_outcome;

/* Told each task's outcome as soon as it is known, in order; out is the
 * callee's from then on (also when it fails). failed_inputs: an RT_ERROR
 * of a task of several inputs ('P'), how many of them failed alone; else 0.
 * Returns CM_OK, or an error that stops worker_runtime_run_many. */
typedef int (*worker_runtime_done)(void *ctx, size_t i, worker_runtime_outcome how, uint32_t failed_inputs,
                                   cm_buf *out);

/* Runs tasks[0..n) in the runtime, starting it first if it is not running.
 * They are sent all at once (the runtime runs them in order, one at a
 * time), so a run of short tasks costs no round trip each. When the runtime
 * ends on one, the ones after it are sent to a new one. Returns CM_OK,
 * CM_ENOMEM, or done's error. */
int worker_runtime_run_many(worker_runtime *rt, const worker_runtime_task *tasks, size_t n, worker_runtime_done done,
                            void *ctx);
/* One task, its result (JSON) or error text appended to out, *ok set. */
int worker_runtime_run(worker_runtime *rt, const char *function, const char *arg, size_t arg_len, unsigned timeout_ms,
                       cm_buf *out, int *ok);

/* Where the items its tasks put on queues and pipes go when written to a
 * file ({"$value_file":"PATH"}: past what goes inline): stored as values
 * (borrowed; NULL: refused). */
void worker_runtime_use_values(worker_runtime *rt, worker_values *values);
worker_values *worker_runtime_values(const worker_runtime *rt); /* NULL: none */

/* Whether its program runs now (it started, and has not ended since). */
int worker_runtime_running(const worker_runtime *rt);

#endif
