/*
 * store_wal_writes.c: a commit's frames reach the write-ahead log in one
 * write, and the database is exactly what SQLite alone would make of it:
 * readers see every commit, a rollback after pages spilled leaves nothing,
 * a failed write fails the commit, a process that dies keeps every commit.
 *
 * Under it runs "unix-counting", SQLite's unix VFS with the writes to -wal
 * files counted and, on request, failed (the seam that shows what reached
 * the file); it is made the default before the VFS under test is
 * registered, so that one wraps it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store_wal_writes.h"

/* ---- unix-counting: the unix VFS, its -wal writes counted ---------------- */

typedef struct counted_file {
	sqlite3_file base;
	sqlite3_file *real;
	int is_wal;
} counted_file;

static sqlite3_vfs counting_vfs;
static sqlite3_io_methods counting_methods;
static long wal_writes, wal_bytes;
static int fail_wal_writes; /* wal writes answer SQLITE_FULL while set */

static int counted_write(sqlite3_file *file, const void *data, int n, sqlite3_int64 off)
{
	counted_file *f = (counted_file *)file;

	if (f->is_wal) {
		if (fail_wal_writes)
			return SQLITE_FULL;
		wal_writes++;
		wal_bytes += n;
	}
	return f->real->pMethods->xWrite(f->real, data, n, off);
}

/* The other methods forward: generated from one pattern each. */
#define FORWARD(name, sig, args)                                                                                       \
	static int counted_##name sig                                                                                  \
	{                                                                                                              \
		sqlite3_file *r = ((counted_file *)file)->real;                                                        \
		return r->pMethods->name args;                                                                         \
	}
FORWARD(xRead, (sqlite3_file * file, void *out, int n, sqlite3_int64 off), (r, out, n, off))
FORWARD(xTruncate, (sqlite3_file * file, sqlite3_int64 size), (r, size))
FORWARD(xSync, (sqlite3_file * file, int flags), (r, flags))
FORWARD(xFileSize, (sqlite3_file * file, sqlite3_int64 *size), (r, size))
FORWARD(xLock, (sqlite3_file * file, int level), (r, level))
FORWARD(xUnlock, (sqlite3_file * file, int level), (r, level))
FORWARD(xCheckReservedLock, (sqlite3_file * file, int *out), (r, out))
FORWARD(xFileControl, (sqlite3_file * file, int op, void *arg), (r, op, arg))
FORWARD(xSectorSize, (sqlite3_file * file), (r))
FORWARD(xDeviceCharacteristics, (sqlite3_file * file), (r))
FORWARD(xShmMap, (sqlite3_file * file, int region, int size, int extend, void volatile **out),
        (r, region, size, extend, out))
FORWARD(xShmLock, (sqlite3_file * file, int offset, int n, int flags), (r, offset, n, flags))
FORWARD(xShmUnmap, (sqlite3_file * file, int delete_flag), (r, delete_flag))
FORWARD(xFetch, (sqlite3_file * file, sqlite3_int64 off, int n, void **out), (r, off, n, out))
FORWARD(xUnfetch, (sqlite3_file * file, sqlite3_int64 off, void *p), (r, off, p))

static int counted_close(sqlite3_file *file)
{
	sqlite3_file *r = ((counted_file *)file)->real;
	return r->pMethods->xClose(r);
}

static void counted_shm_barrier(sqlite3_file *file)
{
	sqlite3_file *r = ((counted_file *)file)->real;
	r->pMethods->xShmBarrier(r);
}

static int counted_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
	sqlite3_vfs *unix_vfs = vfs->pAppData;
	counted_file *f = (counted_file *)file;

	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
	int rc = unix_vfs->xOpen(unix_vfs, name, f->real, flags, out_flags);
	if (f->real->pMethods)
		f->base.pMethods = &counting_methods;
	return rc;
}

static void counting_vfs_install(void)
{
	sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");

	assert_non_null(unix_vfs);
	counting_methods = (sqlite3_io_methods){
	        .iVersion = 3,
	        .xClose = counted_close,
	        .xRead = counted_xRead,
	        .xWrite = counted_write,
	        .xTruncate = counted_xTruncate,
	        .xSync = counted_xSync,
	        .xFileSize = counted_xFileSize,
	        .xLock = counted_xLock,
	        .xUnlock = counted_xUnlock,
	        .xCheckReservedLock = counted_xCheckReservedLock,
	        .xFileControl = counted_xFileControl,
	        .xSectorSize = counted_xSectorSize,
	        .xDeviceCharacteristics = counted_xDeviceCharacteristics,
	        .xShmMap = counted_xShmMap,
	        .xShmLock = counted_xShmLock,
	        .xShmBarrier = counted_shm_barrier,
	        .xShmUnmap = counted_xShmUnmap,
	        .xFetch = counted_xFetch,
	        .xUnfetch = counted_xUnfetch,
	};
	counting_vfs = *unix_vfs;
	counting_vfs.zName = "unix-counting";
	counting_vfs.szOsFile = (int)sizeof(counted_file) + unix_vfs->szOsFile;
	counting_vfs.pAppData = unix_vfs;
	counting_vfs.pNext = NULL;
	counting_vfs.xOpen = counted_open;
	assert_int_equal(sqlite3_vfs_register(&counting_vfs, 1), SQLITE_OK);
}

/* ---- fixture ------------------------------------------------------------- */

typedef struct fixture {
	char dir[64];
	char path[96];
	sqlite3 *db; /* through the VFS under test */
} fixture;

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

	if (rc != SQLITE_OK)
		fail_msg("%s: %s", sql, err ? err : sqlite3_errstr(rc));
}

static long long scalar(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	long long v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void open_db(const char *path, const char *vfs, sqlite3 **db)
{
	assert_int_equal(sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
	sqlite3_busy_timeout(*db, 5000);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/strand-walw-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
	open_db(f->path, store_wal_writes_vfs(0), &f->db);
	exec_ok(f->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
	               "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); CREATE INDEX t_v ON t(v);"
	               "CREATE TABLE big(k INTEGER PRIMARY KEY, v BLOB)");
	fail_wal_writes = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];

	if (f->db)
		sqlite3_close(f->db);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Rows first..first+n-1, each with a 1,000-byte value naming its key, in
 * one transaction. */
static int insert_rows(sqlite3 *db, int first, int n)
{
	sqlite3_stmt *s;
	char v[1000];
	int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);

	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t(k, v) VALUES(?, ?)", -1, &s, NULL), SQLITE_OK);
	for (int k = first; rc == SQLITE_OK && k < first + n; k++) {
		memset(v, 'a' + k % 26, sizeof(v));
		snprintf(v, 16, "%d", k);
		sqlite3_bind_int(s, 1, k);
		sqlite3_bind_blob(s, 2, v, sizeof(v), SQLITE_TRANSIENT);
		rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* ---- tests --------------------------------------------------------------- */

/* A commit of several pages is one write of whole frames (24-byte header +
 * 4,096-byte page each), where SQLite alone makes two a frame. */
static void test_a_commit_is_one_write(void **state)
{
	fixture *f = *state;

	for (int round = 0; round < 20; round++) {
		long writes = wal_writes, bytes = wal_bytes;
		assert_int_equal(insert_rows(f->db, round * 10, 10), SQLITE_OK);
		assert_int_equal(wal_writes - writes, 1);
		assert_true(wal_bytes - bytes >= 3 * 4120); /* 10 KB of rows: several pages */
		assert_int_equal((wal_bytes - bytes) % 4120, 0);
	}
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 200);
}

/* A commit larger than one write takes (SQLite's unix VFS writes under 128
 * KiB at a time) goes in writes of about that size, in order. (A
 * transaction larger than the page cache spills pages into the log and
 * rewrites them in place: those writes go one by one, as SQLite makes them.) */
static void test_a_large_commit_in_few_writes(void **state)
{
	fixture *f = *state;

	exec_ok(f->db, "PRAGMA cache_size=-65536");
	long writes = wal_writes, bytes = wal_bytes;

	assert_int_equal(insert_rows(f->db, 0, 2000), SQLITE_OK);
	long frames = (wal_bytes - bytes) / 4120;
	assert_true(frames > 500);
	assert_true(wal_writes - writes <= frames / 31 + 2);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 2000);
	assert_int_equal(scalar(f->db, "SELECT sum(k) FROM t"), 1999LL * 2000 / 2);
}

/* Another connection (SQLite's own VFS) sees each commit as it is made, and
 * the checkpoint copies them all into the database file. */
static void test_readers_see_every_commit(void **state)
{
	fixture *f = *state;
	sqlite3 *reader;

	open_db(f->path, "unix", &reader);
	for (int round = 1; round <= 50; round++) {
		assert_int_equal(insert_rows(f->db, round * 100, 3), SQLITE_OK);
		assert_int_equal(scalar(reader, "SELECT count(*) FROM t"), round * 3);
		assert_int_equal(scalar(reader, "SELECT max(k) FROM t"), round * 100 + 2);
	}
	exec_ok(reader, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(insert_rows(f->db, 9000, 3), SQLITE_OK); /* the log starts again from its beginning */
	assert_int_equal(scalar(reader, "SELECT count(*) FROM t"), 153);
	assert_int_equal(scalar(reader, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
	sqlite3_close(reader);
}

/* Commits of every size from 1 to 80 pages (a row of 3,000 bytes fills a
 * page), so that a commit frame's page falls just past what one write can
 * take, at 32 frames and at 63: after each, a reader reads every page (one
 * still gathered would be a short read). */
static void test_commits_of_every_size_reach_the_file(void **state)
{
	fixture *f = *state;
	sqlite3 *reader;
	sqlite3_stmt *s;
	int rows = 0;

	open_db(f->path, "unix", &reader);
	assert_int_equal(sqlite3_prepare_v2(f->db, "INSERT INTO big(k, v) VALUES(?, zeroblob(3000))", -1, &s, NULL),
	                 SQLITE_OK);
	for (int n = 1; n <= 80; n++) {
		exec_ok(f->db, "BEGIN");
		for (int i = 0; i < n; i++) {
			sqlite3_bind_int(s, 1, rows++);
			assert_int_equal(sqlite3_step(s), SQLITE_DONE);
			sqlite3_reset(s);
		}
		exec_ok(f->db, "COMMIT");
		assert_int_equal(scalar(reader, "SELECT count(*) FROM big"), rows);
		assert_int_equal(
		        scalar(reader, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
	}
	sqlite3_finalize(s);
	sqlite3_close(reader);
}

/* Runs body in a child process on its own connection through the VFS
 * under test, at synchronous=NORMAL as the gateway writes by default (a
 * sync at each commit would write what was gathered anyway); the child ends
 * without closing anything, as under kill -9. Then f->db is opened again,
 * through SQLite's own VFS. body returns 0, or what the child exits with. */
static void in_a_writer_that_dies(fixture *f, int (*body)(sqlite3 *db))
{
	int status;

	sqlite3_close(f->db);
	f->db = NULL;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		sqlite3 *db;
		if (sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, store_wal_writes_vfs(0)) != SQLITE_OK ||
		    sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
			_exit(2);
		_exit(body(db));
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	open_db(f->path, "unix", &f->db);
}

/* 400 rows in a transaction larger than the cache, which spills pages into
 * the log and changes some of them again (rewritten in place), then
 * commits; SQLite then writes the checksums of those frames anew. */
static int spilled_commit(sqlite3 *db)
{
	if (sqlite3_exec(db, "PRAGMA cache_size=10; BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return 3;
	for (int k = 0; k < 400; k++) {
		char sql[96];
		snprintf(sql, sizeof(sql), "INSERT INTO t(k, v) VALUES(%d, zeroblob(1000))", k);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return 4;
	}
	return sqlite3_exec(db, "UPDATE t SET v = zeroblob(900) WHERE k % 7 = 0; COMMIT", NULL, NULL, NULL) == SQLITE_OK
	               ? 0
	               : 5;
}

/* A spilled commit's writer dies at once: the commit is whole in the file. */
static void test_a_spilled_commit_survives_its_writer(void **state)
{
	fixture *f = *state;

	in_a_writer_that_dies(f, spilled_commit);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 400);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t WHERE length(v) = 900"), 58);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}

/* Pages spilled to the log by a transaction larger than the cache, then
 * rolled back: nothing of it stays, and the next commit is whole. */
static void test_rollback_after_a_spill(void **state)
{
	fixture *f = *state;
	sqlite3_stmt *s;

	exec_ok(f->db, "PRAGMA cache_size=10");
	assert_int_equal(insert_rows(f->db, 0, 10), SQLITE_OK);
	exec_ok(f->db, "BEGIN");
	assert_int_equal(sqlite3_prepare_v2(f->db, "INSERT INTO t(k, v) VALUES(?, zeroblob(1000))", -1, &s, NULL),
	                 SQLITE_OK);
	for (int k = 100; k < 600; k++) {
		sqlite3_bind_int(s, 1, k);
		assert_int_equal(sqlite3_step(s), SQLITE_DONE);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 510); /* read back through the spill */
	exec_ok(f->db, "ROLLBACK");
	assert_int_equal(insert_rows(f->db, 1000, 5), SQLITE_OK);
	sqlite3_close(f->db);

	open_db(f->path, "unix", &f->db);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 15);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t WHERE k >= 100 AND k < 600"), 0);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t WHERE k >= 1000"), 5);
}

/* A write that fails fails its commit: the caller hears it, and the
 * database keeps exactly the commits before. */
static void test_a_failed_write_fails_the_commit(void **state)
{
	fixture *f = *state;

	assert_int_equal(insert_rows(f->db, 0, 10), SQLITE_OK);
	fail_wal_writes = 1;
	assert_int_equal(insert_rows(f->db, 100, 10), SQLITE_FULL);
	fail_wal_writes = 0;
	assert_int_equal(insert_rows(f->db, 200, 10), SQLITE_OK);
	sqlite3_close(f->db);

	open_db(f->path, "unix", &f->db);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 20);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t WHERE k >= 100 AND k < 110"), 0);
}

/* Commits of 1 to 88 rows (some end just past what one write takes), then
 * a transaction under way, its pages spilled, never committed. */
static int commits_then_one_under_way(sqlite3 *db)
{
	for (int round = 0, first = 0; round < 30; first += 1 + 3 * round, round++)
		if (insert_rows(db, first, 1 + 3 * round) != SQLITE_OK)
			return 3;
	sqlite3_exec(db, "PRAGMA cache_size=10; BEGIN", NULL, NULL, NULL);
	for (int k = 5000; k < 5400; k++) {
		char sql[96];
		snprintf(sql, sizeof(sql), "INSERT INTO t(k, v) VALUES(%d, zeroblob(1000))", k);
		sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	return 0;
}

/* A process that dies without closing (as under kill -9) keeps every
 * commit it made, and only those. */
static void test_a_dead_writer_keeps_its_commits(void **state)
{
	fixture *f = *state;

	in_a_writer_that_dies(f, commits_then_one_under_way);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t"), 1335); /* 30 + 3 * (0 + 1 + ... + 29) */
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM t WHERE k >= 5000"), 0);
	assert_int_equal(scalar(f->db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}

int main(void)
{
	counting_vfs_install();
	assert_non_null(store_wal_writes_vfs(0));
	assert_non_null(store_wal_writes_vfs(1));
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_a_commit_is_one_write, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_large_commit_in_few_writes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_readers_see_every_commit, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_commits_of_every_size_reach_the_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_spilled_commit_survives_its_writer, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_rollback_after_a_spill, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_failed_write_fails_the_commit, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_dead_writer_keeps_its_commits, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
