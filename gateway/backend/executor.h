/*
 * backend_executor: backend operations off the engine thread. Each backend
 * gets one executor: a thread that runs its operations in the order the
 * engine asked for them and reports back through a callback, so a Docker
 * daemon (or a Kubernetes API server) that is slow or hangs delays only the
 * work of that backend, never the engine.
 *
 * The engine names what it starts by an owner id (a worker's or a
 * process's); the executor keeps the backend's handle for it, watches it
 * while it runs (polling every BX_WATCH_MS) and reports its end once.
 * Every call below is asynchronous and never blocks: it copies what it needs
 * and queues the operation.
 */
#ifndef GATEWAY_BACKEND_EXECUTOR_H
#define GATEWAY_BACKEND_EXECUTOR_H

#include <stddef.h>

#include "common/common.h"
#include "gateway/backend/backend.h"

#define BX_WATCH_MS 50
#define BX_OWNER_MAX 24

typedef enum bx_event_kind {
	BX_STARTED, /* a run ended: err CM_OK and handle, or why not in detail */
	BX_EXITED, /* what runs ended: exit_code, and its last words in detail */
	BX_LOGS, /* the output bx_logs asked for, in logs; tag is its caller's */
	BX_QUEUED, /* it waits in its backend's queue (BACKEND_QUEUED) ... */
	BX_RUNNING, /* ... and now runs: from here it has its time to connect */
	BX_SETTLED, /* what was asked before bx_settle(owner) is done */
} bx_event_kind;

typedef struct bx bx;

typedef struct bx_event {
	bx_event_kind kind;
	bx *from;
	char owner[BX_OWNER_MAX];
	int err;
	char handle[BACKEND_HANDLE_MAX];
	int exit_code;
	char detail[512];
	cm_buf logs;
	void *tag;
} bx_event;

/* Receives each event (new, the receiver frees it with bx_event_free), on
 * the executor's thread: it must not block. */
typedef void (*bx_post_fn)(void *ctx, bx_event *ev);

/* Takes b (freed by bx_free). NULL when out of memory or threads. */
bx *bx_new(backend *b, bx_post_fn post, void *ctx);
/* Ends the thread once the operations queued before are done, then frees
 * the backend. What still runs keeps running (a gateway restart adopts it). */
void bx_free(bx *x);
const char *bx_name(const bx *x);
/* Whether its backend runs programs by their path (backend_ops.native). */
int bx_native(const bx *x);

/* Starts spec (copied, its secrets wiped after use) for owner: BX_STARTED,
 * then BX_EXITED once it ends. save_logs (or NULL): where its output is
 * copied when it ends, for a backend that keeps output itself (docker). */
int bx_run(bx *x, const char *owner, const backend_run_spec *spec, const char *save_logs);
/* Watches what a previous run left (a restart): BX_EXITED when it ends. */
int bx_adopt(bx *x, const char *owner, const char *handle);
/* Asks owner's run to stop (hard: kill it now); a stop of one still being
 * started applies once it started. */
int bx_stop(bx *x, const char *owner, int hard);
/* Forgets owner after its end, freeing what the backend kept (a container). */
int bx_release(bx *x, const char *owner);
/* Answered by BX_SETTLED for owner once every operation asked for before
 * it is done: a pool's DELETE answers after its containers were removed,
 * not merely asked to be. */
int bx_settle(bx *x, const char *owner);
/* The last max bytes owner wrote: from its backend while it runs, else from
 * log_path. Answered by BX_LOGS with tag. */
int bx_logs(bx *x, const char *owner, const char *log_path, size_t max, void *tag);
/* Stops (hard) and forgets every owner not among owners[n]: runs the engine
 * no longer knows (started in a cycle whose commit failed). */
int bx_retain(bx *x, char (*owners)[BX_OWNER_MAX], size_t n);

void bx_event_free(bx_event *ev);

#endif
