/*
 * The store's inside, shared by store.c (the connection, its transactions,
 * pools, jobs, processes, workers), store_inputs.c (a job's inputs by
 * task), store_queues.c (queues' items), store_tasks.c (tasks and results,
 * kept by chunks),
 * store_checkpoint.c (the writer's checkpoints) and nothing else.
 */
#ifndef STORE_STORE_INT_H
#define STORE_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

struct task_cache; /* store_tasks.c: a writer's chunks being changed */
/* SQLite's VFS for a connection opened in mode (store_open): "unix-excl",
 * or "unix" with STORE_SHARED. */
const char *store__vfs(int mode);
/* store_checkpoint.c: a writer's checkpoints, on their own thread */
typedef struct store_checkpointer store_checkpointer;
/* A log this many pages long is checkpointed by the writer itself, and its
 * next write starts it again from its beginning. */
#define STORE_LOG_CAP_FRAMES 32768
/* A page of the log in its file: a 24-byte frame header and the page
 * (4 KiB, SQLite's default); the file begins with a 32-byte header. */
#define STORE_LOG_FRAME_BYTES (24 + 4096LL)
/* The log file is cut back to this size when it starts again
 * (journal_size_limit): above what STORE_LOG_CAP_FRAMES pages take, so
 * that under steady load the file is reused as it is, and cut only after
 * a peak larger than that. */
#define STORE_LOG_LIMIT_BYTES (160LL << 20)
_Static_assert(STORE_LOG_LIMIT_BYTES > 32 + STORE_LOG_CAP_FRAMES * STORE_LOG_FRAME_BYTES,
               "the log's limit is below its cap");
int store__checkpointer_start(const char *path, int mode, store_checkpointer **out);
/* A commit left the log frames long (SQLite's WAL hook). */
void store__checkpointer_kick(store_checkpointer *c, int frames);
/* After each of the writer's commits: a log that reached the cap is
 * checkpointed here, so that the next write starts it again. */
void store__checkpointer_after_commit(store_checkpointer *c, sqlite3 *writer);
void store__checkpointer_stop(store_checkpointer *c); /* before the writer closes */

/* Statements the writer runs in every cycle, prepared once: parsing them
 * each time was 7 % of the engine thread's samples during applies. */
typedef enum store_kept {
	KEPT_BEGIN,
	KEPT_COMMIT,
	KEPT_ROLLBACK,
	KEPT_JOB_INSERT,
	KEPT_JOB_STATE,
	KEPT_JOB_INPUTS,
	KEPT_FAILURE_NOTE,
	KEPT_QUEUE_PUT,
	KEPT_QUEUE_TAKE,
	KEPT_QUEUE_REMOVE,
	KEPT_QUEUE_HOLD,
	KEPT_QUEUE_HOLD_DROP,
	KEPT_OUTPUT_ADD,
	KEPT_WORKER_OUTPUT_NEXT,
	KEPT_COUNT
} store_kept;

struct store {
	sqlite3 *db;
	sqlite3_stmt *kept[KEPT_COUNT]; /* prepared at first use (store__kept) */
	int writer;
	int marked_open; /* a writer: meta 'open' is 1 until store_close */
	int in_tx; /* between store_begin and its commit or rollback */
	int tx_failed; /* a statement of that transaction failed: it must not commit */
	char tx_error[256];
	struct task_cache *tasks;
	store_checkpointer *checkpointer; /* a writer on a file */
};

/* Logs SQLite's error, fails the transaction under way, and maps rc to a
 * CM_ code. */
int store__fail(store *st, int rc);
int store__exec(store *st, const char *sql);
int store__prepare(store *st, const char *sql, sqlite3_stmt **out);
/* Runs a statement that returns no rows and finalizes it. */
int store__step_done(store *st, sqlite3_stmt *s);
/* The kept statement which (whose text is sql), prepared at its first use.
 * It is run with store__kept_done, never finalized but by store_close. */
int store__kept(store *st, store_kept which, const char *sql, sqlite3_stmt **out);
/* Runs a kept statement that returns no rows, then resets it and clears its
 * bindings for the next use. */
int store__kept_done(store *st, sqlite3_stmt *s);
int store__int_query(store *st, const char *sql, int64_t *out);
/* Runs sql, which returns no rows, with ?1 and ?2 bound to a and b. */
int store__exec_ints(store *st, const char *sql, int64_t a, int64_t b);
void store__bind_text(sqlite3_stmt *s, int i, const char *v);

/* store_tasks.c, called by store.c: */
int store__tasks_open(store *st); /* a writer's cache */
void store__tasks_close(store *st);
/* Writes what the transaction changed in memory (chunks, results) into it:
 * called by store_commit before COMMIT. */
int store__tasks_flush(store *st);
/* After a rollback: what memory held of the transaction is dropped. */
void store__tasks_forget(store *st);
/* A worker gone for good: its holder goes, unless it still holds a task. */
int store__holder_forget(store *st, const char *name);
/* Schema 6: the tasks table of before, converted into chunks and results. */
int store__tasks_convert(store *st);

#endif
