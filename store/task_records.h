/*
 * A chunk's per-task records (chunk_state.tasks, store_tasks.c), as bytes.
 *
 * Tasks next to each other mostly share a state, an outcome and a number of
 * attempts, and their x goes up by 0 (the worker that holds them) or by 1
 * (the completion numbers of results recorded together). So the records are
 * written as runs: a chunk of 1,024 tasks handed out in one batch, or done
 * in one pull, is one run of a few bytes. Written as 12 bytes a task (the
 * fixed records of schema 6, still read), each change of a chunk rewrote
 * 12 KB, three overflow pages, at its assignment and at each commit of its
 * results: two thirds of what a no-op map wrote to the log.
 *
 * The runs: a first byte RECORDS_RUNS (a fixed record starts with a state,
 * 0 to 2), then each run as varints (LEB128): its count, its flags (state,
 * ok << 2, step << 3), its attempts and its first x; the k-th task of the
 * run has x + k * step. An x is never negative.
 */
#ifndef STORE_TASK_RECORDS_H
#define STORE_TASK_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

typedef struct trec {
	uint8_t state, ok;
	uint16_t attempts;
	int64_t x; /* PENDING: holder ref; DONE: seq; QUEUED: 0 */
} trec;

#define RECORDS_RUNS 0x80
/* The fixed records of schema 6: state, ok, attempts (2), x (8). */
#define RECORDS_FIXED_BYTES 12

/* Reads len bytes (NULL: every task QUEUED, never run) into n records, in
 * either form; CM_EIO if they are not n records. */
int task_records_decode(trec *t, int n, const void *blob, size_t len);
/* Writes n records as runs into out (replacing what it held). */
int task_records_encode(const trec *t, int n, cm_buf *out);

#endif
