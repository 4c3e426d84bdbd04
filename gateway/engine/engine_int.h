/*
 * The engine's inside, shared by its parts in gateway/engine/:
 *   requests.c   every way in from other threads (HTTP, hub, executors)
 *   engine.c     the cycle: take requests, handle them, commit, answer
 *   jobs.c       jobs, the task queue, pulls
 *   submit.c     jobs and their arguments in
 *   apply.c      applies that wait for their result
 *   pools.c      pools and workers, leases
 *   scale.c      pool sizes (PATCH, autoscale)
 *   costs.c      run times measured on a pool
 *   queues.c     queues and pipes
 *   processes.c  processes and rings
 *   client_leases.c  clients' leases on what they made
 *   lists.c      pages of pools, processes, queues, ...
 *   join.c       workers that join external pools
 *   output.c     what pools' tasks printed
 *   recovery.c   load, recover, reload
 *   item_views.c what clients see of jobs, pools, processes, ... (item_views.h)
 *   wait.c       waitlists
 *   events.c     what changed, for /v1/events
 *   metrics.c    for /metrics
 *   upkeep.c     retention, vacuum
 * Everything here but requests.c belongs to the engine thread; see engine.c
 * for the cycle and engine.h for the contract.
 */
#ifndef GATEWAY_ENGINE_ENGINE_INT_H
#define GATEWAY_ENGINE_ENGINE_INT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/executor.h"
#include "gateway/engine/engine.h"
#include "gateway/engine/id_table.h"
#include "gateway/engine/item_views.h"
#include "gateway/events.h"
#include "store/store.h"

#define TICK_MS 20
#define PARK_MS 1000
#define CONNECT_GRACE_MS 30000 /* a started worker must say hello by then */
#define TERM_GRACE_MS 2000 /* SIGTERM, then SIGKILL after this */
#define STOP_WAIT_MS 5000 /* at shutdown, how long past the grace ends are awaited */
#define STOP_ASKED_MS 1500 /* at shutdown, how long a worker told to stop has before a signal */
#define JOB_BUCKETS 16384
#define POOL_BUCKETS 4096
#define PROCESS_BUCKETS 4096
#define QUEUE_BUCKETS 4096
#define EXITED_KEPT 16 /* a pool's ended workers kept in its view, also across restarts */
/* A batch holds about this much work of its job beyond the first task, once
 * the job's task time is known: long tasks go one at a time, so none waits
 * in one worker's hands while another worker idles. */
#define BATCH_BUDGET_US 20000.0
#define ROUND_TRIP_MAX_US 1000000u /* what a worker's round trip may add to it */
/* ... and about this many bytes (arguments, contexts, commands), so that
 * its frame stays under PROTO_FRAME_MAX: one task always goes, and its
 * argument and its job's context are SPEC_INLINE_MAX (8 MiB) at most each. */
#define BATCH_BYTES_MAX (16u << 20)
/* A probe (the first task of a job whose cost is not known) goes first in
 * a batch, to a worker holding less than a batch's work; a pull from a
 * busier one passes over at most this many unprobed jobs to the work
 * behind. */
#define PROBE_SKIPS 8
/* A job of at most this many tasks is small (an apply, a manager's call, a
 * short map): a worker runs its tasks before those it holds, taking turns
 * with them, so it does not wait behind a large map's batch. */
#define SMALL_JOB_TASKS 64
/* While small jobs keep coming (one came within BESIDE_SMALL_MS, and some
 * are open), a large job's turn in a batch is at most BESIDE_SMALL_TURN
 * tasks (engine__assign). */
#define BESIDE_SMALL_MS 100
/* A job's tasks queued within this of its last range join it (one range a
 * part of a map sent in parts, not a range a task). */
#define QUEUE_JOIN_MS 10
#define BESIDE_SMALL_TURN 32
/* The functions a pool keeps a run time of (costs.c). */
#define POOL_COSTS 8
/* Tasks of a job being cancelled or removed handled per cycle: a few
 * milliseconds of the engine's time, so no request waits behind a large
 * job's cancellation or removal. */
#define CHORE_SLICE 2000
/* ... where the end of a chore (its job's row and results) counts as this
 * many tasks: a cycle ends at most about a hundred small jobs. */
#define CHORE_JOB_COST 20
/* ... and a removed job's result groups go this many a cycle (a group is
 * up to 4,096 results and 4 MiB). */
#define CHORE_GROUPS 4
/* Arguments stored per cycle (submit.c): some ten milliseconds of
 * the engine's time. */
#define FILL_SLICE 32768

typedef enum pool_state { POOL_ACTIVE, POOL_CLOSED, POOL_TERMINATING, POOL_TERMINATED, POOL_FAILED } pool_state;
static const char *const pool_state_names[] = {"active", "closed", "terminating", "terminated", "failed"};

typedef enum job_state { JOB_RUNNING, JOB_DONE, JOB_CANCELLED } job_state;
static const char *const job_state_names[] = {"running", "done", "cancelled"};

typedef enum worker_state { W_STARTING, W_CONNECTED, W_STOPPING, W_EXITED } worker_state;
static const char *const worker_state_names[] = {"starting", "connected", "stopping", "exited"};

typedef enum op_kind {
	OP_LIST,
	OP_JOIN_TOKEN,
	OP_JOIN,
	OP_POOL_CREATE,
	OP_POOL_GET,
	OP_POOL_OUTPUT_READ,
	OP_POOL_CLOSE,
	OP_POOL_PATCH,
	OP_POOL_DELETE,
	OP_MAP,
	OP_JOB_GET,
	OP_JOB_INFO,
	OP_JOB_LIST,
	OP_JOB_DELETE,
	OP_JOB_CANCEL,
	OP_JOB_ARGS,
	OP_PULL,
	OP_QUEUE_CREATE,
	OP_QUEUE_INFO,
	OP_QUEUE_DELETE,
	OP_QUEUE_PUT,
	OP_QUEUE_GET,
	OP_QUEUE_RELEASE,
	OP_PROC_START,
	OP_PROC_GET,
	OP_PROC_DELETE,
	OP_PROC_LOGS,
	OP_RING_START,
	OP_RING_GET,
	OP_RING_DELETE,
	OP_LEASE_CREATE,
	OP_LEASE_RENEW,
	OP_LEASE_GET,
	OP_LEASE_DELETE,
	OP_METRICS,
	OP_HISTORY,
	OP_BACKEND_EVENT, /* from an executor: something started, ended, or its logs */
} op_kind;

/* A time histogram for GET /metrics (metrics.c): counts per bucket
 * (not cumulative), their count and sum, in seconds. The engine's own
 * times (commits, cycles) have buckets of 0.1 ms to 1 s, tasks' (their run
 * time, their wait in the queue) of 1 ms to 1 h. */
#define HIST_BUCKETS 12
typedef enum hist_kind { HIST_ENGINE, HIST_TASKS } hist_kind;
typedef struct histogram {
	uint64_t le[HIST_BUCKETS];
	uint64_t count;
	double sum;
} histogram;

/* The last hour over all pools, for the dashboard's charts (history.c). */
#define HISTORY_EVERY_MS 10000
#define HISTORY_SAMPLES 360
typedef struct history_sample {
	int64_t at_ms; /* wall clock */
	int64_t done, queued, pending, workers;
} history_sample;
typedef struct history {
	history_sample ring[HISTORY_SAMPLES];
	int at, n; /* the next slot; how many are kept */
	int64_t next_ms; /* when the next is taken (cm_now_ms) */
} history;

struct pool;
struct job;
struct worker;

/* A request to the engine: what every kind has, then what its kind has. */
typedef struct op {
	op_kind kind;
	struct op *next; /* in the inbox, the ready list or one waitlist */
	const char *id; /* the resource it names (borrowed), or NULL */
	hub_slot *slot; /* from a worker: where the hub waits for the answer */
	/* a started call (engine_call) owns its id and answers by done_fn; a
	 * process or ring start keeps here what it waits for */
	char owned_id[64];
	engine_call_done done_fn;
	void *done_ctx;
	/* the answer */
	int err;
	char detail[256];
	json_t *out;
	int done;
	pthread_cond_t cv; /* a submitted call's caller waits on it */
	union {
		struct {
			const pool_spec *spec;
		} pool_create; /* OP_POOL_CREATE */
		const pool_patch *patch; /* OP_POOL_PATCH */
		struct {
			map_spec *spec;
			const char *idem_key;
			/* an apply that waits for its result until then (0: none,
			 * answered once its job is stored), apply.c */
			int64_t wait_until;
			struct job *job; /* while it waits: the job it waits on */
			int stored; /* its job was committed: answered with its result, or to look */
			job_info info; /* ... where to look (info_ok) */
			int info_ok;
			cm_buf item; /* its result, as engine_apply_answer's item */
			/* an apply's job, written as text (its 202's body), not as
			 * o->out: most applies are answered with their result and
			 * never show it (submit.c's answer_job) */
			char job_id[20];
			cm_buf view;
		} map; /* OP_MAP */
		struct {
			const spec_args *args;
			int64_t offset;
		} part; /* OP_JOB_ARGS */
		job_info info; /* OP_JOB_INFO's answer */
		struct {
			const char *state; /* a job's view state, or NULL: any */
			int64_t below; /* jobs numbered below this (0: from the newest) */
			int limit;
			/* the answer: the page's jobs copied, and the
			 * number of the last looked at (0: none left) */
			job_view *views;
			size_t nviews;
			int64_t last;
		} job_list; /* OP_JOB_LIST (id: the pool, or NULL: every pool) */
		struct {
			engine_list_kind kind;
			const engine_list_page *page;
			/* the answer: the page's items copied, and the
			 * next page's cursor ("": none) */
			item_view *views;
			size_t nviews;
			char next[48];
		} list; /* OP_LIST */
		struct {
			int64_t uses, ttl_s; /* OP_JOIN_TOKEN (id: the pool; uses 0: its processes) */
			const char *token; /* OP_JOIN */
		} join;
		struct {
			const char *kind; /* OP_QUEUE_CREATE: "queue", "simplex" or "duplex" */
			char *const *items; /* OP_QUEUE_PUT: JSON texts (borrowed, or owned_items) */
			const size_t *lens;
			size_t nitems;
			int64_t max; /* OP_QUEUE_GET: how many at most, waiting until deadline */
			int64_t deadline;
			/* OP_QUEUE_GET: taken under this client's lease ("": removed);
			 * OP_QUEUE_CREATE: the lease the queue goes with ("": none) */
			char lease[SPEC_LEASE_ID_MAX];
			char hold[48]; /* OP_QUEUE_GET: the lease's hold it used up ("": none); OP_QUEUE_RELEASE */
			int64_t used; /* OP_QUEUE_RELEASE: how many of the hold's first items were used */
			const char *pipe; /* on an end of this pipe (id unset) ... */
			int pipe_end;
			char qid[64]; /* ... resolved to the queue of its direction */
			const engine_queue_msg *call; /* from a worker: its call (the hub's) */
			int64_t size; /* a worker's OP_QUEUE_INFO: the answer, without a view */
			char **owned_items; /* ... whose items are checked and copied */
			size_t *owned_lens;
		} queue; /* OP_QUEUE_* */
		struct {
			const process_spec *spec;
			int ring_size;
		} proc; /* OP_PROC_START, OP_RING_START */
		struct {
			int64_t after;
			const char *lease;
			int missed; /* the answer: lines after after were trimmed */
		} output_read; /* OP_POOL_OUTPUT_READ */
		int64_t lease_ms; /* OP_LEASE_CREATE, OP_LEASE_RENEW (0: as it was) */
		struct {
			const engine_pull_msg *msg; /* the hub's */
			engine_batch batch; /* the answer */
			engine_run *runs;
			size_t nruns, cap_runs;
			/* the tasks' columns (engine_batch's) */
			uint64_t *ids;
			uint32_t *attempts, *arg_lens;
			size_t ntasks, cap_tasks;
			cm_buf args; /* copies of the tasks' arguments, one after another (one allocation a batch) */
			size_t bytes; /* what its tasks carry, counted against BATCH_BYTES_MAX */
			uint64_t last_context; /* the context its last task's run carries */
			int discard; /* answer nothing: the worker will ask again */
			double parked_at; /* cm_now_s() when parked (up to PARK_MS); 0: never */
		} pull; /* OP_PULL */
		bx_event *event; /* OP_BACKEND_EVENT (owned) */
	} u;
} op;

/* Requests waiting for something (wait.c): first come, first served. */
typedef struct waitlist {
	op *head, *tail;
} waitlist;
void waitlist_add(waitlist *w, op *o); /* at the tail */
op *waitlist_take(waitlist *w); /* the head, or NULL */
int waitlist_remove(waitlist *w, const op *o); /* 1 if o was in it */
size_t waitlist_count(const waitlist *w);
void waitlist_answer_all(engine *e, waitlist *w, int err, const char *detail); /* each readied with err */
void waitlist_drop_all(engine *e, waitlist *w); /* each answered now as not recorded */

/* Items a client took from a queue under its lease and has not yet said
 * it used (queues.c): they are back at the queue's head if the lease ends
 * first. Its id is "<lease>.<its own>". */
typedef struct queue_hold {
	char id[48];
	int64_t n, bytes;
	struct queue_hold *next;
} queue_hold;

/* A reader of a queue dealt in turns (queue_turns.c): a client's lease, a
 * worker's or a process's id, or "" for the readers that name none; and
 * how many of the queue's items are dealt to it, not yet taken. */
typedef struct queue_reader {
	char id[48];
	int64_t dealt;
} queue_reader;

/* How a "turns" queue deals its items (queue_turns.c); memory only: after
 * a restart every item is undealt until its readers ask again. */
typedef struct queue_turns {
	queue_reader *readers; /* in the order they first asked */
	size_t n, cap;
	/* readers by id: 2 * cap entries, each a reader's index + 1 or 0 (a
	 * take looks its reader up, as each reader waiting does at a put) */
	uint32_t *index;
	size_t next; /* whose turn the next item is */
	int64_t undealt; /* anyone's: no reader had room (or none had asked) */
} queue_turns;

/* A SimpleQueue, or one direction of a Pipe. Its items live in the store;
 * memory holds the count and the readers waiting: first come first served
 * (kind "queue" and the pipes), or, in a queue of kind "turns", items
 * dealt to its readers in turn, as Fiber's SimpleQueuePush does. */
typedef struct queue {
	char id[48];
	char kind[16]; /* "queue", "turns", "simplex" or "duplex" */
	int64_t size; /* items there to take (not held) */
	queue_hold *holds;
	int64_t bytes; /* all its items' */
	int64_t created_ms;
	uint64_t seq; /* when made, in the engine's count (lists.c) */
	waitlist getters;
	queue_turns *turns; /* kind "turns" only */
	char lease[SPEC_LEASE_ID_MAX]; /* the client lease it is deleted with, "" for none */
	struct queue *next;
	id_link by_id; /* in e->queue_ids */
} queue;

/* Whether q is a direction of a pipe, not a SimpleQueue. */
static inline int engine__queue_is_pipe(const queue *q)
{
	return strcmp(q->kind, "simplex") == 0 || strcmp(q->kind, "duplex") == 0;
}

/* A client's lease (client_leases.c; not a worker's lease on its tasks):
 * the pools, managers and processes made with it are terminated when it is
 * deleted or not renewed for lease_ms. */
typedef struct client_lease {
	char id[20];
	int64_t lease_ms;
	int64_t expires; /* monotonic ms */
	int64_t created_ms; /* wall clock */
	uint64_t seq; /* when made, in the engine's count (lists.c) */
	struct client_lease *next;
} client_lease;

/* A join token of an external pool (join.c), known by its SHA-256. */
typedef struct join_token {
	char hash[CREDENTIALS_HASH_LEN + 1];
	char pool[20];
	int64_t expires_ms; /* wall clock */
	int64_t uses; /* workers it still lets join */
	struct join_token *next;
} join_token;

/* A Process: one program or one function run once, on any backend. */
typedef enum proc_state { PR_RUNNING, PR_EXITED, PR_FAILED } proc_state;
static const char *const proc_state_names[] = {"running", "exited", "failed"};

typedef struct process {
	char id[20];
	bx *backend;
	char handle[BACKEND_HANDLE_MAX]; /* "" until its backend started it */
	proc_state state;
	int exit_code;
	int terminated; /* ended by DELETE */
	int stop_sent; /* the strongest stop sent: 0 none, 1 soft, 2 hard */
	int adopted; /* found running at start: its exit code may be lost */
	/* The SHA-256 of a function's own hub secret (its queue and pipe
	 * calls); "" for a program, which gets none. */
	char secret_hash[CREDENTIALS_HASH_LEN + 1];
	char reason[512];
	char *spec_json;
	char log_path[1100]; /* its output, kept after it ends */
	char lease[20]; /* the lease it ends with, "" for none */
	int64_t created_ms, ended_ms, kill_at;
	uint64_t seq; /* when made, in the engine's count (lists.c) */
	waitlist waiters; /* DELETEs waiting for it to end */
	struct process *next;
	id_link by_id; /* in e->process_ids */
} process;

/* A Ring: size processes that find each other through MASTER_ADDR and
 * MASTER_PORT (torch.distributed's env:// names). */
typedef struct ring {
	char id[20];
	int size;
	int master_port;
	char members[SPEC_MAX_RING][20];
	int64_t created_ms;
	uint64_t seq; /* when made, in the engine's count (lists.c) */
	waitlist waiters; /* DELETEs waiting for every member to end */
	struct ring *next;
} ring;

typedef struct range {
	int64_t lo, hi;
	int64_t queued_ms; /* when its tasks were queued (cm_now_ms), for their wait */
	struct job *job;
	struct range *next;
} range;

/* A job's context (JSON text). Retired when its job ends, freed after that
 * cycle's answers (a batch answered in the cycle may still point at it). */
typedef struct job_context {
	struct job_context *next; /* in e->retired */
	size_t len;
	char text[];
} job_context;

typedef struct job {
	char id[20];
	int64_t num, base, total, done, failed;
	int64_t received; /* tasks whose arguments are in; below total while parts come */
	struct fill *filling; /* the request whose arguments go in now, or NULL */
	int chunksize;
	unsigned timeout_ms;
	double avg_us; /* moving average of task run time; < 0: not known yet */
	int max_attempts;
	int retry_errors;
	char *function;
	char *name; /* what people call it, or NULL */
	/* Tasks that carry several inputs (a map's chunks): each task's count
	 * (NULL for an ended job, which needs no more), the inputs in all
	 * (0: one a task) and those done (failed included) and failed. */
	uint32_t *inputs;
	int64_t inputs_total, inputs_done, inputs_failed;
	int64_t inputs_received; /* of inputs_total, those of the tasks received */
	char **command;
	size_t ncommand;
	struct job_context *context; /* while it runs: given to the runtime with each task; NULL: none */
	job_state state;
	int64_t created_ms;
	int64_t ended_ms; /* when it ended, wall clock (--retain counts from it); 0 while it runs */
	struct pool *pool;
	id_link by_id; /* in e->jobs */
	int waiters; /* applies in e->applies waiting for its result */
	/* Its progress is to be said (events.c): listed in
	 * e->progressed, no sooner than progress_at. */
	struct job *progress_next, **progress_pprev;
	int64_t progress_at;
} job;

typedef struct worker {
	char id[20];
	struct pool *pool;
	char handle[BACKEND_HANDLE_MAX]; /* pid, container id; "" until started */
	worker_state state;
	int stop_sent; /* the strongest stop sent: 0 none, 1 soft, 2 hard */
	int told_stop; /* its pull was answered "stop" at the gateway's stop: it ends by itself */
	int exit_code;
	int64_t started, last_seen;
	int64_t pending; /* tasks handed out and not yet reported */
	int adopted; /* found alive at start: it must reconnect within two leases */
	int queued; /* its backend's queue holds it (a batch job waiting for room): no time to connect runs */
	/* The pool shrinks: it takes no new task, and is told to stop once it
	 * holds none (scale.c). */
	int retiring;
	int64_t idle_since; /* since when its pulls found nothing to do; 0 while it has work */
	char secret_hash[CREDENTIALS_HASH_LEN + 1]; /* of its own secret, presented in every frame */
	waitlist parked; /* its pull, while there is nothing to hand out (one at most) */
	int shown; /* what its last event said (events.c) */
	char last_words[512]; /* once ended: what its container or pod last wrote ("" for none) */
	uint64_t output_next; /* the number of the next line of output it sends (output.c) */
	struct worker *next;
} worker;

/* A function's measured run time on a pool; used: when last measured or
 * asked for (0: an empty slot). */
typedef struct function_cost {
	char function[64];
	double us;
	uint64_t used;
} function_cost;

typedef struct pool {
	char id[20];
	pool_spec spec;
	bx *backend;
	char last_words[256]; /* what the last worker that died said */
	/* Run times measured on this pool (costs.c): over all its
	 * results, and by function for the POOL_COSTS used last. */
	double est_us;
	int est_known;
	function_cost costs[POOL_COSTS];
	uint64_t costs_clock;
	histogram run_time, queue_wait; /* its tasks' (GET /metrics), since this start */
	pool_state state;
	char reason[512];
	int64_t created_ms;
	uint64_t seq; /* when made, in the engine's count (lists.c) */
	worker *workers;
	/* Its jobs by base (the order they were made in): a task's job is
	 * found by binary search (a pool that ran a million applies has a
	 * million jobs). */
	job **jobs;
	size_t njobs, jobs_cap;
	job *last_job; /* the last found: most results are of one job */
	range *qhead, *qtail;
	int64_t queued;
	int64_t open_jobs;
	int64_t tasks_done, tasks_failed, workers_started, workers_lost;
	int64_t tasks_submitted, tasks_retried; /* since this start (GET /metrics) */
	int fail_streak; /* workers that exited without ever connecting */
	int fail_exit_code; /* the last of them's */
	int64_t output_lines; /* its lines of output stored (output.c) */
	int64_t output_last; /* the number of its last line stored, 0 for none: an apply's answer says it */
	/* How far the program that made it read its output, and when it last
	 * asked (output.c): its workers wait for it a kept page behind. */
	int64_t output_read, output_read_ms;
	int64_t output_gone; /* the number of its newest line trimmed since this start, 0: none */
	char scale_reason[200]; /* autoscale's last decision, and why */
	int64_t scale_next; /* when autoscale looks again */
	int64_t open_small; /* of open_jobs, the small ones (SMALL_JOB_TASKS) */
	int64_t small_at; /* when a small job last came (cm_now_ms) */
	int64_t kill_at; /* while terminating: SIGKILL the rest then */
	int64_t ended_ms; /* when it was terminated or failed (wall clock; --retain counts from here) */
	int deleted; /* in e->deleted_pools: its jobs are found by no request */
	int settling; /* terminating, every worker ended: waits for BX_SETTLED */
	waitlist delete_waiters;
	int shown; /* what its last event said (events.c) */
	struct pool *next;
	id_link by_id; /* in e->pool_ids */
	/* In e->ticked while a cycle has anything to do for it: every pool
	 * but an ended one whose workers all exited and were said (pools.c). */
	struct pool *ticked_next;
	int ticked;
} pool;

struct engine {
	const gw_config *cfg;
	credentials *creds; /* shared with the hub */
	cm_buf hub_ca; /* tls+tcp:// hub: the CA (PEM) its workers trust; empty otherwise */
	store *st;
	pthread_t thread;
	int started;

	pthread_mutex_t mu; /* guards the fields up to on_commit_ctx */
	pthread_cond_t wake;
	op *inbox;
	atomic_uint posts; /* pushes to the inbox so far: what a spinning engine watches without the mutex */
	int stopping;
	int closing;
	uint64_t gen;
	uint64_t output_gen; /* gen when a cycle last stored output */
	void (*on_commit)(void *ctx, engine_watch moved);
	void *on_commit_ctx;

	/* engine thread only */
	int output_stored; /* this cycle stored pools' output */
	pool *pools;
	/* The pools of e->pools by id; and those each cycle ticks. Ended pools
	 * stay for --retain (a week unless told): a gateway that ran
	 * thousands of programs looked through them all at every request
	 * and every cycle. */
	id_link *pool_ids[POOL_BUCKETS];
	pool *ticked;
	/* Pools deleted (DELETE of an ended one, or --retain): in no view and
	 * found by no request, their jobs removed a few a cycle, then freed. */
	pool *deleted_pools;
	queue *queues;
	id_link *queue_ids[QUEUE_BUCKETS]; /* e->queues by id: every put and take finds its queue */
	int64_t queue_bytes; /* of the items all queues hold (quotas.c) */
	process *processes;
	/* Ended processes stay for --retain too: found by id through these,
	 * and looked over for a SIGKILL only when one is due. */
	id_link *process_ids[PROCESS_BUCKETS];
	int64_t process_kill_due;
	ring *rings;
	client_lease *client_leases;
	join_token *join_tokens;
	int64_t join_tokens_looked; /* when the tokens were last looked over (monotonic ms) */
	uint64_t made; /* pools, processes, rings, queues and leases made or loaded: their seq */
	id_link *jobs[JOB_BUCKETS];
	op *ready;
	job_context *retired; /* contexts of jobs that ended this cycle: freed after its answers */
	struct chore *chores; /* cancellations and removals under way, a slice a cycle */
	struct fill *fills, **fills_tail; /* requests whose arguments go in, a slice a cycle, oldest first */
	int64_t last_cycle; /* when the last cycle began: a long gap is a stall */
	int64_t changes; /* the store's change count when the generation last moved */
	int64_t next_job, next_task;
	int64_t next_sweep, next_vacuum; /* when upkeep looks again (upkeep.c) */
	bx *backends[ENGINE_BACKENDS_MAX]; /* one executor per backend */
	size_t nbackends;
	bx *local; /* the local backend's, which runs functions of processes */
	engine_link link; /* answers to the hub */
	waitlist log_reads; /* OP_PROC_LOGS waiting for their backend */
	waitlist starts; /* OP_PROC_START and OP_RING_START waiting for their backend */
	waitlist applies; /* applies waiting for their result (apply.c) */
	events *events; /* what changed, for GET /v1/events (events.c) */
	events_batch event_batch; /* this cycle's, published after its commit */
	cm_buf job_text; /* a job's view, written for its event (used again) */
	int events_watched; /* somebody reads them: progress is said too */
	job *progressed; /* jobs whose progress is to be said */
	histogram commit_time, cycle_time; /* GET /metrics */
	history history; /* GET /v1/history */
};

/* ---- shared by the engine's files --------------------------------------- */

/* engine.c: the cycle */
void engine__ready(engine *e, op *o); /* answer o after this cycle's commit */
void engine__answer(engine *e, op *o, int committed); /* answer o now */
void engine__iso_time(int64_t ms, char out[32]);
bx *engine__backend_for(engine *e, const char *name);
pool *engine__pool_find(engine *e, const char *id);
/* requests.c */
void engine__post_backend_event(void *ctx, bx_event *ev); /* an executor's: see bx_post_fn */

/* jobs.c: jobs, the task queue, pulls */
job *engine__job_find(engine *e, const char *id);
int engine__job_reserve(pool *p); /* room for one more job in p: before anything of it is stored */
void engine__job_attach(engine *e, pool *p, job *j); /* to its pool (in base order) and the id index */
void engine__job_opened(job *j); /* counted among its pool's open jobs, until it ends */
job_context *engine__context_new(const void *text, size_t len); /* NULL: out of memory */
void engine__contexts_free(job_context *c); /* c and those after it */
int engine__queue_push(pool *p, job *j, int64_t lo, int64_t hi, int front); /* tasks lo..hi to the pool's queue */
void engine__queue_clear(pool *p);
void engine__pool_cancel_jobs(engine *e, pool *p, const char *why); /* every open job: missing results fail */
void engine__handle_job_delete(engine *e, op *o); /* cancels a running job, removes an ended one */
void engine__handle_job_cancel(engine *e, op *o); /* cancels a running job; an ended one stays */
void engine__handle_job_list(engine *e, op *o);
int engine__job_remove(engine *e, job *j); /* an ended job: gone from every view, its tasks doomed */
/* Removes up to max of p's jobs that ended at or before cutoff (wall
 * clock); returns how many, or max when it had to stop. */
int engine__jobs_remove_ended(engine *e, pool *p, int64_t cutoff, int max);
void engine__job_free(job *j);
/* Chores, a slice a cycle (engine__chores_step): a removed job's tasks, ids
 * lo..hi, to delete; a cancelled job's missing results to fill with why. */
int engine__doom(engine *e, int64_t num, int64_t lo, int64_t hi);
int engine__cancel_rest(engine *e, job *j, const char *why);
void engine__chores_step(engine *e);
void engine__chores_clear(engine *e);
void engine__requeue_worker(engine *e, pool *p, const char *worker_id, int exit_code); /* its tasks: queue front */
/* Tasks into o's batch (round_trip_us: the worker's, engine_pull_msg). */
void engine__assign(engine *e, pool *p, worker *w, uint32_t want, uint32_t in_hand, uint32_t round_trip_us, op *o);
void engine__pull_finish(engine *e, op *o, engine_batch_status status, const char *error);
int engine__pool_drained(const pool *p); /* nothing queued, no job open */
/* costs.c: run times measured on a pool. A moving average's next
 * value: recent tasks count most, without one odd task swinging it. */
#define COST_WEIGHT 0.2
double engine__cost_average(double avg, double run_us);
double engine__function_cost(pool *p, const char *function); /* < 0: not measured here lately */
void engine__function_measured(pool *p, const char *function, double us);
void engine__pool_measured(pool *p, double run_us);
void engine__handle_pull(engine *e, op *o);
void engine__job_check_done(engine *e, job *j); /* a running job with every result: done */

/* submit.c: jobs and their arguments in, a slice a cycle */
typedef struct fill fill;
void engine__handle_map(engine *e, op *o);
void engine__handle_job_args(engine *e, op *o); /* the next part of a job's arguments */
void engine__fill_step(engine *e); /* up to FILL_SLICE arguments into the store and the queue */
void engine__fill_abort(engine *e, job *j, const char *why); /* j's fill, if any, answered 409 with why */
void engine__fills_drop(engine *e); /* every fill, answered as not recorded (a reload) */

/* apply.c: applies that wait for their result */
/* From engine__answer: 1 when o, an apply whose job was just committed,
 * now waits for its result; else o is answered (committed: whether its
 * answer may carry a result recorded in this cycle). */
int engine__apply_settle(engine *e, op *o, int committed);
/* A result of j recorded this cycle: its waiting applies get it. */
void engine__applies_result(engine *e, job *j, int64_t index, int ok, const void *value, size_t len);
void engine__applies_end(engine *e, job *j); /* j ended: its waiting applies look once */
void engine__applies_tick(engine *e, int64_t now); /* past their wait: they look once */
void engine__applies_quiesce(engine *e); /* the gateway stops: each looks once */

/* events.c: what changed, said after the commit */
void engine__event_job(engine *e, const job *j); /* made (answered), done or cancelled */
/* The same with j's view written into e->job_text already. */
void engine__event_job_written(engine *e, const job *j);
void engine__event_job_removed(engine *e, const job *j);
void engine__event_pool_removed(engine *e, const pool *p);
void engine__event_process(engine *e, const process *pr); /* started, failed or ended */
void engine__job_progressed(engine *e, job *j); /* a result of j was recorded */
void engine__job_unlist(job *j); /* j is freed: its progress is not said */
/* Pools and workers that changed; progress that is due. */
void engine__events_tick(engine *e, int64_t now);
/* Whether p's state and its workers' were all said. */
int engine__events_said(const pool *p);
/* Published (returns how many), or dropped with the cycle. */
size_t engine__events_end_cycle(engine *e, int committed);

/* metrics.c: GET /metrics */
void engine__observe(histogram *h, double seconds); /* HIST_ENGINE */
void engine__observe_tasks(histogram *h, double seconds, uint64_t n); /* HIST_TASKS: n tasks so */
void engine__handle_metrics(engine *e, op *o);

/* history.c: GET /v1/history */
void engine__history_tick(engine *e, int64_t now);
void engine__handle_history(engine *e, op *o);

/* upkeep.c: ended jobs past --retain removed, freed pages given back */
void engine__upkeep(engine *e, int64_t now);

/* pools.c: pools and workers */
void engine__pool_set_state(engine *e, pool *p, pool_state s, const char *reason);
void engine__worker_stop(pool *p, worker *w, int hard); /* once per strength */
/* The environment strand-worker reaches the hub with, as id of pool_id (a
 * worker; or a process running a function, its own id as both), and the
 * code package it fetches from there (code: its SHA-256, "" for none): at
 * most ENGINE_HUB_ENV entries of env_text, and *ca (a certificate chain;
 * free it), pointed to from envp. Returns how many of envp it filled. */
#define ENGINE_HUB_ENV 6
/* quotas.c: CM_OK, or CM_EQUOTA with detail naming the quota. A pool or
 * manager to make (resizing NULL) or resizing to next; processes to start;
 * a queue or a pipe to make; bytes of items to put; a lease to make. */
int engine__quota_pool(engine *e, const pool *resizing, const pool_spec *next, char *detail, size_t detail_len);
int engine__quota_processes(engine *e, int adding, char *detail, size_t detail_len);
int engine__quota_queue(engine *e, int pipe, char *detail, size_t detail_len);
int engine__quota_queue_bytes(engine *e, int64_t adding, char *detail, size_t detail_len);
int engine__quota_lease(engine *e, char *detail, size_t detail_len);

size_t engine__hub_env(engine *e, const char *pool_id, const char *id, const char *secret, const char *code,
                       char env_text[][600], char **envp, char **ca);
worker *engine__worker_find(engine *e, const char *owner, pool **pool_out);
void engine__worker_started(engine *e, pool *p, worker *w, const bx_event *ev); /* its backend answered */
void engine__worker_queued(worker *w, int queued); /* it waits in its backend's queue, or runs now */
void engine__worker_gone(engine *e, worker *w, int exit_code, const char *last_words);
void engine__handle_pool_create(engine *e, op *o);
void engine__handle_pool_close(engine *e, op *o);
void engine__handle_pool_delete(engine *e, op *o);
/* Terminates p as DELETE does, answering no one (a client's lease ended). */
void engine__pool_terminate(engine *e, pool *p);
/* An ended pool leaves e->pools for e->deleted_pools, "deleted" stored. */
int engine__pool_delete(engine *e, pool *p, const char *why);
/* Removes what a few deleted pools hold, up to max jobs; returns how many. */
int engine__deleted_pools_step(engine *e, int max);
/* The pool of a stored job, deleted ones included (recovery). */
pool *engine__pool_find_any(engine *e, const char *id);
void engine__pool_free(engine *e, pool *p);
void engine__pool_link(engine *e, pool *p);
void engine__pool_tick_again(engine *e, pool *p);
void engine__tick_pools(engine *e, int64_t now);
/* Its backend removed what its ended workers left (BX_SETTLED). */
void engine__pool_settled(engine *e, const char *pool_id);
void engine__tick_pool(engine *e, pool *p, int64_t now); /* leases, parked pulls, terminations, replacements */

/* scale.c: pool sizes (PATCH, autoscale) */
void engine__handle_pool_patch(engine *e, op *o);
/* Autoscale's choice, then workers started or retired toward p's size. */
void engine__pool_converge(engine *e, pool *p, int64_t now);
int engine__worker_spawn(engine *e, pool *p); /* pools.c: one more worker, starting */

/* recovery.c: load, recover, reload */
int engine__recover(engine *e, char *detail, size_t detail_len);
int engine__reload(engine *e); /* after a failed commit: memory from the store again */
void engine__state_clear(engine *e); /* frees pools, jobs, workers; what waits is answered as not recorded */
void engine__forgive_stall(engine *e, int64_t now);

/* item_views.c: views of jobs, pools, processes, rings, queues, pipes and
 * leases copied (item_views.h), and the JSON of one made at once */
/* What a job's view counts: its inputs when its tasks carry several, else
 * its tasks. */
typedef struct job_counts {
	int64_t total, done, failed;
} job_counts;
job_counts engine__job_counts(const job *j);
const char *engine__job_state(const job *j); /* submitting, running, done or cancelled */
/* The job's view, its function and name the job's own (for use at once);
 * _keep copies them so that the view outlives the job's next change. */
void engine__job_view(job_view *v, const job *j);
int engine__job_view_keep(job_view *v);
/* A job as the API shows it: as JSON text into out (replacing what it
 * held; the events write it so), or as a value. */
int engine__job_text(const job *j, cm_buf *out);
json_t *engine__job_json(const job *j);
int engine__pool_view(pool_view *v, const pool *p);
int engine__process_view(process_view *v, const process *pr);
/* members: the ring's processes by rank, NULL for one gone */
int engine__ring_view(ring_view *v, const ring *r, const process *const *members);
const char *engine__ring_state_of(const ring *r, const process *const *members); /* running, done or failed */
void engine__queue_view(queue_view *v, const queue *q);
void engine__pipe_view(pipe_view *v, const queue *q0, const queue *q1); /* q1: a duplex pipe's way back */
/* A lease's own fields; then what it holds, offered one by one (taken if
 * still running). */
void engine__lease_view(lease_view *v, const client_lease *l, int ended);
int engine__lease_view_pool(lease_view *v, const pool *p);
int engine__lease_view_process(lease_view *v, const process *pr);
int engine__lease_view_queue(lease_view *v, const queue *q); /* a queue, or a pipe's direction */
json_t *engine__pool_json(const pool *p);
json_t *engine__process_json(const process *pr);
json_t *engine__ring_json(const ring *r, const process *const *members);
json_t *engine__queue_json(const queue *q);
json_t *engine__lease_json(engine *e, const client_lease *l, int ended);

/* join.c: external pools' join tokens, and the workers that join */
void engine__handle_join(engine *e, op *o);
void engine__load_join_token(void *ctx, const char *hash, const char *pool_id, int64_t expires_ms, int64_t uses);
void engine__tick_join_tokens(engine *e, int64_t now); /* once a second at most */
void engine__join_tokens_clear(engine *e);

/* lists.c: a page of pools, processes, queues, ... (OP_LIST): copied on
 * the engine thread, its JSON made by the thread that asked (which frees
 * the views) */
void engine__handle_list(engine *e, op *o);
json_t *engine__list_json(op *o);

/* queues.c */
void engine__handle_queue(engine *e, op *o);
void engine__queue_tick(engine *e, queue *q, int64_t now);
void engine__answer_queue_call(engine *e, op *o, int committed);
void engine__load_queue(void *ctx, const char *id, const char *kind, int64_t created_ms, int64_t size, int64_t bytes,
                        const char *lease);
/* Deletes the queues and pipes made with client lease id (as it ends). */
void engine__queues_of_lease_end(engine *e, const char *id);
void engine__queues_clear(engine *e);
void engine__load_queue_hold(void *ctx, const char *queue, const char *hold, int64_t n, int64_t bytes);
/* The holds of a client's lease that ended go back to their queues. */
void engine__queue_holds_end(engine *e, const char *lease);
/* At start, once leases are loaded: holds of leases gone go back too. */
void engine__queue_holds_settle(engine *e);
void engine__queues_quiesce(engine *e); /* answers every waiting reader CM_ESHUTDOWN */
/* A lease, worker or process ended: it reads no queue in turns any more;
 * what was dealt to it is dealt to the others. */
void engine__queue_reader_gone(engine *e, const char *reader);

/* queue_turns.c: the readers of a queue of kind "turns" and the items
 * dealt to each. Items are taken from the queue's head in order; what is
 * dealt is how many each reader may take. */
#define TURNS_READERS_MAX 4096 /* readers of one queue */
#define TURNS_DEALT_MAX 4096 /* items dealt to one reader and not taken: its share waits at most this many */
queue_turns *turns_new(void);
void turns_free(queue_turns *t);
/* Adds reader (if new). CM_EQUOTA: the queue has TURNS_READERS_MAX. */
int turns_join(queue_turns *t, const char *reader);
/* n more items to deal: each to the next reader in turn with room; those
 * no reader has room for are anyone's. */
void turns_deal(queue_turns *t, int64_t n);
/* How many items reader may take now: its own and the undealt. */
int64_t turns_allowance(const queue_turns *t, const char *reader);
/* reader took n (at most its allowance): its own first. */
void turns_took(queue_turns *t, const char *reader, int64_t n);
/* reader is gone: its items are dealt to the others. Whether it was one. */
int turns_leave(queue_turns *t, const char *reader);

/* processes.c */
void engine__handle_process(engine *e, op *o);
void engine__handle_ring(engine *e, op *o);
void engine__tick_processes(engine *e, int64_t now);
void engine__tick_rings(engine *e);
void engine__load_process(void *ctx, const store_process *sp);
/* Whether id is a running process that runs a function, calling as its own
 * pool (pool_id == id): it may use queues and pipes. */
int engine__process_may_call(engine *e, const char *id, const char *pool_id);
/* A backend event about a process (owner: its id); 0 when none has that id. */
int engine__process_event(engine *e, bx_event *ev);
void engine__load_ring(void *ctx, const char *id, int size, int master_port, const char *members, int64_t created_ms);
void engine__processes_clear(engine *e);
/* Removes up to max ended processes and rings (a ring with its members)
 * that ended before cutoff; returns how many. */
int engine__processes_remove_ended(engine *e, int64_t cutoff, int max);
/* At shutdown: asks every running process to stop (hard: kill); returns how
 * many still run. */
int engine__processes_stop(engine *e, int hard);
/* Owners of what runs on x (running processes), appended to owners[*n]. */
void engine__processes_owners(engine *e, bx *x, char (*owners)[BX_OWNER_MAX], size_t *n);
size_t engine__processes_count(engine *e);
/* Terminates pr as DELETE does, answering no one (a client's lease ended). */
void engine__process_terminate(engine *e, process *pr);

/* output.c: lines of output kept per pool */
#define OUTPUT_KEPT 10000
void engine__pool_output(engine *e, pool *p, worker *w, const engine_pull_msg *m);
/* Whether the lines m brings would push out of the kept ones lines the
 * program that made p has not read while it follows them: the worker
 * keeps them, and the results after them, and asks again. */
int engine__pool_output_held_back(const pool *p, const worker *w, const engine_pull_msg *m, int64_t now);
void engine__pool_output_read(engine *e, op *o);
void engine__load_output_count(void *ctx, const char *pool_id, int64_t lines, int64_t last);

/* client_leases.c */
void engine__handle_client_lease(engine *e, op *o);
/* Whether id is a client lease that runs (pools and processes may name it). */
int engine__client_lease_known(engine *e, const char *id);
/* Whether lease is named and is not one that runs: o refused, saying so. */
int engine__client_lease_missing(engine *e, const char *lease, op *o);
/* Ends the leases whose time ran out, with what they hold. */
void engine__tick_client_leases(engine *e, int64_t now);
void engine__load_client_lease(void *ctx, const char *id, int64_t lease_ms, int64_t created_ms);
void engine__client_leases_clear(engine *e);

#endif
