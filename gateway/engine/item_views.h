/*
 * What a client sees of a job, a pool or manager, a process, a ring, a
 * queue, a pipe and a client's lease, in two steps: the engine thread copies an
 * item's shown fields into a view (engine__*_view, item_views.c), and any
 * thread makes the view's JSON (item_view_json, job_view_text). A list's page is copied
 * by the engine and written by the HTTP thread that asked (lists.c), so a
 * page of a thousand pools costs the engine copies of plain fields, not a
 * thousand JSON objects; a single item's view is both steps in a row.
 *
 * A view points at nothing the engine owns: strings are copied, or are
 * static (state names, a backend's name).
 */
#ifndef GATEWAY_ENGINE_ITEM_VIEWS_H
#define GATEWAY_ENGINE_ITEM_VIEWS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "gateway/backend/backend.h"
#include "gateway/engine/engine.h"

typedef struct job_view {
	char id[20], pool[20];
	const char *state;
	/* its function and name (NULL: none): the job's own while the engine
	 * writes the view at once, else in copy, which the view owns */
	const char *function, *name;
	char *copy;
	int64_t total, done, failed; /* by input, when its tasks carry several */
	int by_input;
	int64_t tasks_total, tasks_done, tasks_failed;
	int chunksize;
	int64_t created_ms, ended_ms; /* ended_ms 0: it runs */
	int64_t received; /* while its arguments come: where its next part starts; -1: all in */
} job_view;

typedef struct worker_view {
	char id[20];
	const char *state;
	char handle[BACKEND_HANDLE_MAX];
	int64_t pending;
	int exit_code;
	int queued; /* its backend's queue holds it */
	char last_words[512];
} worker_view;

typedef struct pool_view {
	char id[20];
	const char *state;
	const char *runs_on; /* its backend's name, for what runs each worker */
	int native; /* its backend runs no image */
	char backend[32];
	int processes, gpu, max_attempts;
	double cpu;
	int64_t memory_mb, created_ms;
	int live;
	int64_t queued, pending, done, failed, open_jobs, started, lost;
	char reason[512];
	int scale_min, scale_max, scale_target_s, scale_idle_s; /* scale_max 0: no autoscale */
	char scale_reason[200];
	char image[256];
	char manager[300];
	char code[65];
	char lease[20];
	char *runtime; /* JSON text, or NULL */
	worker_view *workers;
	size_t nworkers;
} pool_view;

typedef struct process_view {
	char id[20];
	const char *state; /* NULL: a ring's member that is gone (only its id shows) */
	const char *runs_on;
	char handle[BACKEND_HANDLE_MAX];
	int terminated, ended, exit_code;
	int64_t created_ms, ended_ms;
	char reason[512];
	char *spec_json;
} process_view;

typedef struct ring_view {
	char id[20];
	const char *state;
	int size, master_port;
	int64_t created_ms;
	process_view *members; /* size of them, by rank */
} ring_view;

typedef struct queue_view {
	char id[48];
	char kind[16];
	int64_t size, held;
	int waiting;
	int64_t created_ms;
} queue_view;

typedef struct pipe_view {
	char id[48];
	int duplex;
	queue_view dirs[2];
	int ndirs;
} pipe_view;

/* ids held by a lease */
typedef struct id_list {
	char (*ids)[20];
	size_t n, cap;
} id_list;

typedef struct lease_view {
	char id[20];
	int ended;
	int64_t lease_ms, left_ms, created_ms;
	id_list pools, managers, processes, queues, pipes;
} lease_view;

typedef struct item_view {
	engine_list_kind kind;
	union {
		pool_view pool; /* LIST_POOLS, LIST_MANAGERS */
		process_view process;
		ring_view ring;
		queue_view queue;
		pipe_view pipe;
		lease_view lease;
	} u;
} item_view;

/* On any thread. NULL when out of memory. */
json_t *item_view_json(const item_view *v);
void item_view_fini(item_view *v);
/* A job's view as JSON text, appended to out. */
int job_view_text(const job_view *v, cm_buf *out);
void job_view_fini(job_view *v);

#endif
