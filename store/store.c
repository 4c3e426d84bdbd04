/*
 * SQLite implementation of store.h. Each store is one connection and is used
 * by one thread at a time: the writer by the engine thread, readers by
 * whichever HTTP thread borrowed them.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "common/sha256.h"
#include "store/store_int.h"
#include "store/store_wal_writes.h"

/* Version 1, the first release's schema (which also wrote meta.schema_version
 * and left PRAGMA user_version at 0). */
static const char schema_v1[] =
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
        "CREATE TABLE IF NOT EXISTS pools("
        "  id TEXT PRIMARY KEY, secret TEXT NOT NULL, spec TEXT NOT NULL,"
        "  state TEXT NOT NULL, reason TEXT, created_ms INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS jobs("
        "  num INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, pool_id TEXT NOT NULL,"
        "  function TEXT NOT NULL, command TEXT, idem_key TEXT, state TEXT NOT NULL,"
        "  base INTEGER NOT NULL, total INTEGER NOT NULL, chunksize INTEGER NOT NULL,"
        "  max_attempts INTEGER NOT NULL, retry_errors INTEGER NOT NULL, timeout_ms INTEGER NOT NULL,"
        "  created_ms INTEGER NOT NULL, UNIQUE(pool_id, idem_key));"
        /* state: 0 queued, 1 pending (on worker), 2 done (seq, ok, value). */
        "CREATE TABLE IF NOT EXISTS tasks("
        "  id INTEGER PRIMARY KEY, job INTEGER NOT NULL, arg BLOB, state INTEGER NOT NULL,"
        "  attempts INTEGER NOT NULL, worker TEXT, seq INTEGER, ok INTEGER, value BLOB);"
        "CREATE INDEX IF NOT EXISTS tasks_done ON tasks(job, seq) WHERE seq IS NOT NULL;"
        "CREATE INDEX IF NOT EXISTS tasks_pending ON tasks(worker) WHERE state = 1;"
        "CREATE TABLE IF NOT EXISTS workers("
        "  id TEXT PRIMARY KEY, pool_id TEXT NOT NULL, handle TEXT NOT NULL, state TEXT NOT NULL,"
        "  exit_code INTEGER, started_ms INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS queues("
        "  id TEXT PRIMARY KEY, kind TEXT NOT NULL, created_ms INTEGER NOT NULL);"
        /* Items in FIFO order: the rowid is the order of commit. */
        "CREATE TABLE IF NOT EXISTS queue_items("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, value BLOB NOT NULL);"
        "CREATE INDEX IF NOT EXISTS queue_items_by_queue ON queue_items(queue, id);"
        "CREATE TABLE IF NOT EXISTS processes("
        "  id TEXT PRIMARY KEY, spec TEXT NOT NULL, backend TEXT NOT NULL, handle TEXT,"
        "  state TEXT NOT NULL, exit_code INTEGER, reason TEXT, created_ms INTEGER NOT NULL,"
        "  ended_ms INTEGER);"
        "CREATE TABLE IF NOT EXISTS rings("
        "  id TEXT PRIMARY KEY, size INTEGER NOT NULL, master_port INTEGER NOT NULL,"
        "  members TEXT NOT NULL, created_ms INTEGER NOT NULL);"
        "INSERT OR IGNORE INTO meta VALUES('schema_version', '1');";

/* migrations[v] moves a database from version v to v + 1; PRAGMA user_version
 * records where a database stands. Steps only ever get added. */
static const char *const migrations[] = {
        schema_v1,
        /* 2: each worker has its own secret; the pool-wide one goes. */
        "ALTER TABLE workers ADD COLUMN secret TEXT;"
        "ALTER TABLE pools DROP COLUMN secret;",
        /* 3: a process that runs a function has its own hub secret (its
         * queue and pipe calls), which an adopting gateway needs again. */
        "ALTER TABLE processes ADD COLUMN secret TEXT;",
        /* 4: a job's context (JSON text), given to a runtime with every task. */
        "ALTER TABLE jobs ADD COLUMN context BLOB;",
        /* 5: a job's failed tasks, counted at start without reading the
         * rest (ok is 0 only on a recorded failure). */
        "CREATE INDEX tasks_failed ON tasks(job) WHERE ok = 0;",
        /* 6: tasks kept by chunks, results by the group a cycle records
         * (store_tasks.c says how), so SQLite's cost is paid per chunk and
         * per group, not per task. The rows of the tasks table move there
         * (store__tasks_convert), and it goes. */
        "CREATE TABLE chunks(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, args BLOB NOT NULL);"
        "CREATE TABLE chunk_state(id INTEGER PRIMARY KEY, job INTEGER NOT NULL, n INTEGER NOT NULL,"
        "  queued INTEGER NOT NULL, pending INTEGER NOT NULL, done INTEGER NOT NULL, failed INTEGER NOT NULL,"
        "  tasks BLOB);"
        "CREATE INDEX chunk_state_by_job ON chunk_state(job, id);"
        "CREATE INDEX chunk_state_pending ON chunk_state(id) WHERE pending > 0;"
        "CREATE TABLE results(id INTEGER PRIMARY KEY, job INTEGER NOT NULL, seq INTEGER NOT NULL,"
        "  n INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE INDEX results_by_seq ON results(job, seq);"
        "CREATE TABLE holders(ref INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);",
        /* 7: when a job ended, for --retain (NULL: running, or ended before
         * this step, when its creation stands in). */
        "ALTER TABLE jobs ADD COLUMN ended_ms INTEGER;",
        /* 8: what a worker last wrote when it ended (its container's or
         * pod's last lines), shown with it after its end. */
        "ALTER TABLE workers ADD COLUMN last_words TEXT;",
        /* 9: a chunk's task records are written as runs (task_records.h),
         * which a gateway of before would take for a corrupt chunk; those
         * written before are still read, and rewritten as runs when next
         * changed. */
        "SELECT 1;",
        /* 10: leases: a client's hold on the pools, managers and processes
         * it made, which end when it ends or stops renewing it. */
        "CREATE TABLE IF NOT EXISTS leases(id TEXT PRIMARY KEY, lease_ms INTEGER NOT NULL, created_ms INTEGER NOT "
        "NULL);",
        /* 11: what pools' tasks printed, a line a row, the newest kept. */
        "CREATE TABLE IF NOT EXISTS output(seq INTEGER PRIMARY KEY, pool TEXT NOT NULL, worker TEXT NOT NULL,"
        "  at_ms INTEGER NOT NULL, stream INTEGER NOT NULL, text BLOB NOT NULL);"
        "CREATE INDEX IF NOT EXISTS output_by_pool ON output(pool, seq);",
        /* 12: hub secrets are kept only as their SHA-256, so that a copy of
         * the database opens nothing; secure_delete (on for the migration)
         * zeroes the pages that held them. */
        "UPDATE workers SET secret = strand_sha256(secret) WHERE secret IS NOT NULL;"
        "ALTER TABLE workers RENAME COLUMN secret TO secret_sha256;"
        "UPDATE processes SET secret = strand_sha256(secret) WHERE secret IS NOT NULL;"
        "ALTER TABLE processes RENAME COLUMN secret TO secret_sha256;",
        /* 13: what people call a job (its "name"), or NULL. */
        "ALTER TABLE jobs ADD COLUMN name TEXT;",
        /* 14: tasks that carry several inputs (a map's chunk): how many
         * each carries, a row per part of the job (store_inputs.c), and the
         * job's counts by input (NULL: one input a task). */
        "ALTER TABLE jobs ADD COLUMN inputs_total INTEGER;"
        "ALTER TABLE jobs ADD COLUMN inputs_done INTEGER;"
        "ALTER TABLE jobs ADD COLUMN inputs_failed INTEGER;"
        "CREATE TABLE IF NOT EXISTS job_inputs(job INTEGER NOT NULL, at INTEGER NOT NULL, counts BLOB NOT NULL,"
        "  PRIMARY KEY(job, at)) WITHOUT ROWID;",
        /* 15: a deleted pool's workers' rows go with it (store_pool_delete):
         * found by pool, not by a scan of every worker ever started, on
         * the engine's thread. */
        "CREATE INDEX IF NOT EXISTS workers_by_pool ON workers(pool_id);",
        /* 16: where a failed task ran and for how long, by task id, for
         * the failures page (store_failure_note); written only when a task
         * fails, so a map's results pay nothing for it. */
        "CREATE TABLE IF NOT EXISTS failure_notes(task INTEGER PRIMARY KEY, worker TEXT NOT NULL,"
        "  run_us INTEGER NOT NULL);",
        /* 17: join tokens of external pools, kept as their SHA-256: how
         * many workers each still lets join, and until when (wall clock). */
        "CREATE TABLE IF NOT EXISTS join_tokens(hash TEXT PRIMARY KEY, pool TEXT NOT NULL,"
        "  expires_ms INTEGER NOT NULL, uses INTEGER NOT NULL);",
        /* 18: a pool's ended workers past the ones its view keeps go from
         * workers (store_worker_forget); their pool counts them, so its
         * workers_started and workers_lost stay whole across a restart. */
        "ALTER TABLE pools ADD COLUMN workers_forgotten INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE pools ADD COLUMN lost_forgotten INTEGER NOT NULL DEFAULT 0;",
        /* 19: a queue item a client took under its lease stays, held (its
         * hold's name), until the client says it was used or its lease
         * ends (store_queues.c); found by hold, and only held rows are in
         * that index. */
        "ALTER TABLE queue_items ADD COLUMN hold TEXT;"
        "CREATE INDEX IF NOT EXISTS queue_items_by_hold ON queue_items(hold) WHERE hold IS NOT NULL;",
        /* 20: the number of the next line of output a worker sends that
         * is not stored yet (it numbers its lines from 0 and sends them
         * again until a pull's answer comes): a gateway that restarts
         * stores none of them twice. */
        "ALTER TABLE workers ADD COLUMN output_next INTEGER NOT NULL DEFAULT 0;",
        /* 21: the client lease a queue or pipe is deleted with (NULL for
         * none): a program's queues end with it, as its pools do. */
        "ALTER TABLE queues ADD COLUMN lease TEXT;",
};
/* The step whose rows are converted by code after its SQL has run. */
#define SCHEMA_CHUNKS 6
#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

int store__fail(store *st, int rc)
{
	cm_warn("sqlite: %s (%d)", sqlite3_errmsg(st->db), rc);
	if (st->in_tx && !st->tx_failed) {
		st->tx_failed = 1;
		snprintf(st->tx_error, sizeof(st->tx_error), "%s (%d)", sqlite3_errmsg(st->db), rc);
	}
	if (rc == SQLITE_FULL || rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN || rc == SQLITE_BUSY ||
	    rc == SQLITE_LOCKED)
		return CM_EUNAVAIL;
	if (rc == SQLITE_NOMEM)
		return CM_ENOMEM;
	return CM_EIO;
}

const char *store_errmsg(store *st)
{
	return st->tx_failed ? st->tx_error : sqlite3_errmsg(st->db);
}

int store__exec(store *st, const char *sql)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? CM_OK : store__fail(st, rc);
}

int store__prepare(store *st, const char *sql, sqlite3_stmt **out)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);
	return rc == SQLITE_OK ? CM_OK : store__fail(st, rc);
}

int store__kept(store *st, store_kept which, const char *sql, sqlite3_stmt **out)
{
	if (!st->kept[which]) {
		int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->kept[which], NULL);
		if (rc != SQLITE_OK)
			return store__fail(st, rc);
	}
	*out = st->kept[which];
	return CM_OK;
}

int store__kept_done(store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	int err = rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return err;
}

/* Runs a statement that returns no rows and finalizes it. */
int store__step_done(store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

void store__bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

int store__int_query(store *st, const char *sql, int64_t *out)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, sql, &s) != CM_OK)
		return CM_EIO;
	rc = sqlite3_step(s);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

/* strand_sha256(text): the hex SHA-256 of a text, for the step that stops
 * keeping secrets themselves. */
static void sql_sha256(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	char hex[CM_SHA256_HEX + 1];
	cm_sha256 h;

	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	cm_sha256_init(&h);
	cm_sha256_update(&h, sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]));
	cm_sha256_hex(&h, hex);
	sqlite3_result_text(ctx, hex, CM_SHA256_HEX, SQLITE_TRANSIENT);
}

/* Brings the schema to SCHEMA_VERSION, one step at a time, in one
 * transaction: a crash midway leaves the database as it was. */
static int migrate(store *st, char *detail, size_t detail_len)
{
	int64_t version = 0, v1 = 0;
	char set[64];

	if (store__int_query(st, "PRAGMA user_version", &version) != CM_OK ||
	    store__int_query(st, "SELECT count(*) FROM sqlite_master WHERE name = 'meta'", &v1) != CM_OK)
		return CM_EIO;
	if (version == 0 && v1)
		version = 1; /* the first release did not set user_version */
	if (version > SCHEMA_VERSION) {
		snprintf(detail, detail_len, "the database is of schema version %lld, newer than this gateway's %d",
		         (long long)version, SCHEMA_VERSION);
		return CM_EUNSUPPORTED;
	}
	if (version == SCHEMA_VERSION)
		return CM_OK;
	snprintf(set, sizeof(set), "PRAGMA user_version = %d", SCHEMA_VERSION);
	if (sqlite3_create_function(st->db, "strand_sha256", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_sha256,
	                            NULL, NULL) != SQLITE_OK ||
	    store__exec(st, "PRAGMA secure_delete = ON") != CM_OK || store__exec(st, "BEGIN IMMEDIATE") != CM_OK)
		return CM_EIO;
	for (int64_t v = version; v < SCHEMA_VERSION; v++) {
		if (store__exec(st, migrations[v]) != CM_OK ||
		    (v + 1 == SCHEMA_CHUNKS &&
		     (store__tasks_convert(st) != CM_OK || store__exec(st, "DROP TABLE tasks") != CM_OK))) {
			snprintf(detail, detail_len, "schema migration to version %lld failed: %s", (long long)v + 1,
			         sqlite3_errmsg(st->db));
			store_rollback(st);
			return CM_EIO;
		}
	}
	if (store__exec(st, set) != CM_OK || store__exec(st, "COMMIT") != CM_OK) {
		store_rollback(st);
		return CM_EIO;
	}
	store__exec(st, "PRAGMA secure_delete = OFF");
	if (version > 0)
		cm_info("database schema migrated from version %lld to %d", (long long)version, SCHEMA_VERSION);
	return CM_OK;
}

/* Whether path's write-ahead log exists: looked at before SQLite opens the
 * database, which creates one. */
static int wal_exists(const char *path)
{
	char wal[1100];
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &sb) == 0;
}

/* meta 'open' is 1 from a writer's open to its clean close. Set at open
 * and checkpointed into the database file itself, so that a log removed
 * after a crash is seen: the file says "open" and there is no log. A
 * database of before this marker has none, and passes. */
static int open_marker_check(store *st, const char *path, int had_wal, char *detail, size_t detail_len)
{
	int64_t meta = 0, open = 0;

	if (store__int_query(st, "SELECT count(*) FROM sqlite_master WHERE name = 'meta'", &meta) != CM_OK)
		return CM_EIO;
	if (meta &&
	    store__int_query(st, "SELECT coalesce((SELECT value FROM meta WHERE key = 'open'), 0)", &open) != CM_OK)
		return CM_EIO;
	if (open == 1 && !had_wal) {
		snprintf(detail, detail_len,
		         "database %s was not closed cleanly and its write-ahead log %s-wal is gone: the work it "
		         "committed last would be lost; restore the log, or move the database aside to start empty",
		         path, path);
		return CM_EIO;
	}
	return CM_OK;
}

static int open_marker_set(store *st, int open)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "INSERT OR REPLACE INTO meta(key, value) VALUES('open', '%d')", open);
	if (store__exec(st, sql) != CM_OK)
		return CM_EIO;
	/* Into the database file now (nobody else reads yet), not only the log. */
	return open ? store__exec(st, "PRAGMA wal_checkpoint(TRUNCATE)") : CM_OK;
}

/* A database made before incremental vacuum keeps every page it ever
 * used: it is rewritten once (VACUUM, which takes a while on a large file)
 * with auto_vacuum=INCREMENTAL. */
static int vacuum_mode(store *st)
{
	int64_t mode = 0;

	if (store__int_query(st, "PRAGMA auto_vacuum", &mode) != CM_OK)
		return CM_EIO;
	if (mode == 2)
		return CM_OK;
	cm_info("database: rewriting it once for incremental vacuum (removed jobs give their space back)");
	return store__exec(st, "VACUUM");
}

/* SQLite's WAL hook: after each of the writer's commits, the log's length. */
static int on_wal_commit(void *ctx, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	store__checkpointer_kick(ctx, frames);
	return SQLITE_OK;
}

const char *store__vfs(int mode)
{
	return mode & STORE_SHARED ? "unix" : "unix-excl";
}

int store_open(const char *path, int mode, store **out, char *detail, size_t detail_len)
{
	store *st = calloc(1, sizeof(*st));
	int writer = mode & STORE_WRITER;
	int flags = writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
	int had_wal = writer && wal_exists(path);
	int rc;

	if (!st)
		return CM_ENOMEM;
	flags |= SQLITE_OPEN_NOMUTEX;
	/* The writer's commits reach the log in one write (store_wal_writes.c). */
	const char *gathered = writer ? store_wal_writes_vfs(!(mode & STORE_SHARED)) : NULL;
	rc = sqlite3_open_v2(path, &st->db, flags, gathered ? gathered : store__vfs(mode));
	if (rc != SQLITE_OK) {
		snprintf(detail, detail_len, "cannot open database %s: %s", path,
		         st->db ? sqlite3_errmsg(st->db) : "out of memory");
		store_close(st);
		return CM_EUNAVAIL;
	}
	sqlite3_busy_timeout(st->db, 5000);
	st->writer = writer;
	if (writer) {
		/* WAL: readers never block the writer. synchronous=NORMAL in WAL
		 * mode is durable against a crash of the process (the case that
		 * matters for a gateway killed with -9); FULL adds an fsync per
		 * commit for an OS crash or power loss (commits are grouped by
		 * the engine's cycle either way). */
		int64_t level = -1;
		/* Incremental vacuum (store_vacuum_step) gives the pages that
		 * removed jobs free back to the file system, a slice at a time. It
		 * takes effect here on a new file; an older one is converted once,
		 * after its migration (vacuum_mode). The log is cut back to
		 * STORE_LOG_LIMIT_BYTES when it starts again, so neither file
		 * keeps the size of a peak; cut to less, every start of the log
		 * under steady load held the engine for about 28 ms (ftruncate of
		 * 64 MiB) and then made the file grow again. */
		char log_limit[64];
		snprintf(log_limit, sizeof(log_limit), "PRAGMA journal_size_limit=%lld", STORE_LOG_LIMIT_BYTES);
		if (store__exec(st, "PRAGMA auto_vacuum=INCREMENTAL") != CM_OK || store__exec(st, log_limit) != CM_OK ||
		    store__exec(st, "PRAGMA journal_mode=WAL") != CM_OK ||
		    store__exec(st, mode & STORE_SYNC_FULL ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL") !=
		            CM_OK ||
		    store__int_query(st, "PRAGMA synchronous", &level) != CM_OK ||
		    level != (mode & STORE_SYNC_FULL ? 2 : 1) ||
		    open_marker_check(st, path, had_wal, detail, detail_len) != CM_OK ||
		    migrate(st, detail, detail_len) != CM_OK || vacuum_mode(st) != CM_OK ||
		    open_marker_set(st, 1) != CM_OK) {
			if (!detail[0] && sqlite3_errcode(st->db) == SQLITE_BUSY)
				snprintf(detail, detail_len,
				         "database %s is in use by another process (a gateway on it?)", path);
			else if (!detail[0])
				snprintf(detail, detail_len, "cannot prepare database %s: %s", path,
				         sqlite3_errmsg(st->db));
			store_close(st);
			return CM_EIO;
		}
		st->marked_open = 1;
		/* Checkpoints off the committing thread (store_checkpoint.c). */
		if (strcmp(path, ":memory:") != 0) {
			if (store__checkpointer_start(path, mode, &st->checkpointer) != CM_OK) {
				snprintf(detail, detail_len, "cannot start the checkpoints of %s", path);
				store_close(st);
				return CM_EIO;
			}
			sqlite3_wal_hook(st->db, on_wal_commit,
			                 st->checkpointer); /* replaces the automatic checkpoint */
		}
	}
	if (writer && store__tasks_open(st) != CM_OK) {
		snprintf(detail, detail_len, "cannot prepare statements on %s: %s", path, sqlite3_errmsg(st->db));
		store_close(st);
		return CM_EIO;
	}
	*out = st;
	return CM_OK;
}

void store_close(store *st)
{
	if (!st)
		return;
	/* The writer closes last: it checkpoints the rest. Its commits below
	 * no longer reach the checkpointer. */
	if (st->checkpointer)
		sqlite3_wal_hook(st->db, NULL, NULL);
	store__checkpointer_stop(st->checkpointer);
	if (st->marked_open) {
		store_rollback(st);
		open_marker_set(st, 0);
	}
	store__tasks_close(st);
	for (int i = 0; i < KEPT_COUNT; i++)
		sqlite3_finalize(st->kept[i]);
	sqlite3_close(st->db);
	free(st);
}

int64_t store_file_bytes(const char *path)
{
	char wal[1100];
	struct stat db, log;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(path, &db) != 0)
		return 0;
	return (int64_t)db.st_size + (stat(wal, &log) == 0 ? (int64_t)log.st_size : 0);
}

int store_vacuum_step(store *st, int pages, int64_t *left)
{
	int64_t free_pages = 0;
	char sql[64];

	if (store__int_query(st, "PRAGMA freelist_count", &free_pages) != CM_OK)
		return CM_EIO;
	if (free_pages >= pages) {
		snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%d)", pages);
		/* Pointer-map pages come and go with the pages moved: counted again. */
		if (store__exec(st, sql) != CM_OK ||
		    store__int_query(st, "PRAGMA freelist_count", &free_pages) != CM_OK)
			return CM_EIO;
	}
	*left = free_pages;
	return CM_OK;
}

/* Runs a kept statement of no bindings (BEGIN, COMMIT, ROLLBACK). */
static int run_kept(store *st, store_kept which, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int err = store__kept(st, which, sql, &s);

	return err == CM_OK ? store__kept_done(st, s) : err;
}

int store_begin(store *st)
{
	int err = run_kept(st, KEPT_BEGIN, "BEGIN IMMEDIATE");

	st->in_tx = err == CM_OK;
	st->tx_failed = 0;
	return err;
}
int store_in_transaction(store *st)
{
	return !sqlite3_get_autocommit(st->db);
}

int64_t store_total_changes(store *st)
{
	return sqlite3_total_changes64(st->db);
}

int store_commit(store *st)
{
	int err;

	/* One failed statement fails the whole cycle: the caller rolls back and
	 * reloads, rather than committing the rest of it. */
	if (st->tx_failed || store__tasks_flush(st) != CM_OK || st->tx_failed)
		return CM_EIO;
	err = run_kept(st, KEPT_COMMIT, "COMMIT");
	st->in_tx = err != CM_OK && !sqlite3_get_autocommit(st->db);
	if (err == CM_OK)
		store__checkpointer_after_commit(st->checkpointer, st->db);
	return err;
}
void store_rollback(store *st)
{
	st->in_tx = 0;
	if (!sqlite3_get_autocommit(st->db))
		run_kept(st, KEPT_ROLLBACK, "ROLLBACK");
	store__tasks_forget(st);
}

/* ---- pools -------------------------------------------------------------- */

int store_pool_insert(store *st, const char *id, const char *spec_json, const char *state, int64_t created_ms)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "INSERT INTO pools(id, spec, state, created_ms) VALUES(?, ?, ?, ?)", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	store__bind_text(s, 2, spec_json);
	store__bind_text(s, 3, state);
	sqlite3_bind_int64(s, 4, created_ms);
	return store__step_done(st, s);
}

int store_pool_set_state(store *st, const char *id, const char *state, const char *reason)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE pools SET state = ?, reason = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, state);
	store__bind_text(s, 2, reason);
	store__bind_text(s, 3, id);
	return store__step_done(st, s);
}

int store_pool_delete(store *st, const char *id)
{
	static const char *const sql[] = {"DELETE FROM output WHERE pool = ?", "DELETE FROM workers WHERE pool_id = ?",
	                                  "DELETE FROM join_tokens WHERE pool = ?", "DELETE FROM pools WHERE id = ?"};
	sqlite3_stmt *s;
	int rc, err = CM_OK;

	/* its workers' holders first, found by their rows */
	if (store__prepare(st, "SELECT id FROM workers WHERE pool_id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
		err = store__holder_forget(st, (const char *)sqlite3_column_text(s, 0));
	if (err == CM_OK && rc != SQLITE_DONE)
		err = store__fail(st, rc);
	sqlite3_finalize(s);
	if (err != CM_OK)
		return err;

	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		if (store__prepare(st, sql[i], &s) != CM_OK)
			return CM_EIO;
		store__bind_text(s, 1, id);
		if (store__step_done(st, s) != CM_OK)
			return CM_EIO;
	}
	return CM_OK;
}

int store_worker_forget(store *st, const char *id)
{
	static const char *const sql[] = {
	        "UPDATE pools SET workers_forgotten = workers_forgotten + 1, lost_forgotten = lost_forgotten +"
	        " (SELECT state = 'lost' FROM workers WHERE id = ?1) WHERE id = (SELECT pool_id FROM workers WHERE id "
	        "= ?1)",
	        "DELETE FROM workers WHERE id = ?1"};
	sqlite3_stmt *s;

	if (store__holder_forget(st, id) != CM_OK)
		return CM_EIO;
	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		if (store__prepare(st, sql[i], &s) != CM_OK)
			return CM_EIO;
		store__bind_text(s, 1, id);
		if (store__step_done(st, s) != CM_OK)
			return CM_EIO;
	}
	return CM_OK;
}

int store_pool_set_spec(store *st, const char *id, const char *spec_json)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE pools SET spec = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, spec_json);
	store__bind_text(s, 2, id);
	return store__step_done(st, s);
}

int store_worker_set_handle(store *st, const char *id, const char *handle)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE workers SET handle = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, handle);
	store__bind_text(s, 2, id);
	return store__step_done(st, s);
}

int store_pool_each(store *st, store_pool_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, "SELECT id, spec, state, reason, created_ms FROM pools ORDER BY created_ms", &s) !=
	    CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), col_text(s, 1), col_text(s, 2), col_text(s, 3), sqlite3_column_int64(s, 4));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

/* ---- jobs --------------------------------------------------------------- */

int store_job_insert(store *st, const store_job *job)
{
	sqlite3_stmt *s = NULL;

	if (store__kept(st, KEPT_JOB_INSERT,
	                "INSERT INTO jobs(num, id, pool_id, function, command, idem_key, state, base, total, chunksize,"
	                " created_ms, max_attempts, retry_errors, timeout_ms, context, name, inputs_total, inputs_done,"
	                " inputs_failed)"
	                " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, nullif(?17, 0), iif(?17, 0, NULL),"
	                " iif(?17, 0, NULL))",
	                &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, job->num);
	store__bind_text(s, 2, job->id);
	store__bind_text(s, 3, job->pool_id);
	store__bind_text(s, 4, job->function);
	store__bind_text(s, 5, job->command_json);
	store__bind_text(s, 6, job->idem_key);
	store__bind_text(s, 7, job->state);
	sqlite3_bind_int64(s, 8, job->base);
	sqlite3_bind_int64(s, 9, job->total);
	sqlite3_bind_int(s, 10, job->chunksize);
	sqlite3_bind_int64(s, 11, job->created_ms);
	sqlite3_bind_int(s, 12, job->max_attempts);
	sqlite3_bind_int(s, 13, job->retry_errors);
	sqlite3_bind_int64(s, 14, job->timeout_ms);
	if (job->context)
		sqlite3_bind_blob(s, 15, job->context, (int)job->context_len, SQLITE_STATIC);
	store__bind_text(s, 16, job->name);
	sqlite3_bind_int64(s, 17, job->inputs_total);
	return store__kept_done(st, s);
}

int store_job_set_state(store *st, int64_t num, const char *state, int64_t ended_ms)
{
	sqlite3_stmt *s = NULL;

	if (store__kept(st, KEPT_JOB_STATE, "UPDATE jobs SET state = ?, ended_ms = nullif(?, 0) WHERE num = ?", &s) !=
	    CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, state);
	sqlite3_bind_int64(s, 2, ended_ms);
	sqlite3_bind_int64(s, 3, num);
	return store__kept_done(st, s);
}

int store_job_set_total(store *st, int64_t num, int64_t total, int64_t inputs_total)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE jobs SET total = ?1, inputs_total = nullif(?2, 0) WHERE num = ?3", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, total);
	sqlite3_bind_int64(s, 2, inputs_total);
	sqlite3_bind_int64(s, 3, num);
	return store__step_done(st, s);
}

int store__exec_ints(store *st, const char *sql, int64_t a, int64_t b)
{
	sqlite3_stmt *s;

	if (store__prepare(st, sql, &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, a);
	sqlite3_bind_int64(s, 2, b);
	return store__step_done(st, s);
}

int store_job_forget(store *st, int64_t num)
{
	return store__exec_ints(
	        st, "UPDATE jobs SET state = 'deleting', idem_key = NULL, context = NULL WHERE num = ?1", num, 0);
}

int store_job_delete(store *st, int64_t num, int64_t max_groups, int *done)
{
	int64_t before = sqlite3_total_changes64(st->db);

	*done = 0;
	/* A group holds up to 4,096 results and 4 MiB: a long job has
	 * thousands, and their pages are freed a few groups a call. */
	if (store__exec_ints(st,
	                     "DELETE FROM results WHERE id IN (SELECT r.id FROM results r JOIN jobs j ON j.num = r.job"
	                     " WHERE r.job = ?1 AND j.state = 'deleting' LIMIT ?2)",
	                     num, max_groups) != CM_OK)
		return CM_EIO;
	if (sqlite3_total_changes64(st->db) - before == max_groups)
		return CM_OK; /* perhaps more: next call */
	if (store__exec_ints(st, "DELETE FROM job_inputs WHERE job = ?1", num, 0) != CM_OK ||
	    store__exec_ints(st, "DELETE FROM jobs WHERE num = ?1 AND state = 'deleting'", num, 0) != CM_OK)
		return CM_EIO;
	*done = 1;
	return CM_OK;
}

int store_job_find_idem(store *st, const char *pool_id, const char *key, char id_out[20])
{
	sqlite3_stmt *s;
	int rc;
	int err = CM_ENOENT;

	if (store__prepare(st, "SELECT id FROM jobs WHERE pool_id = ? AND idem_key = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool_id);
	store__bind_text(s, 2, key);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		snprintf(id_out, 20, "%s", col_text(s, 0));
		err = CM_OK;
	} else if (rc != SQLITE_DONE) {
		err = store__fail(st, rc);
	}
	sqlite3_finalize(s);
	return err;
}

int store_job_each(store *st, store_job_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(
	            st,
	            "SELECT j.num, j.id, j.pool_id, j.function, j.command, j.idem_key, j.state, j.base, j.total,"
	            " j.chunksize, j.created_ms, j.max_attempts, j.retry_errors, j.timeout_ms, j.context,"
	            /* Counted from its chunks' counts (a row per thousand tasks or
	             * so); an ended job's results are its total. */
	            " CASE WHEN j.state IN ('running', 'cancelling')"
	            "  THEN (SELECT coalesce(sum(done), 0) FROM chunk_state c WHERE c.job = j.num) ELSE j.total END,"
	            " (SELECT coalesce(sum(failed), 0) FROM chunk_state c WHERE c.job = j.num),"
	            " coalesce(j.ended_ms, j.created_ms),"
	            " CASE WHEN j.state = 'running'"
	            "  THEN (SELECT coalesce(sum(n), 0) FROM chunk_state c WHERE c.job = j.num) ELSE j.total END,"
	            " j.name, coalesce(j.inputs_total, 0), coalesce(j.inputs_done, 0), coalesce(j.inputs_failed, 0)"
	            " FROM jobs j ORDER BY j.num",
	            &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		store_job j = {
		        .num = sqlite3_column_int64(s, 0),
		        .id = col_text(s, 1),
		        .pool_id = col_text(s, 2),
		        .function = col_text(s, 3),
		        .command_json = col_text(s, 4),
		        .idem_key = col_text(s, 5),
		        .state = col_text(s, 6),
		        .base = sqlite3_column_int64(s, 7),
		        .total = sqlite3_column_int64(s, 8),
		        .chunksize = sqlite3_column_int(s, 9),
		        .created_ms = sqlite3_column_int64(s, 10),
		        .max_attempts = sqlite3_column_int(s, 11),
		        .retry_errors = sqlite3_column_int(s, 12),
		        .timeout_ms = sqlite3_column_int64(s, 13),
		        .context = sqlite3_column_blob(s, 14),
		        .context_len = (size_t)sqlite3_column_bytes(s, 14),
		        .done = sqlite3_column_int64(s, 15),
		        .failed = sqlite3_column_int64(s, 16),
		        .ended_ms = sqlite3_column_int64(s, 17),
		        .received = sqlite3_column_int64(s, 18),
		        .name = col_text(s, 19),
		        .inputs_total = sqlite3_column_int64(s, 20),
		        .inputs_done = sqlite3_column_int64(s, 21),
		        .inputs_failed = sqlite3_column_int64(s, 22),
		};
		fn(ctx, &j);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_next_ids(store *st, int64_t *job_num, int64_t *task_id)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st,
	                   "SELECT (SELECT coalesce(max(num), 0) + 1 FROM jobs),"
	                   " max((SELECT coalesce(max(base + total), 1) FROM jobs),"
	                   "     (SELECT coalesce(max(id + n), 1) FROM chunk_state WHERE id = (SELECT max(id) FROM "
	                   "chunk_state)))",
	                   &s) != CM_OK)
		return CM_EIO;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*job_num = sqlite3_column_int64(s, 0);
		*task_id = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? CM_OK : store__fail(st, rc);
}

/* ---- workers ------------------------------------------------------------ */

int store_worker_insert(store *st, const char *id, const char *pool_id, const char *handle, const char *secret_hash,
                        int64_t started_ms)
{
	sqlite3_stmt *s;

	if (store__prepare(st,
	                   "INSERT OR REPLACE INTO workers(id, pool_id, handle, state, secret_sha256, started_ms)"
	                   " VALUES(?, ?, ?, 'starting', ?, ?)",
	                   &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	store__bind_text(s, 2, pool_id);
	store__bind_text(s, 3, handle);
	store__bind_text(s, 4, secret_hash);
	sqlite3_bind_int64(s, 5, started_ms);
	return store__step_done(st, s);
}

int store_output_add(store *st, const char *pool, const char *worker, int64_t at_ms, size_t n, const uint8_t *text,
                     const uint32_t *lens, const uint32_t *streams, int64_t *last)
{
	sqlite3_stmt *s = NULL;
	int rc = SQLITE_DONE;

	if (!n)
		return CM_OK;
	/* Kept prepared, as the worker's number that goes with them: a pull
	 * that brings lines is no statement's compiling. */
	if (store__kept(st, KEPT_OUTPUT_ADD,
	                "INSERT INTO output(pool, worker, at_ms, stream, text) VALUES(?, ?, ?, ?, ?)", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool);
	store__bind_text(s, 2, worker);
	sqlite3_bind_int64(s, 3, at_ms);
	for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
		sqlite3_bind_int(s, 4, (int)streams[i]);
		/* An empty line is an empty blob, not NULL (its text may be NULL). */
		sqlite3_bind_blob(s, 5, text ? (const void *)text : "", (int)lens[i], SQLITE_STATIC);
		if (lens[i])
			text += lens[i];
		rc = sqlite3_step(s);
		sqlite3_reset(s);
	}
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_DONE)
		return store__fail(st, rc);
	*last = sqlite3_last_insert_rowid(st->db);
	return CM_OK;
}

int store_output_trim(store *st, const char *pool, int64_t keep, int64_t *gone)
{
	sqlite3_stmt *s;
	int64_t newest = 0;
	int rc;

	/* The pool's lines are numbered in the order stored (with other
	 * pools' between them): the newest to go is the keep+1th newest. */
	if (store__prepare(st, "SELECT seq FROM output WHERE pool = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2", &s) !=
	    CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool);
	sqlite3_bind_int64(s, 2, keep);
	if ((rc = sqlite3_step(s)) == SQLITE_ROW)
		newest = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
	if (store__prepare(st, "DELETE FROM output WHERE pool = ?1 AND seq <= ?2", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool);
	sqlite3_bind_int64(s, 2, newest);
	if ((rc = store__step_done(st, s)) == CM_OK)
		*gone = newest;
	return rc;
}

int store_output_counts(store *st, store_output_count_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, "SELECT pool, count(*), max(seq) FROM output GROUP BY pool", &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_output_read(store *st, const char *pool, int64_t after, const char *worker, int64_t limit, int newest,
                      store_output_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(
	            st,
	            newest ? "SELECT * FROM (SELECT seq, worker, at_ms, stream, text FROM output WHERE pool = ?1"
	                     " AND seq > ?2 AND (?3 IS NULL OR worker = ?3) ORDER BY seq DESC LIMIT ?4) ORDER BY seq"
	                   : "SELECT seq, worker, at_ms, stream, text FROM output WHERE pool = ?1 AND seq > ?2"
	                     " AND (?3 IS NULL OR worker = ?3) ORDER BY seq LIMIT ?4",
	            &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool);
	sqlite3_bind_int64(s, 2, after);
	if (worker)
		store__bind_text(s, 3, worker);
	sqlite3_bind_int64(s, 4, limit);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, sqlite3_column_int64(s, 0), col_text(s, 1), sqlite3_column_int64(s, 2),
		       sqlite3_column_int(s, 3), sqlite3_column_blob(s, 4),
		       (size_t)sqlite3_column_bytes(s, 4)) != CM_OK)
			break;
	sqlite3_finalize(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? CM_OK : store__fail(st, rc);
}

int store_output_last(store *st, const char *pool, int64_t *seq)
{
	sqlite3_stmt *s;
	int rc;

	*seq = 0;
	if (store__prepare(st, "SELECT max(seq) FROM output WHERE pool = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, pool);
	if ((rc = sqlite3_step(s)) == SQLITE_ROW)
		*seq = sqlite3_column_int64(s, 0); /* NULL (none) reads as 0 */
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? CM_OK : store__fail(st, rc);
}

int store_lease_insert(store *st, const char *id, int64_t lease_ms, int64_t created_ms)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "INSERT INTO leases(id, lease_ms, created_ms) VALUES(?, ?, ?)", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	sqlite3_bind_int64(s, 2, lease_ms);
	sqlite3_bind_int64(s, 3, created_ms);
	return store__step_done(st, s);
}

int store_lease_delete(store *st, const char *id)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "DELETE FROM leases WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	return store__step_done(st, s);
}

int store_join_token_put(store *st, const char *hash, const char *pool, int64_t expires_ms, int64_t uses)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "INSERT OR REPLACE INTO join_tokens VALUES(?, ?, ?, ?)", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, hash);
	store__bind_text(s, 2, pool);
	sqlite3_bind_int64(s, 3, expires_ms);
	sqlite3_bind_int64(s, 4, uses);
	return store__step_done(st, s);
}

int store_join_token_delete(store *st, const char *hash)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "DELETE FROM join_tokens WHERE hash = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, hash);
	return store__step_done(st, s);
}

int store_join_token_each(store *st, store_join_token_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, "SELECT hash, pool, expires_ms, uses FROM join_tokens", &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), col_text(s, 1), sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_lease_each(store *st, store_lease_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, "SELECT id, lease_ms, created_ms FROM leases ORDER BY created_ms", &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_process_save(store *st, const store_process *p)
{
	sqlite3_stmt *s;

	if (store__prepare(
	            st,
	            "INSERT OR REPLACE INTO processes(id, spec, backend, handle, state, exit_code, reason, created_ms,"
	            " ended_ms, secret_sha256) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	            &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, p->id);
	store__bind_text(s, 2, p->spec_json);
	store__bind_text(s, 3, p->backend);
	store__bind_text(s, 4, p->handle);
	store__bind_text(s, 5, p->state);
	sqlite3_bind_int(s, 6, p->exit_code);
	store__bind_text(s, 7, p->reason);
	sqlite3_bind_int64(s, 8, p->created_ms);
	sqlite3_bind_int64(s, 9, p->ended_ms);
	store__bind_text(s, 10, p->secret_hash);
	return store__step_done(st, s);
}

int store_process_each(store *st, store_process_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(
	            st,
	            "SELECT id, spec, backend, handle, state, exit_code, reason, created_ms, ended_ms, secret_sha256"
	            " FROM processes"
	            " ORDER BY created_ms",
	            &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		store_process p = {
		        .id = col_text(s, 0),
		        .spec_json = col_text(s, 1),
		        .backend = col_text(s, 2),
		        .handle = col_text(s, 3),
		        .state = col_text(s, 4),
		        .exit_code = sqlite3_column_int(s, 5),
		        .reason = col_text(s, 6),
		        .created_ms = sqlite3_column_int64(s, 7),
		        .ended_ms = sqlite3_column_int64(s, 8),
		        .secret_hash = col_text(s, 9),
		};
		fn(ctx, &p);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

/* Runs sql, a DELETE of the row whose id is the one parameter, for id. */
static int delete_by_id(store *st, const char *sql, const char *id)
{
	sqlite3_stmt *s;

	if (store__prepare(st, sql, &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	return store__step_done(st, s);
}

int store_process_delete(store *st, const char *id)
{
	return delete_by_id(st, "DELETE FROM processes WHERE id = ?", id);
}

int store_ring_delete(store *st, const char *id)
{
	return delete_by_id(st, "DELETE FROM rings WHERE id = ?", id);
}

int store_ring_insert(store *st, const char *id, int size, int master_port, const char *members, int64_t created_ms)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "INSERT INTO rings(id, size, master_port, members, created_ms) VALUES(?, ?, ?, ?, ?)",
	                   &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	sqlite3_bind_int(s, 2, size);
	sqlite3_bind_int(s, 3, master_port);
	store__bind_text(s, 4, members);
	sqlite3_bind_int64(s, 5, created_ms);
	return store__step_done(st, s);
}

int store_ring_each(store *st, store_ring_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st, "SELECT id, size, master_port, members, created_ms FROM rings", &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int(s, 2), col_text(s, 3),
		   sqlite3_column_int64(s, 4));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_worker_each_live(store *st, store_worker_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st,
	                   "SELECT id, pool_id, handle, state, secret_sha256, started_ms, output_next FROM workers"
	                   " WHERE state IN ('starting', 'connected')",
	                   &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), col_text(s, 1), col_text(s, 2), col_text(s, 3), col_text(s, 4),
		   sqlite3_column_int64(s, 5), sqlite3_column_int64(s, 6));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_worker_each_ended(store *st, int per_pool, store_ended_worker_fn fn, store_worker_tally_fn tally, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st,
	                   "SELECT id, pool_id, handle, coalesce(exit_code, -1), coalesce(last_words, '') FROM"
	                   " (SELECT *, rowid AS k, row_number() OVER (PARTITION BY pool_id ORDER BY started_ms DESC, "
	                   "rowid DESC)"
	                   "  AS r FROM workers WHERE state IN ('exited', 'lost'))"
	                   " WHERE r <= ? ORDER BY started_ms, k",
	                   &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int(s, 1, per_pool);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, col_text(s, 0), col_text(s, 1), col_text(s, 2), sqlite3_column_int(s, 3), col_text(s, 4));
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return store__fail(st, rc);
	if (store__prepare(
	            st,
	            "SELECT p.id, coalesce(w.n, 0) + p.workers_forgotten, coalesce(w.lost, 0) + p.lost_forgotten"
	            " FROM pools p LEFT JOIN (SELECT pool_id, count(*) AS n, sum(state = 'lost') AS lost FROM workers"
	            " GROUP BY pool_id) w ON w.pool_id = p.id",
	            &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		tally(ctx, col_text(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_worker_set_output_next(store *st, const char *id, int64_t output_next)
{
	sqlite3_stmt *s = NULL;

	if (store__kept(st, KEPT_WORKER_OUTPUT_NEXT, "UPDATE workers SET output_next = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, output_next);
	store__bind_text(s, 2, id);
	return store__kept_done(st, s);
}

int store_worker_set_last_words(store *st, const char *id, const char *last_words)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE workers SET last_words = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, last_words);
	store__bind_text(s, 2, id);
	return store__step_done(st, s);
}

int store_worker_set_state(store *st, const char *id, const char *state, int exit_code)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "UPDATE workers SET state = ?, exit_code = ? WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, state);
	sqlite3_bind_int(s, 2, exit_code);
	store__bind_text(s, 3, id);
	return store__step_done(st, s);
}
