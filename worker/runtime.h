/*
 * A runtime: a long-lived program the worker starts once and feeds tasks
 * named rt:NAME over its stdin and stdout, instead of a process per task
 * (strand's Python runtime is `python3 -m strand.runtime`; the protocol is
 * language-neutral, README "Runtimes").
 *
 * Frames both ways: type (1 byte), id (u64), a_len (u32), b_len (u32), all
 * little-endian, then a_len bytes a and b_len bytes b.
 *   runtime -> worker  'S' ready            a: its name, b: its version
 *   worker -> runtime  'T' task id          a: NAME, b: the argument (JSON)
 *   runtime -> worker  'R' result id        b: the value (JSON)
 *                      'E' error id         a: the error's type, b: its message
 *                                           and the remote traceback
 *                      'H' heartbeat        at least every 2 s while a task runs
 *                      'Q' queue call id    a: put, get, send or recv; b: its JSON
 *                                           ({queue|pipe, end, item, wait_ms})
 *   worker -> runtime  'A' its answer id    a: ok, empty or error; b: the item
 * A runtime that exits, stops beating for 10 s or sends a frame that is not
 * one of these fails the task with its last stderr lines, and is started
 * again for the next one. Runs on the worker's executor thread only.
 */
#ifndef WORKER_RUNTIME_H
#define WORKER_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

typedef struct worker_runtime worker_runtime;

/* argv_json: the pool's "runtime": the program and its arguments, a JSON
 * array of strings, or "python" (JSON text): `$STRAND_PYTHON -m
 * strand.runtime`, python3 by default. NULL if it is neither. Nothing
 * starts yet. */
worker_runtime *worker_runtime_new(const char *argv_json);
/* Closes its stdin (a runtime exits then), kills what is left. */
void worker_runtime_free(worker_runtime *rt);
/* Runs function (NAME, without "rt:") on arg, starting the runtime first if
 * it is not running; timeout_ms 0: none. Appends the result (JSON) or the
 * error text to out and sets *ok. Returns CM_OK or CM_ENOMEM. */
int worker_runtime_run(worker_runtime *rt, const char *function, const char *arg, size_t arg_len, unsigned timeout_ms,
                       cm_buf *out, int *ok);

/* Whether its program runs now (it started, and has not ended since). */
int worker_runtime_running(const worker_runtime *rt);

#endif
