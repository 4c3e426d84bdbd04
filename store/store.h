/*
 * store: the SQLite schema and every query strand makes.
 *
 * A task is QUEUED, PENDING (held by a worker) or DONE (with a per-job
 * completion sequence number); its state, its argument and its result are
 * kept by chunks of contiguous tasks (store_tasks.c), so that SQLite's cost
 * is paid per chunk, not per task. A task id is a global integer and a job
 * owns the contiguous block [base, base + total): task index = id - base,
 * so input order is a range scan and the queue can be kept as ranges.
 *
 * One writer connection (the gateway's engine thread) groups many changes in
 * one transaction; readers (HTTP threads) take read-only connections from a
 * small pool and, in WAL mode, see only what was committed. That is what
 * makes "a result is committed before it is served" hold without locks.
 *
 * Not here: any policy (retries, leases, scheduling). Those live in the
 * gateway's engine; the store only records.
 */
#ifndef STORE_STORE_H
#define STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

enum { STORE_QUEUED = 0, STORE_PENDING = 1, STORE_DONE = 2 };

typedef struct store store;

/* Opens (and on first use creates) the database at path. A writer
 * (STORE_WRITER) runs the schema migration and refuses a database that was
 * not closed cleanly and whose write-ahead log is gone (what it committed
 * last would be lost without a word); with STORE_SYNC_FULL each commit also
 * survives an OS crash or power loss (an fsync per commit), where the
 * default survives a crash of the process. A reader (STORE_READER) opens
 * read-only. The full integrity check runs apart (store_check_start), so
 * opening takes no longer as the database grows. *out is new, closed with
 * store_close (a writer's marks the database closed cleanly). On failure
 * writes the reason into detail and returns CM_EIO or CM_EUNAVAIL.
 *
 * The process holds the database alone (SQLite's unix-excl VFS): from its
 * first connection to its last no other process can open it (a second
 * gateway on it is refused), and the index of the write-ahead log is kept
 * in this process's memory instead of a shared -shm file, so a transaction
 * takes no file lock: 12 fcntl() calls an apply, on a machine where a
 * system call costs a microsecond or more. STORE_SHARED lets other
 * processes read it as it changes (SQLite's default, an operator's sqlite3),
 * at that price. Every connection of a process to one database says the
 * same (the first decides); store_check_start takes the same mode. */
enum { STORE_READER = 0, STORE_WRITER = 1, STORE_SYNC_FULL = 2, STORE_SHARED = 4 };
int store_open(const char *path, int mode, store **out, char *detail, size_t detail_len);
void store_close(store *st);
/* The bytes the database at path takes on disk, its write-ahead log included. */
int64_t store_file_bytes(const char *path);
/* Gives pages free pages back to the file system (the file shrinks by
 * them) when at least that many are free; *left: how many free pages
 * remain. A slice of the writer's transaction, like any change. */
int store_vacuum_step(store *st, int pages, int64_t *left);

/* PRAGMA quick_check of the database at path, on a read-only connection
 * (opened as store_open's mode says) and a thread of their own: on_fail(ctx,
 * why) is called from that thread if the file is damaged. store_check_stop
 * interrupts a check under way and waits for its thread. */
typedef struct store_check store_check;
int store_check_start(const char *path, int mode, void (*on_fail)(void *ctx, const char *why), void *ctx,
                      store_check **out);
void store_check_stop(store_check *c);
/* The same check, here and now: CM_OK, or CM_EIO with the reason in why. */
int store_check_file(const char *path, int mode, char *why, size_t why_len);
const char *store_errmsg(store *st); /* borrowed; valid until the next call */

int store_begin(store *st);
/* Whether a transaction is open: SQLite rolls one back by itself on some
 * errors (SQLITE_FULL among them). */
int store_in_transaction(store *st);
/* Fails (CM_EIO, nothing committed: roll back) when any statement failed
 * since store_begin, whether or not its caller looked at the error; then
 * store_errmsg names the first failure. */
int store_commit(store *st);
void store_rollback(store *st);
/* Rows changed since the store opened: a cycle that moved it wrote something. */
int64_t store_total_changes(store *st);

/* ---- pools -------------------------------------------------------------- */
int store_pool_insert(store *st, const char *id, const char *spec_json, const char *state, int64_t created_ms);
int store_pool_set_state(store *st, const char *id, const char *state, const char *reason);
int store_pool_set_spec(store *st, const char *id, const char *spec_json); /* a resize, autoscale's choice */
/* A pool gone for good, with its workers' rows and its output (its jobs
 * were removed before). */
int store_pool_delete(store *st, const char *id);

/* Calls fn once per stored pool (all strings borrowed for the call). */
typedef void (*store_pool_fn)(void *ctx, const char *id, const char *spec_json, const char *state, const char *reason,
                              int64_t created_ms);
int store_pool_each(store *st, store_pool_fn fn, void *ctx);

/* ---- jobs --------------------------------------------------------------- */
typedef struct store_job {
	int64_t num; /* integer key used by tasks.job */
	const char *id;
	const char *pool_id;
	const char *function;
	const char *command_json; /* JSON array, or NULL */
	const char *idem_key; /* or NULL */
	const char *state;
	int64_t base;
	int64_t total;
	int64_t received; /* loaded only: tasks stored, below total while parts come */
	int64_t done; /* loaded only: results recorded */
	int64_t failed; /* loaded only: of which errors */
	int chunksize;
	int max_attempts; /* runs of a task before it fails for good */
	int retry_errors; /* re-run tasks whose function returned an error */
	int64_t timeout_ms; /* a task running longer fails; 0: none */
	int64_t created_ms;
	int64_t ended_ms; /* loaded only: when an ended job ended (its creation if not recorded) */
	const void *context; /* JSON text given to a runtime with every task, or NULL */
	size_t context_len;
	const char *name; /* what people call it, or NULL */
	/* Tasks that carry several inputs (store_job_inputs_add): the inputs in
	 * all, 0 for one input a task; done and failed loaded only. */
	int64_t inputs_total, inputs_done, inputs_failed;
} store_job;

int store_job_insert(store *st, const store_job *job);
/* ended_ms: when the job ended (kept for --retain), 0 while it runs. */
int store_job_set_state(store *st, int64_t num, const char *state, int64_t ended_ms);
/* A job cancelled while its parts came: its total (and its inputs', for
 * tasks of several inputs; else 0) becomes what it has. */
int store_job_set_total(store *st, int64_t num, int64_t total, int64_t inputs_total);
/* Writes the id of the job created with this idempotency key into id_out
 * (20 bytes). Returns CM_OK, or CM_ENOENT if there is none. */
int store_job_find_idem(store *st, const char *pool_id, const char *key, char id_out[20]);
typedef void (*store_job_fn)(void *ctx, const store_job *job);
int store_job_each(store *st, store_job_fn fn, void *ctx);
/* How many inputs each of n tasks of job carries, from its task index at
 * (a part of the job's, stored with its tasks). */
int store_job_inputs_add(store *st, int64_t job, int64_t at, size_t n, const uint32_t *counts);
/* Each task's inputs, from index 0 (total: the job's tasks; a task not
 * stored yet has 0). */
int store_job_inputs_read(store *st, int64_t job, int64_t total, uint32_t *counts);
/* The job's inputs done (failed included) and failed, with its results. */
int store_job_inputs_count(store *st, int64_t job, int64_t done, int64_t failed);
/* The next free job number and task id (1 on an empty database). */
int store_next_ids(store *st, int64_t *job_num, int64_t *task_id);

/* ---- tasks -------------------------------------------------------------- */
/* Inserts tasks base .. base+n-1 of job, QUEUED, attempts 0. The JSON text
 * of argument i is text[offs[i] .. offs[i + 1]) (offs: n + 1 entries). */
int store_tasks_insert(store *st, int64_t job, int64_t base, size_t n, const char *text, const size_t *offs);

/* Calls fn, in id order, for the QUEUED tasks in [lo, hi] with its argument
 * (borrowed for the call) and its attempt (attempts + 1), and marks those it
 * took PENDING on worker, attempts + 1. fn takes a task by returning CM_OK;
 * STORE_TASK_LEAVE leaves it and the rest queued (any other code is an
 * error, and nothing is marked). *next: the first id it did not take. */
typedef int (*store_task_fn)(void *ctx, int64_t id, const void *arg, size_t arg_len, int attempts);
#define STORE_TASK_LEAVE (-1)
int store_tasks_assign(store *st, int64_t lo, int64_t hi, const char *worker, store_task_fn fn, void *ctx,
                       int64_t *next);

/* How many tasks the store records as held by worker (pending on it). */
int store_tasks_held_count(store *st, const char *worker, int64_t *n);

/* Where a result comes from, for store_task_complete_from: the worker as
 * store_holder_ref finds it (once for all the results of a pull), or
 * STORE_FROM_GATEWAY for the gateway's own verdict, such as a timeout. */
#define STORE_FROM_GATEWAY 0
#define STORE_FROM_NOBODY (-1) /* a worker that holds nothing: none of its results count */
int store_holder_ref(store *st, const char *worker, int64_t *from);
/* Records a result unless the task already has one; from a worker, only
 * when that worker holds the task. *recorded is 1 when this call recorded
 * it, 0 when the task was already DONE, is held by another worker or by
 * none, or does not exist. */
int store_task_complete_from(store *st, int64_t id, int64_t seq, int ok, const void *value, size_t len, int64_t from,
                             int *recorded);

/* Notes, for the failures page, where task id that just failed ran and
 * for how long (a failure the gateway decided, such as a cancel, has none). */
int store_failure_note(store *st, int64_t id, const char *worker, int64_t run_us);

/* Returns every PENDING task of worker to QUEUED and calls fn(id, attempts)
 * for each. */
int store_tasks_requeue(store *st, const char *worker, store_task_fn fn, void *ctx);

/* After a worker resynchronised: its PENDING tasks that are not among the
 * nheld ids in held (sorted here) were lost in an answer that never reached
 * it. They go back to QUEUED without the attempt being counted, and fn(id,
 * attempts) is called for each. */
int store_tasks_release(store *st, const char *worker, const uint64_t *held, size_t nheld, store_task_fn fn, void *ctx);
/* Puts one PENDING task back in the queue (a retried error). */
int store_task_requeue_one(store *st, int64_t id);
/* Returns to the queue every PENDING task whose worker is not live. */
int store_tasks_requeue_orphans(store *st);

/* Records every task with ids lo..hi that has no result yet as failed with
 * message; their seq numbers follow on from seq_from in id order, with no
 * gap (seq is a job's completion count). *count is how many. A job is
 * cancelled by ranges, a slice a cycle. */
int store_job_cancel(store *st, int64_t lo, int64_t hi, int64_t seq_from, const char *message, int64_t *count);

/* Removing a job: store_job_forget marks it "deleting" (its idempotency key
 * free again); its tasks then go by ranges (store_tasks_delete), a few
 * thousand a cycle, then its result groups, up to max_groups a call
 * (store_job_delete), and the job row with the last of them (*done set:
 * nothing of it is left to delete). A job not "deleting" is left whole. A start finds the jobs still
 * "deleting" and carries on. */
int store_job_forget(store *st, int64_t num);
int store_tasks_delete(store *st, int64_t lo, int64_t hi);
int store_job_delete(store *st, int64_t num, int64_t max_groups, int *done);

/* Calls fn for each QUEUED task of job, in id order (arg not loaded). */
int store_tasks_queued_each(store *st, int64_t job, store_task_fn fn, void *ctx);

/* ---- results ------------------------------------------------------------ */
typedef struct store_result {
	int64_t index; /* position in the job's input */
	int64_t seq; /* completion order, 1-based */
	int ok;
	const char *value; /* JSON text when ok, error text otherwise; borrowed */
	size_t len;
} store_result;
/* Returns CM_OK to go on, STORE_PAGE_FULL to end the page before r (r is
 * not counted in *next), or an error. */
typedef int (*store_result_fn)(void *ctx, const store_result *r);
#define STORE_PAGE_FULL (-1)

/* Input order: results for indexes cursor, cursor+1, ... up to limit, stopping
 * at the first index that has no result yet (imap). Completion order: results
 * with seq > cursor in seq order (imap_unordered). *next is the cursor to
 * pass next time. */
int store_results_input(store *st, int64_t job, int64_t base, int64_t total, int64_t cursor, int64_t limit,
                        store_result_fn fn, void *ctx, int64_t *next);
int store_results_completion(store *st, int64_t job, int64_t cursor, int64_t limit, store_result_fn fn, void *ctx,
                             int64_t *next);
/* The failed tasks of a job whose tasks are base..base+total-1, in index
 * order from index cursor: up to limit, fn called with each (its texts
 * borrowed for the call; it may return STORE_PAGE_FULL to end before that
 * one). Only chunks holding a failure are read. *next: the index to go on
 * from; total once none is left. */
typedef struct store_failure {
	int64_t index;
	unsigned attempts;
	const char *error;
	size_t len;
	const char *worker; /* where it ran, or NULL (the gateway's verdict: a cancel, a timeout) */
	int64_t run_us; /* how long, or -1 */
	const char *arg; /* the task's argument as stored (JSON text), or NULL */
	size_t arg_len;
} store_failure;
typedef int (*store_failure_fn)(void *ctx, const store_failure *f);
int store_results_failed(store *st, int64_t job, int64_t base, int64_t total, int64_t cursor, int64_t limit,
                         store_failure_fn fn, void *ctx, int64_t *next);

/* ---- queues and pipes --------------------------------------------------- */
/* A queue is a FIFO of JSON items; a pipe is one queue (simplex) or two
 * (duplex) named "<pipe>.0" and "<pipe>.1". Items are ordered by commit. */
/* lease: the client lease it is deleted with, NULL or "" for none. */
int store_queue_insert(store *st, const char *id, const char *kind, int64_t created_ms, const char *lease);
/* Removes a queue and its items. */
int store_queue_delete(store *st, const char *id);
/* size: its items not held; bytes: all its items' together; lease: "" for
 * none. */
typedef void (*store_queue_fn)(void *ctx, const char *id, const char *kind, int64_t created_ms, int64_t size,
                               int64_t bytes, const char *lease);
int store_queue_each(store *st, store_queue_fn fn, void *ctx);
/* Appends n items (JSON texts, borrowed) in order. */
int store_queue_put(store *st, const char *queue, size_t n, char *const *items, const size_t *lens);
/* Takes items from the head, in order, calling fn for each (value
 * borrowed for the call): up to max, and past the first only while they
 * come to at most max_bytes together. hold NULL: they are removed. Else
 * they stay, held under that name, out of every take until
 * store_queue_release. *taken: how many; *bytes: their size. */
typedef int (*store_item_fn)(void *ctx, const void *value, size_t len);
int store_queue_take(store *st, const char *queue, int64_t max, int64_t max_bytes, const char *hold, store_item_fn fn,
                     void *ctx, int64_t *taken, int64_t *bytes);
/* Ends a hold whose items were all used: they are removed. */
int store_queue_hold_drop(store *st, const char *hold);
/* Ends a hold: its first `used` items are removed (*removed of them,
 * *removed_bytes their size), the rest are at the head of their queue
 * again, in their order. */
int store_queue_release(store *st, const char *hold, int64_t used, int64_t *removed, int64_t *removed_bytes);
/* Every hold: its queue, name, items and their size. */
typedef void (*store_hold_fn)(void *ctx, const char *queue, const char *hold, int64_t n, int64_t bytes);
int store_queue_holds_each(store *st, store_hold_fn fn, void *ctx);

/* ---- pools' output ------------------------------------------------------ */
/* What a worker's tasks printed (worker/output.h), a line a row numbered in
 * the order stored: n lines of text, each lens[i] bytes on streams[i] (1
 * stdout, 2 stderr); *last: the number of the last one (set when n > 0). */
int store_output_add(store *st, const char *pool, const char *worker, int64_t at_ms, size_t n, const uint8_t *text,
                     const uint32_t *lens, const uint32_t *streams, int64_t *last);
/* Keeps only the pool's keep newest lines; *gone: the number of the newest
 * removed (left as it is when none was). */
int store_output_trim(store *st, const char *pool, int64_t keep, int64_t *gone);
/* Each pool's count of lines and the number of its last one. */
typedef void (*store_output_count_fn)(void *ctx, const char *pool, int64_t lines, int64_t last);
int store_output_counts(store *st, store_output_count_fn fn, void *ctx);
/* The pool's lines numbered above after (of worker, unless NULL), at most
 * limit (the first ones, or the newest), oldest first; fn's text is
 * borrowed for the call, and anything but CM_OK from it ends the read. */
typedef int (*store_output_fn)(void *ctx, int64_t seq, const char *worker, int64_t at_ms, int stream, const void *text,
                               size_t len);
int store_output_read(store *st, const char *pool, int64_t after, const char *worker, int64_t limit, int newest,
                      store_output_fn fn, void *ctx);
/* The number of the pool's last line stored, 0 for none. */
int store_output_last(store *st, const char *pool, int64_t *seq);

/* ---- leases ------------------------------------------------------------- */
/* A client's lease: what it made with it ends when it is deleted or not
 * renewed for lease_ms. Renewals are not stored: a gateway that starts
 * gives each lease its whole time again. */
int store_lease_insert(store *st, const char *id, int64_t lease_ms, int64_t created_ms);
int store_lease_delete(store *st, const char *id);
typedef void (*store_lease_fn)(void *ctx, const char *id, int64_t lease_ms, int64_t created_ms);
int store_lease_each(store *st, store_lease_fn fn, void *ctx);

/* Join tokens of external pools (the engine's join.c), by their SHA-256:
 * put writes one (or its uses left), delete removes one; a deleted pool's
 * go with it. */
int store_join_token_put(store *st, const char *hash, const char *pool, int64_t expires_ms, int64_t uses);
int store_join_token_delete(store *st, const char *hash);
typedef void (*store_join_token_fn)(void *ctx, const char *hash, const char *pool, int64_t expires_ms, int64_t uses);
int store_join_token_each(store *st, store_join_token_fn fn, void *ctx);

/* ---- processes ---------------------------------------------------------- */
typedef struct store_process {
	const char *id;
	const char *spec_json; /* the request, as given */
	const char *backend;
	const char *handle; /* may be NULL: never started */
	const char *state; /* running, exited, failed */
	int exit_code;
	const char *reason; /* may be NULL */
	int64_t created_ms, ended_ms;
	const char *secret_hash; /* its hub secret's SHA-256 (a function's queue calls); may be NULL */
} store_process;
int store_process_save(store *st, const store_process *p);
typedef void (*store_process_fn)(void *ctx, const store_process *p);
int store_process_each(store *st, store_process_fn fn, void *ctx);
int store_process_delete(store *st, const char *id);

/* ---- rings: members are processes; members is their ids, comma-separated */
int store_ring_insert(store *st, const char *id, int size, int master_port, const char *members, int64_t created_ms);
typedef void (*store_ring_fn)(void *ctx, const char *id, int size, int master_port, const char *members,
                              int64_t created_ms);
int store_ring_each(store *st, store_ring_fn fn, void *ctx);
int store_ring_delete(store *st, const char *id);

/* ---- workers ------------------------------------------------------------ */
/* secret_hash: the SHA-256 of the worker's own secret, which it presents in
 * every frame to the hub; the secret itself is never stored. */
int store_worker_insert(store *st, const char *id, const char *pool_id, const char *handle, const char *secret_hash,
                        int64_t started_ms);
int store_worker_set_state(store *st, const char *id, const char *state, int exit_code);
int store_worker_set_handle(store *st, const char *id, const char *handle); /* once its backend started it */
/* What it last wrote, once it ended (docker and kubernetes say). */
int store_worker_set_last_words(store *st, const char *id, const char *last_words);
/* The number of the next line of output it sends that is not stored yet. */
int store_worker_set_output_next(store *st, const char *id, int64_t output_next);
/* Removes an ended worker (its row, and its name in the task records'
 * table of holders), once its pool's view no longer shows it. */
int store_worker_forget(store *st, const char *id);
/* Calls fn for each worker stored as starting or connected. */
typedef void (*store_worker_fn)(void *ctx, const char *id, const char *pool_id, const char *handle, const char *state,
                                const char *secret_hash, int64_t started_ms, int64_t output_next);
int store_worker_each_live(store *st, store_worker_fn fn, void *ctx);
/* Calls fn for the per_pool most recently started workers of each pool
 * that ended ("exited", or "lost": an end nobody asked for), oldest first,
 * then tally for each pool with its count of workers ever started and
 * lost. */
typedef void (*store_ended_worker_fn)(void *ctx, const char *id, const char *pool_id, const char *handle, int exit_code,
                                      const char *last_words);
typedef void (*store_worker_tally_fn)(void *ctx, const char *pool_id, int64_t started, int64_t lost);
int store_worker_each_ended(store *st, int per_pool, store_ended_worker_fn fn, store_worker_tally_fn tally, void *ctx);

#endif
