/*
 * engine: the one thread that owns the SQLite writer and the in-memory state
 * (pools, jobs, queues, workers). HTTP threads and the hub hand it requests;
 * it handles everything that arrived since its last cycle in ONE transaction
 * (group commit), and only after COMMIT does anyone get an answer. So a 2xx
 * reply, and a worker's acknowledgement, always mean "durably recorded".
 *
 * Most calls below block the calling HTTP thread until the engine answers
 * (one cycle, milliseconds). Calls that can wait long (a queue get, a
 * delete that waits for processes to end) are started instead and answer
 * through a callback. JSON outputs are new references owned by the caller.
 */
#ifndef GATEWAY_ENGINE_H
#define GATEWAY_ENGINE_H

#include <jansson.h>
#include <stdint.h>

#include "gateway/backend/backend.h"
#include "gateway/config.h"
#include "gateway/credentials.h"
#include "gateway/events.h"
#include "gateway/spec.h"

typedef struct engine engine;
typedef struct hub_slot hub_slot;

/* A call that answers later. Its *_start function hands it to the engine
 * and returns at once (NULL: out of memory, done never runs); done(ctx) then
 * runs exactly once, on the engine's thread or inside *_start when the
 * gateway is stopping, so it must not block. After it ran, the answer is
 * read with engine_call_finish, which frees the call. */
typedef struct op engine_call;
typedef void (*engine_call_done)(void *ctx);
int engine_call_finish(engine_call *c, json_t **out, char *detail, size_t detail_len);

#define ENGINE_BACKENDS_MAX 8

/* Opens the store, loads and recovers the state, restarts the workers of
 * live pools. creds (borrowed, outlives the engine) gets each worker's
 * secret for the hub. backends[n] are taken (freed by the engine, also on
 * failure); pools and processes name one of them, and "local" must be
 * among them. *out is new (engine_free). */
int engine_new(const gw_config *cfg, credentials *creds, backend *const *backends, size_t n, engine **out, char *detail,
               size_t detail_len);
int engine_start(engine *e);
/* Stops taking requests and wakes every long poll (they answer at once):
 * queue readers that wait are answered CM_ESHUTDOWN. */
void engine_quiesce(engine *e);
/* Stops the engine thread, every worker it started, and frees it all. */
void engine_free(engine *e);

/* Lists (GET /v1/pools and the like; jobs are paged by number apart): a
 * page at a time, newest first. A manager is not a pool, and each list
 * holds only its own kind; a pipe shows with its directions. */
typedef enum engine_list_kind {
	LIST_POOLS,
	LIST_MANAGERS,
	LIST_PROCESSES,
	LIST_RINGS,
	LIST_QUEUES,
	LIST_PIPES,
	LIST_LEASES,
} engine_list_kind;
typedef struct engine_list_page {
	unsigned states; /* a bit for each of engine_list_states(kind) shown (0: every state) */
	/* the cursor: what was made before the last item of the page before,
	 * its time and count (below_ms 0: from the newest) */
	int64_t below_ms;
	uint64_t below_seq;
	int limit;
} engine_list_page;
/* The list's name in its answer ("pools", ...) and the states its items
 * can be in (NULL-terminated; NULL: its items have none). */
const char *engine_list_name(engine_list_kind kind);
const char *const *engine_list_states(engine_list_kind kind);
/* {NAME: [...], "next_cursor": "MS.SEQ" or null}. */
int engine_list(engine *e, engine_list_kind kind, const engine_list_page *pg, json_t **out);

int engine_pool_create(engine *e, const pool_spec *spec, json_t **out, char *detail, size_t detail_len);
/* An external pool's join token ({token, pool, uses, expires_at}): good
 * for uses workers (0: the pool's processes) for ttl_s seconds. */
int engine_join_token(engine *e, const char *pool_id, int64_t uses, int64_t ttl_s, json_t **out, char *detail,
                      size_t detail_len);
/* A worker joins with a token: its identity ({worker, pool, secret, hub,
 * hub_ca_pem, hub_server_name, code, runtime}). CM_ENOENT: the token is
 * unknown, used up or expired; CM_ECLOSED: the pool has its workers. */
int engine_join(engine *e, const char *token, json_t **out, char *detail, size_t detail_len);
int engine_pool_get(engine *e, const char *id, json_t **out);
/* A reader of pool id's output asks for its lines after line after (GET
 * /v1/pools/{id}/logs); lease: the client lease it follows under, "" for
 * none. The follower of the program that made the pool (its lease) holds
 * the pool's workers back while it is a kept page of lines behind
 * (output.c). *missed: lines after after were trimmed before they were
 * read. CM_ENOENT: no such pool. */
int engine_pool_output_read(engine *e, const char *id, int64_t after, const char *lease, int *missed);
int engine_pool_close(engine *e, const char *id, json_t **out, char *detail, size_t detail_len);
/* Resizes the pool, or sets or ends its autoscale (scale.c): answers
 * at once with its new size; workers start or retire in the cycles after.
 * CM_ECLOSED: a manager, a pool that ends, or a size set on a pool that
 * autoscales; CM_EINVAL: a size out of its bounds. */
int engine_pool_patch(engine *e, const char *id, const pool_patch *patch, json_t **out, char *detail,
                      size_t detail_len);
/* Terminates the pool: answers once every worker process is gone. */
engine_call *engine_pool_delete_start(engine *e, const char *id, engine_call_done done, void *ctx);
/* Queues a map (or an apply: one argument), or returns the job idem_key
 * created before. Takes spec->function and spec->command on success (set to
 * NULL); the args stay the caller's. Answers once every argument is stored
 * (a slice a cycle); a job whose spec->total is above its arguments is
 * "submitting" until its parts bring the rest. */
int engine_map(engine *e, const char *pool_id, map_spec *spec, const char *idem_key, json_t **out, char *detail,
               size_t detail_len);
/* What the results endpoint needs to page a job from the store. */
typedef struct job_info {
	int64_t num;
	int64_t base;
	int64_t total;
	int64_t inputs_total; /* its tasks carry several inputs: how many in all (0: one each) */
	char pool[20]; /* the pool (or manager) the job runs on */
} job_info;
/* An apply that waits for its result (POST /v1/pools/{id}/apply?wait=S):
 * queued as engine_map does it, then answered by the engine itself once
 * the task's result is committed, or when wait_ms pass, the job ends
 * otherwise or the gateway stops; no long poll looks for it. spec and
 * idem_key stay the caller's until done runs. */
engine_call *engine_apply_start(engine *e, const char *pool_id, map_spec *spec, const char *idem_key, int64_t wait_ms,
                                engine_call_done done, void *ctx);
typedef struct engine_apply_answer {
	char id[20]; /* the job's */
	char *job; /* the job, as POST .../map answers it (202's body), len job_len */
	size_t job_len;
	char *item; /* its result as a results page item with "job" (len item_len), or NULL */
	size_t item_len;
	int info_ok; /* no item: the job's place in the store to look once (0: the job is gone) */
	job_info info;
} engine_apply_answer;
/* Reads a started apply's answer and frees the call; out's job and item
 * are the caller's. */
int engine_apply_finish(engine_call *c, engine_apply_answer *out, char *detail, size_t detail_len);
/* Stores the next part of a submitting job's arguments, at offset (its
 * 'received' so far). CM_ECLOSED: the job takes no part now, or not at that
 * offset (detail says why); a part stored before is answered as stored. */
int engine_job_args(engine *e, const char *job_id, int64_t offset, const spec_args *args, json_t **out, char *detail,
                    size_t detail_len);
int engine_job_get(engine *e, const char *id, json_t **out);
/* Jobs newest first: of pool (NULL: every pool, managers' calls left out),
 * in view state (NULL: any), numbered below cursor (a next_cursor; 0: from
 * the newest), at most limit: {"jobs": [...], "next_cursor": "N" | null},
 * as JSON text appended to page.
 * A call looks at JOB_LIST_SCAN jobs at most, so a page may be short with
 * a next_cursor; null once none is left. CM_ENOENT: no such pool. */
#define JOB_LIST_SCAN 20000
int engine_job_list(engine *e, const char *pool_id, const char *state, int64_t cursor, int limit, cm_buf *page);
/* A running job: cancelled, every task without a result failed
 * "cancelled"; *out its view. An ended one: removed (its tasks deleted in
 * the background); *out its last view, state "deleted". */
int engine_job_delete(engine *e, const char *id, json_t **out);
/* Cancels a running job as DELETE does; one that ended is left as it is
 * (CM_ECLOSED, detail saying so). */
int engine_job_cancel(engine *e, const char *id, json_t **out, char *detail, size_t detail_len);

/* Clients' leases: what a pool, manager or process made with "lease"
 * holds ends when the lease is deleted or not renewed for lease_ms (a
 * restarted gateway gives each its whole time again). renew's lease_ms 0
 * keeps the lease's own. CM_ENOENT: no such lease (ended). */
int engine_lease_create(engine *e, int64_t lease_ms, json_t **out, char *detail, size_t detail_len);
int engine_lease_renew(engine *e, const char *id, int64_t lease_ms, json_t **out, char *detail, size_t detail_len);
int engine_lease_get(engine *e, const char *id, json_t **out);
int engine_lease_delete(engine *e, const char *id, json_t **out);

/* SimpleQueues and Pipes. kind: "queue", "simplex" or "duplex" (a pipe of
 * one or two directions, queues "<pipe>.0" and "<pipe>.1"). Items are JSON
 * texts (borrowed). A queue get pops up to max items (past the first, at
 * most ENGINE_TAKE_BYTES of them), waiting up to wait_ms for the first;
 * each item goes to exactly one reader, and waiting readers are served in
 * arrival order.
 *
 * A get with a client's lease takes its items under a hold (answered as
 * "hold"): out of the queue for others, but stored until the client says
 * how many it used (engine_queue_release, or used_hold on its next get:
 * all of them), and back at the queue's head, in order, if the lease ends
 * first. Such a get takes more than one item only while no other reader
 * waits: a client reading ahead never keeps items from one waiting. */
#define ENGINE_TAKE_BYTES (8 << 20)
/* lease: the client lease the queue (or pipe) is deleted with, NULL or ""
 * for none. */
int engine_queue_create(engine *e, const char *kind, const char *lease, json_t **out, char *detail, size_t detail_len);
int engine_queue_info(engine *e, const char *id, json_t **out);
int engine_queue_delete(engine *e, const char *id, json_t **out);
/* pipe_end -1: id is a queue; 0 or 1: id is a pipe, and the engine picks
 * the queue of that end's direction (CM_ECLOSED if the end cannot do it). */
int engine_queue_put(engine *e, const char *id, int pipe_end, char *const *items, const size_t *lens, size_t n,
                     json_t **out, char *detail, size_t detail_len);
engine_call *engine_queue_get_start(engine *e, const char *id, int pipe_end, int64_t max, int64_t wait_ms,
                                    const char *lease, const char *used_hold, engine_call_done done, void *ctx);
/* Ends hold on queue id (or a pipe end's): its first `used` items are
 * gone, the others at the head again. CM_ENOENT: no such queue or hold. */
int engine_queue_release(engine *e, const char *id, int pipe_end, const char *hold, int64_t used, json_t **out,
                         char *detail, size_t detail_len);

/* Processes (multiprocessing.Process, `fiber run`): a program or one
 * function run once on a backend. Logs come back as a JSON string. DELETE
 * answers once the process has ended. */
int engine_process_start(engine *e, const process_spec *spec, json_t **out, char *detail, size_t detail_len);
int engine_process_get(engine *e, const char *id, json_t **out);
engine_call *engine_process_delete_start(engine *e, const char *id, engine_call_done done, void *ctx);
int engine_process_logs(engine *e, const char *id, json_t **out);

/* Rings: size member processes with RANK, WORLD_SIZE, MASTER_ADDR and
 * MASTER_PORT (a free port block the gateway reserved: by convention rank r
 * listens on MASTER_PORT + 1 + r). DELETE answers once all have ended. */
int engine_ring_start(engine *e, const process_spec *spec, int size, json_t **out, char *detail, size_t detail_len);
int engine_ring_get(engine *e, const char *id, json_t **out);
engine_call *engine_ring_delete_start(engine *e, const char *id, engine_call_done done, void *ctx);

/* The job's place in the store, to page its results. */
int engine_job_info(engine *e, const char *id, job_info *out);

/* GET /metrics' engine part (Prometheus text), appended to out. */
int engine_metrics(engine *e, cm_buf *out);
/* The last hour's samples over all pools (tasks done, queued and in hand,
 * workers connected), GET /v1/history's body. */
int engine_history(engine *e, json_t **out);

/* What changed, published after each commit (events.h): for GET
 * /v1/events. Lives as long as the engine. */
events *engine_events(engine *e);

/* Commit generations, for long polls: the generation moves on after each
 * cycle that changed the store, published events (or failed to commit);
 * the output's only after those that stored pools' output, so that a
 * program following its pool's output looks again only when there is
 * some, not at every task's result. on_commit(ctx, moved) runs on the
 * engine's thread after each move (moved: ENGINE_WATCH_OUTPUT when both
 * generations moved, ENGINE_WATCH_ANY when only the first did), and once
 * more at engine_quiesce (as both); it must not block. */
typedef enum engine_watch {
	ENGINE_WATCH_ANY, /* every such cycle */
	ENGINE_WATCH_OUTPUT, /* those that stored what pools' tasks printed (or failed to commit) */
} engine_watch;
uint64_t engine_generation(engine *e, engine_watch what);
int engine_closing(engine *e); /* engine_quiesce ran */
void engine_on_commit(engine *e, void (*on_commit)(void *ctx, engine_watch moved), void *ctx);

/* ---- workers, through the hub -------------------------------------------
 * The hub decodes each worker's frame and encodes the engine's answer: the
 * engine sees these plain structs only. A message handed to the engine stays
 * the hub's, valid until the engine answered its slot through the link. */

typedef struct engine_result {
	uint64_t task_id;
	int ok;
	const uint8_t *value; /* JSON text when ok, else the error (the hub checked both) */
	size_t len;
	uint32_t run_us; /* how long the function ran: sizes later batches */
	uint32_t attempt; /* the task's attempt this answers */
	int lost; /* its runtime died on it (value: how): an attempt lost */
	/* A failed task of several inputs: how many failed alone, the others
	 * done (its error says which); 0: all of them. */
	uint32_t failed_inputs;
} engine_result;

typedef struct engine_pull_msg {
	const char *worker_id, *pool_id;
	uint32_t want; /* more tasks it can take now */
	uint32_t in_hand; /* tasks it holds: queued, running, or done and not reported yet */
	uint32_t round_trip_us; /* its exchanges' time: batches cover it */
	const engine_result *results;
	size_t nresults;
	int resync; /* held lists every task it holds */
	const uint64_t *held;
	size_t nheld;
	uint64_t running_task; /* 0: none ... */
	uint32_t running_ms; /* ... and for how long: timeouts */
	/* What its tasks printed: noutput lines, each output_lens[i] bytes of
	 * output (one after another) on stream output_streams[i] (1 stdout,
	 * 2 stderr). */
	const uint8_t *output;
	const uint32_t *output_lens, *output_streams;
	size_t noutput;
	uint64_t output_first; /* the worker's number for the first line */
	int output_more; /* more lines wait in the worker: its pull is not parked */
} engine_pull_msg;

/* Consecutive tasks of one job in a batch: what they share (valid until
 * the answer is sent). */
typedef struct engine_run {
	const char *function;
	char *const *command; /* argv of "exec" tasks */
	size_t ncommand;
	uint32_t timeout_ms;
	uint64_t context_key; /* its job's context (0: none): */
	const char *context;
	size_t context_len;
	int ahead; /* of a small job: to run before what the worker holds */
	size_t count; /* its tasks: the next count of the batch's columns */
} engine_run;

typedef enum engine_batch_status {
	ENGINE_BATCH_OK,
	ENGINE_BATCH_REFUSED, /* unknown worker: it exits */
	ENGINE_BATCH_STOP, /* its pool ended: finish nothing more, exit */
	ENGINE_BATCH_RETRY, /* nothing was recorded: keep the results, ask again */
} engine_batch_status;

typedef struct engine_batch {
	engine_batch_status status;
	const char *error;
	const engine_run *runs;
	size_t nruns;
	/* The runs' tasks in order, a column a field, as the hub frames them: */
	const uint64_t *ids;
	const uint32_t *attempts; /* 1 on the first run */
	const uint32_t *arg_lens; /* each one's part of args */
	size_t ntasks;
	const uint8_t *args; /* the arguments' JSON texts, one after another ... */
	size_t args_len; /* ... so many bytes */
	uint32_t lease_ms;
	int list_held; /* it holds fewer than it was handed: list them next time */
	uint32_t parked_us; /* how long the pull waited for work (Batch.parked_us) */
	int queue_empty; /* nothing left queued in the pool after this batch */
} engine_batch;

typedef struct engine_queue_msg {
	const char *worker_id, *pool_id;
	int put; /* else a get, or ... */
	int size; /* ... how many items wait */
	const char *queue; /* a queue id, or a pipe id with pipe_end 0 or 1 */
	int pipe_end; /* -1: a queue */
	const uint8_t *const *items; /* put: JSON texts */
	const size_t *lens;
	size_t nitems;
	uint32_t max; /* get: at most this many ... */
	uint32_t wait_ms; /* ... waiting this long for the first */
} engine_queue_msg;

typedef struct engine_queue_reply {
	int ok;
	const char *error;
	char *const *items; /* get: JSON texts */
	const size_t *lens;
	size_t nitems;
	int64_t size; /* size: how many items wait */
} engine_queue_reply;

/* How the engine answers the hub, on the engine's thread: each pull or
 * queue call exactly once, by batch or queue_reply, or by drop (no answer:
 * the hub ends that connection; a worker that lives asks again). A slot
 * is where the answer goes: the connection the request came on. */
typedef struct engine_link {
	void *ctx;
	void (*batch)(void *ctx, hub_slot *slot, const engine_batch *b);
	void (*queue_reply)(void *ctx, hub_slot *slot, const engine_queue_reply *r);
	void (*drop)(void *ctx, hub_slot *slot);
} engine_link;

/* Set once, before the first pull (link is copied). */
void engine_set_link(engine *e, const engine_link *link);
/* A worker's pull or queue call. CM_OK: answered later through the link;
 * CM_ESHUTDOWN or CM_ENOMEM: not taken, the hub answers it. */
int engine_pull(engine *e, hub_slot *slot, const engine_pull_msg *m);
int engine_queue_call(engine *e, hub_slot *slot, const engine_queue_msg *m);

#endif
