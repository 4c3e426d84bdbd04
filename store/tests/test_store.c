/* store: the tasks table as queue, pending table and results, on a real
 * SQLite file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>
#include <sqlite3.h>

#include "common/common.h"
#include "store/store.h"
#include "store/store_int.h" /* store__int_query */
#include "store/task_records.h"

/* store_tasks_insert with the arguments packed as it takes them. */
static int insert_args(store *st, int64_t job, int64_t base, size_t n, char *const *args, const size_t *lens)
{
	size_t *offs = calloc(n + 1, sizeof(*offs));
	cm_buf text;
	int err;

	cm_buf_init(&text);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(cm_buf_append(&text, args[i], lens[i]), CM_OK);
		offs[i + 1] = text.len;
	}
	err = store_tasks_insert(st, job, base, n, text.data, offs);
	cm_buf_fini(&text);
	free(offs);
	return err;
}

typedef struct fixture {
	char dir[64];
	char path[96];
	store *st;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	char detail[256] = "";

	snprintf(f->dir, sizeof(f->dir), "/tmp/strand-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/t.db", f->dir);
	assert_int_equal(store_open(f->path, 1, &f->st, detail, sizeof(detail)), CM_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];

	store_close(f->st);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Inserts job 1 with n tasks "0".."n-1" at base 1. */
static void insert_job(store *st, int n)
{
	char **args = calloc((size_t)n, sizeof(char *));
	size_t *lens = calloc((size_t)n, sizeof(size_t));
	store_job j = {.num = 1,
	               .id = "j-1",
	               .pool_id = "p-1",
	               .function = "echo",
	               .state = "running",
	               .base = 1,
	               .total = n,
	               .chunksize = 1,
	               .created_ms = 1};

	for (int i = 0; i < n; i++) {
		args[i] = malloc(16);
		lens[i] = (size_t)snprintf(args[i], 16, "%d", i);
	}
	assert_int_equal(store_begin(st), CM_OK);
	assert_int_equal(store_pool_insert(st, "p-1", "{}", "active", 1), CM_OK);
	assert_int_equal(store_job_insert(st, &j), CM_OK);
	assert_int_equal(insert_args(st, 1, 1, (size_t)n, args, lens), CM_OK);
	assert_int_equal(store_commit(st), CM_OK);
	for (int i = 0; i < n; i++)
		free(args[i]);
	free(args);
	free(lens);
}

/* A result from worker (NULL: the gateway's verdict), as the engine
 * records a pull's: the worker looked up, then the result recorded. */
static int complete(store *st, int64_t id, int64_t seq, int ok, const void *value, size_t len, const char *worker,
                    int *recorded)
{
	int64_t from = STORE_FROM_GATEWAY;
	int err = worker ? store_holder_ref(st, worker, &from) : CM_OK;

	*recorded = 0;
	return err == CM_OK ? store_task_complete_from(st, id, seq, ok, value, len, from, recorded) : err;
}

typedef struct seen {
	int64_t ids[64];
	int attempts[64];
	char args[64][16];
	int n;
} seen;

static int on_task(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	seen *s = ctx;

	s->ids[s->n] = id;
	s->attempts[s->n] = attempts;
	if (arg)
		snprintf(s->args[s->n], 16, "%.*s", (int)len, (const char *)arg);
	s->n++;
	return CM_OK;
}

/* Assigns [lo, hi] to worker; on_task takes every queued task, so the
 * store reports the whole range taken. */
static void assign_all(store *st, int64_t lo, int64_t hi, const char *worker, seen *s)
{
	int64_t next = -1;

	assert_int_equal(store_tasks_assign(st, lo, hi, worker, on_task, s, &next), CM_OK);
	assert_int_equal(next, hi + 1);
}

typedef struct budget {
	seen seen;
	size_t left; /* bytes of arguments it takes */
} budget;

static int on_task_within(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	budget *b = ctx;

	if (len > b->left)
		return STORE_TASK_LEAVE;
	b->left -= len;
	return on_task(&b->seen, id, arg, len, attempts);
}

static int on_result(void *ctx, const store_result *r)
{
	seen *s = ctx;

	s->ids[s->n] = r->index;
	s->attempts[s->n] = (int)r->seq;
	snprintf(s->args[s->n], 16, "%.*s", (int)r->len, r->value);
	s->n++;
	return CM_OK;
}

static void test_assign_marks_pending_once(void **state)
{
	fixture *f = *state;
	seen a = {0}, b = {0};

	insert_job(f->st, 10);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 4, "w-a", &a);
	/* Already pending: a second assignment of the same range gets nothing. */
	assign_all(f->st, 1, 4, "w-b", &b);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(a.n, 4);
	assert_int_equal(b.n, 0);
	assert_int_equal(a.ids[0], 1);
	assert_string_equal(a.args[3], "3");
	assert_int_equal(a.attempts[0], 1);
}

static void test_assign_leaves_what_fn_refuses(void **state)
{
	fixture *f = *state;
	budget b = {.left = 3}; /* arguments "0" .. "9": three of them */
	seen rest = {0};
	int64_t next = -1;

	insert_job(f->st, 10);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_tasks_assign(f->st, 2, 8, "w-a", on_task_within, &b, &next), CM_OK);
	assert_int_equal(b.seen.n, 3);
	assert_int_equal(b.seen.ids[2], 4);
	assert_int_equal(next, 5);
	/* What it left is still queued, attempts untouched; what it took is not. */
	assign_all(f->st, 1, 10, "w-b", &rest);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(rest.n, 7);
	int64_t want[] = {1, 5, 6, 7, 8, 9, 10};
	for (int i = 0; i < 7; i++) {
		assert_int_equal(rest.ids[i], want[i]);
		assert_int_equal(rest.attempts[i], 1);
	}
	int64_t held = 0;
	assert_int_equal(store_tasks_held_count(f->st, "w-a", &held), CM_OK);
	assert_int_equal(held, 3);
}

typedef struct job_counts {
	int64_t done[4], failed[4], ended_ms[4];
	char state[4][16];
} job_counts;

static void on_job_counts(void *ctx, const store_job *j)
{
	job_counts *c = ctx;

	c->done[j->num] = j->done;
	c->failed[j->num] = j->failed;
	c->ended_ms[j->num] = j->ended_ms;
	snprintf(c->state[j->num], sizeof(c->state[j->num]), "%s", j->state);
}

/* What a start loads of each job: a running job's results and failures
 * counted, a done one's taken as all of its tasks, and when it ended. */
static void test_job_counts_loaded(void **state)
{
	fixture *f = *state;
	seen a = {0};
	job_counts c = {0};
	int rec;
	store_job done = {.num = 2,
	                  .id = "j-2",
	                  .pool_id = "p-1",
	                  .function = "echo",
	                  .state = "running",
	                  .base = 11,
	                  .total = 2,
	                  .chunksize = 1,
	                  .created_ms = 1};
	char *args[] = {"a", "b"};
	size_t lens[] = {1, 1};

	insert_job(f->st, 10); /* job 1: ids 1..10 */
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_insert(f->st, &done), CM_OK);
	assert_int_equal(insert_args(f->st, 2, 11, 2, args, lens), CM_OK);
	assign_all(f->st, 1, 12, "w-a", &a);
	assert_int_equal(complete(f->st, 1, 1, 1, "1", 1, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 2, 2, 0, "bad", 3, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 3, 3, 1, "3", 1, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 11, 1, 0, "bad", 3, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 12, 2, 1, "b", 1, NULL, &rec), CM_OK);
	assert_int_equal(store_job_set_state(f->st, 2, "done", 5), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_job_each(f->st, on_job_counts, &c), CM_OK);
	assert_int_equal(c.done[1], 3);
	assert_int_equal(c.failed[1], 1);
	assert_int_equal(c.done[2], 2);
	assert_int_equal(c.failed[2], 1);
	assert_int_equal(c.ended_ms[2], 5);
}

/* The integer sql answers on its own connection to the database at path
 * (what a reader sees committed). */
static int64_t file_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

typedef struct input_counts {
	int64_t total[4], done[4], failed[4];
} input_counts;

static void on_job_inputs(void *ctx, const store_job *j)
{
	input_counts *c = ctx;

	c->total[j->num] = j->inputs_total;
	c->done[j->num] = j->inputs_done;
	c->failed[j->num] = j->inputs_failed;
}

/* A job whose tasks carry several inputs: each task's count read back in
 * task order whatever the order its parts were stored in (a task not
 * stored yet has 0), its counts by input loaded as last written, a cut
 * total kept, and its rows gone with the job; a job of one input a task
 * has none. */
static void test_inputs_by_task(void **state)
{
	fixture *f = *state;
	input_counts c = {0};
	uint32_t part1[] = {3, 1}, part2[] = {250, 7}, got[6];
	int done = 0;
	store_job sj = {.num = 2,
	                .id = "j-2",
	                .pool_id = "p-1",
	                .function = "rt:pickle",
	                .state = "running",
	                .base = 11,
	                .total = 5,
	                .chunksize = 1,
	                .created_ms = 1,
	                .inputs_total = 400};

	insert_job(f->st, 10); /* job 1: one input a task */
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_insert(f->st, &sj), CM_OK);
	assert_int_equal(store_job_inputs_add(f->st, 2, 2, 2, part2), CM_OK);
	assert_int_equal(store_job_inputs_add(f->st, 2, 0, 2, part1), CM_OK);
	assert_int_equal(store_job_inputs_add(f->st, 2, 4, 0, part1), CM_OK); /* nothing */
	assert_int_equal(store_job_inputs_count(f->st, 2, 254, 9), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	memset(got, 0xff, sizeof(got));
	assert_int_equal(store_job_inputs_read(f->st, 2, 5, got), CM_OK);
	assert_int_equal(got[0], 3);
	assert_int_equal(got[1], 1);
	assert_int_equal(got[2], 250);
	assert_int_equal(got[3], 7);
	assert_int_equal(got[4], 0);
	assert_int_equal(got[5], 0xffffffffu); /* past total: untouched */
	assert_int_equal(store_job_each(f->st, on_job_inputs, &c), CM_OK);
	assert_int_equal(c.total[1], 0);
	assert_int_equal(c.done[1], 0);
	assert_int_equal(c.total[2], 400);
	assert_int_equal(c.done[2], 254);
	assert_int_equal(c.failed[2], 9);

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_set_total(f->st, 2, 4, 261), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_job_each(f->st, on_job_inputs, &c), CM_OK);
	assert_int_equal(c.total[2], 261);
	assert_int_equal(file_int(f->path, "SELECT total FROM jobs WHERE num = 2"), 4);

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_forget(f->st, 2), CM_OK);
	assert_int_equal(store_job_delete(f->st, 2, 10, &done), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(done, 1);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM job_inputs"), 0);
}

/* Removing a job: forgotten at once (its idempotency key free, its state
 * "deleting" for a start to resume), its tasks by ranges, then its result
 * groups a few at a time, and the row with the last of them. */
static void test_job_removed_by_ranges(void **state)
{
	fixture *f = *state;
	seen rest = {0};
	char id[20];
	store_job kept = {.num = 2,
	                  .id = "j-2",
	                  .pool_id = "p-1",
	                  .function = "echo",
	                  .idem_key = "key",
	                  .state = "done",
	                  .base = 11,
	                  .total = 0,
	                  .chunksize = 1,
	                  .created_ms = 1};

	char *args[2] = {"a", "b"};
	size_t lens[2] = {1, 1};

	int done = 0;

	insert_job(f->st, 10);
	for (int k = 1; k <= 3; k++) { /* three results in three commits: three groups */
		seen one = {0};
		int rec = 0;
		assert_int_equal(store_begin(f->st), CM_OK);
		assign_all(f->st, k, k, "w-a", &one);
		assert_int_equal(complete(f->st, k, k, 1, "1", 1, "w-a", &rec), CM_OK);
		assert_int_equal(rec, 1);
		assert_int_equal(store_commit(f->st), CM_OK);
	}
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM results WHERE job = 1"), 3);
	kept.total = 2;
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_insert(f->st, &kept), CM_OK);
	assert_int_equal(insert_args(f->st, 2, 11, 2, args, lens), CM_OK);
	assert_int_equal(store_job_forget(f->st, 2), CM_OK);
	assert_int_equal(store_job_find_idem(f->st, "p-1", "key", id), CM_ENOENT);
	assert_int_equal(store_job_delete(f->st, 1, 2, &done), CM_OK); /* not forgotten: it stays whole */
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM results WHERE job = 1"), 3);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_forget(f->st, 1), CM_OK);
	/* Job 1's ids by slices, as the engine removes them: its tasks go,
	 * job 2's (ids 11 and 12) stay. */
	assert_int_equal(store_tasks_delete(f->st, 1, 4), CM_OK);
	assert_int_equal(store_tasks_delete(f->st, 5, 10), CM_OK);
	assign_all(f->st, 1, 12, "w-a", &rest);
	assert_int_equal(rest.n, 2);
	assert_int_equal(rest.ids[0], 11);
	assert_int_equal(rest.ids[1], 12);
	assert_int_equal(store_job_delete(f->st, 1, 2, &done), CM_OK); /* two groups of three */
	assert_int_equal(done, 0);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM results WHERE job = 1"), 1);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM jobs WHERE num = 1"), 1);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_delete(f->st, 1, 2, &done), CM_OK); /* the last, and the row */
	assert_int_equal(done, 1);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM results WHERE job = 1"), 0);
	job_counts c = {0};
	c.done[1] = c.done[2] = -1;
	assert_int_equal(store_job_each(f->st, on_job_counts, &c), CM_OK);
	assert_int_equal(c.done[1], -1); /* gone */
	assert_string_equal(c.state[2], "deleting");
}

/* Commits job num with n tasks from base, each argument len bytes of 'x'. */
static void insert_big_job(store *st, int64_t num, int64_t base, int n, size_t len)
{
	char **args = calloc((size_t)n, sizeof(char *));
	size_t *lens = calloc((size_t)n, sizeof(size_t));
	char *arg = malloc(len);
	char id[24];
	store_job big = {.num = num,
	                 .id = id,
	                 .pool_id = "p-1",
	                 .function = "echo",
	                 .state = "running",
	                 .base = base,
	                 .total = n,
	                 .chunksize = 1,
	                 .created_ms = 1};

	snprintf(id, sizeof(id), "j-%lld", (long long)num);
	memset(arg, 'x', len);
	for (int i = 0; i < n; i++) {
		args[i] = arg;
		lens[i] = len;
	}
	assert_int_equal(store_begin(st), CM_OK);
	assert_int_equal(store_job_insert(st, &big), CM_OK);
	assert_int_equal(insert_args(st, num, base, (size_t)n, args, lens), CM_OK);
	assert_int_equal(store_commit(st), CM_OK);
	free(arg);
	free(args);
	free(lens);
}

/* The pages a removed job freed go back to the file system by slices
 * (incremental vacuum), in the writer's transactions: the file shrinks to
 * about what it kept, and what it kept reads back whole. */
static void test_vacuum_gives_freed_pages_back(void **state)
{
	fixture *f = *state;
	int n = 20000;
	int64_t left = 0;
	int steps = 0;
	seen kept = {0};

	assert_int_equal(file_int(f->path, "PRAGMA auto_vacuum"), 2); /* a new file: incremental */
	insert_job(f->st, 10); /* job 1: ids 1..10, kept */
	insert_big_job(f->st, 2, 11, n, 511);
	int64_t full = file_int(f->path, "PRAGMA page_count");
	assert_true(full > 2500); /* 10 MB of arguments in 4 KiB pages */

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_forget(f->st, 2), CM_OK);
	assert_int_equal(store_tasks_delete(f->st, 11, 10 + n), CM_OK);
	int done = 0;
	assert_int_equal(store_job_delete(f->st, 2, 16, &done), CM_OK);
	assert_int_equal(done, 1);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "PRAGMA page_count"), full); /* freed, not given back */
	int64_t freed = file_int(f->path, "PRAGMA freelist_count");
	assert_true(freed > 2500);
	do {
		assert_int_equal(store_begin(f->st), CM_OK);
		assert_int_equal(store_vacuum_step(f->st, 256, &left), CM_OK);
		assert_int_equal(store_commit(f->st), CM_OK);
		steps++;
	} while (left >= 256);
	/* 256 pages a step (pointer-map pages freed with them make it a few
	 * more), until fewer than a step's are left */
	assert_true(steps >= freed / 300 && steps <= (freed + 255) / 256);
	assert_true(left < 256);
	assert_int_equal(file_int(f->path, "PRAGMA freelist_count"), left);
	assert_true(file_int(f->path, "PRAGMA page_count") <= full - freed + 256);
	assign_all(f->st, 1, 10 + n, "w-a", &kept);
	assert_int_equal(kept.n, 10);
	assert_int_equal(kept.ids[9], 10);
}

/* What the writer commits reaches the database file by checkpoints made
 * beside it (store_checkpoint.c), not by the commit itself: 10 MB committed
 * in one transaction reach the file (within 20 s: the log is looked at
 * every 5 s below 32 MiB) while the writer does nothing more. */
static void test_checkpoints_run_beside_the_writer(void **state)
{
	fixture *f = *state;
	int n = 20000;
	struct stat sb = {0};

	insert_big_job(f->st, 1, 1, n, 512);
	for (int i = 0; i < 2000 && sb.st_size < (off_t)n * 512; i++) {
		usleep(10000);
		assert_int_equal(stat(f->path, &sb), 0);
	}
	assert_true(sb.st_size >= (off_t)n * 512);
}

/* The log's length in pages: mxFrame of the wal-index header, the u32 at
 * offset 16 of the -shm file (SQLite's file format, "The WAL-Index File
 * Format"), in the machine's byte order. Only a STORE_SHARED database has
 * that file. */
static uint32_t log_frames(const char *db_path)
{
	char shm[300];
	uint32_t frames = 0;
	int fd;

	snprintf(shm, sizeof(shm), "%s-shm", db_path);
	assert_true((fd = open(shm, O_RDONLY)) >= 0);
	assert_int_equal(pread(fd, &frames, sizeof(frames), 16), (ssize_t)sizeof(frames));
	close(fd);
	return frames;
}

/* Under steady commits the log starts again: the checkpoints beside the
 * writer never catch a moment when all of it was copied, so one that
 * reaches 32,768 pages is checkpointed by the writer itself, and its next
 * write starts the log from the beginning. Commits of 12 pages, back to
 * back, make a log of 32,768 pages and what one run of the checkpoint
 * thread lets through (it holds the writer's checkpoint off), never more
 * than half as much again (the writer then waits for the run); kicked at
 * every commit, the thread kept the log from starting
 * again and it grew past 88,000. The file is not cut when the log starts
 * again (it was, to 64 MiB, holding the writer 28 ms each time): it keeps
 * the length of the longest log. */
static void test_the_log_starts_again_under_steady_commits(void **state)
{
	fixture *f = *state;
	uint32_t longest = 0, frames = 0, restarts = 0;
	char detail[256] = "", wal[300];
	struct stat sb;

	/* Shared, for the -shm file this reads the log's length from. */
	store_close(f->st);
	assert_int_equal(store_open(f->path, STORE_WRITER | STORE_SHARED, &f->st, detail, sizeof(detail)), CM_OK);

	/* Until it started again twice: some 6,400 commits on an idle machine;
	 * more while other tests hold the checkpoint thread back. */
	for (int i = 0; i < 60000 && restarts < 2; i++) {
		insert_big_job(f->st, i + 1, (int64_t)i * 8 + 1, 8, 2000);
		uint32_t now = log_frames(f->path);
		restarts += now < frames;
		frames = now;
		longest = now > longest ? now : longest;
	}
	assert_true(restarts >= 2);
	/* The writer's own checkpoints, right after its commits, find the
	 * thread's run going (SQLITE_BUSY) while it is starved of the CPU; at
	 * one and a half times the cap the writer waits for the run to end. */
	if (longest >= 2 * STORE_LOG_CAP_FRAMES)
		fail_msg("the log reached %u pages (the writer checkpoints from %d) in %u restarts", longest,
		         STORE_LOG_CAP_FRAMES, restarts);
	/* Just started again: a log of a few pages, in a file of the longest
	 * one's length, up to the limit. The longest is 32,768 pages or more on
	 * an idle machine; the thread may have caught up sooner on a busy one. */
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(frames < 1000);
	long long longest_bytes = 32 + longest * STORE_LOG_FRAME_BYTES;
	assert_true(sb.st_size >= (longest_bytes < STORE_LOG_LIMIT_BYTES ? longest_bytes : STORE_LOG_LIMIT_BYTES));
}

static void test_result_recorded_exactly_once(void **state)
{
	fixture *f = *state;
	seen a = {0};
	int rec = -1;

	insert_job(f->st, 3);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 3, "w-a", &a);
	assert_int_equal(complete(f->st, 2, 1, 1, "\"x\"", 3, NULL, &rec), CM_OK);
	assert_int_equal(rec, 1);
	assert_int_equal(complete(f->st, 2, 2, 1, "\"y\"", 3, NULL, &rec), CM_OK);
	assert_int_equal(rec, 0); /* a re-sent result is dropped */
	assert_int_equal(complete(f->st, 999, 3, 1, "1", 1, NULL, &rec), CM_OK);
	assert_int_equal(rec, 0); /* no such task */
	assert_int_equal(store_commit(f->st), CM_OK);
}

static void test_result_only_from_the_holder(void **state)
{
	fixture *f = *state;
	seen a = {0};
	int rec = -1;

	insert_job(f->st, 3);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 2, "w-a", &a);
	/* Another worker's forgery, for a task held and for one held by none. */
	assert_int_equal(complete(f->st, 1, 1, 1, "\"forged\"", 8, "w-b", &rec), CM_OK);
	assert_int_equal(rec, 0);
	assert_int_equal(complete(f->st, 3, 1, 1, "\"forged\"", 8, "w-a", &rec), CM_OK);
	assert_int_equal(rec, 0);
	assert_int_equal(complete(f->st, 1, 1, 1, "\"real\"", 6, "w-a", &rec), CM_OK);
	assert_int_equal(rec, 1);
	assert_int_equal(store_commit(f->st), CM_OK);
}

static void test_results_input_order_stops_at_gap(void **state)
{
	fixture *f = *state;
	seen a = {0}, r = {0};
	int rec;
	int64_t next = -1;

	insert_job(f->st, 5);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 5, "w-a", &a);
	/* Results for indexes 0, 1, 3, 4 (ids 1, 2, 4, 5); index 2 missing. */
	assert_int_equal(complete(f->st, 4, 1, 1, "30", 2, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 1, 2, 1, "0", 1, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 2, 3, 0, "bad", 3, NULL, &rec), CM_OK);
	assert_int_equal(complete(f->st, 5, 4, 1, "40", 2, NULL, &rec), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);

	assert_int_equal(store_results_input(f->st, 1, 1, 5, 0, 100, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 2); /* imap: stops before the missing index 2 */
	assert_int_equal(next, 2);
	assert_string_equal(r.args[1], "bad");

	memset(&r, 0, sizeof(r));
	assert_int_equal(store_results_completion(f->st, 1, 0, 3, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 3); /* limit */
	assert_int_equal(r.ids[0], 3); /* index of the first completed task */
	assert_int_equal(next, 3);
	memset(&r, 0, sizeof(r));
	assert_int_equal(store_results_completion(f->st, 1, next, 100, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.ids[0], 4);
	assert_int_equal(next, 4);
}

static int on_failure(void *ctx, const store_failure *f)
{
	seen *s = ctx;

	s->ids[s->n] = f->index;
	s->attempts[s->n] = (int)f->attempts;
	snprintf(s->args[s->n], 16, "%.*s", (int)f->len, f->error);
	s->n++;
	return CM_OK;
}

/* A worker forgotten (its pool's view no longer shows it) leaves no row and
 * no holder behind, unless a task record still names it; a deleted pool
 * takes its workers' holders along. */
static void test_forgotten_workers_leave_nothing(void **state)
{
	fixture *f = *state;
	seen a = {0};
	int rec;

	insert_job(f->st, 5);
	assert_int_equal(store_begin(f->st), CM_OK);
	for (int i = 0; i < 3; i++) {
		char id[8];
		snprintf(id, sizeof(id), "w-%c", 'a' + i);
		assert_int_equal(store_worker_insert(f->st, id, "p-1", "1", "hash", 1), CM_OK);
	}
	assign_all(f->st, 1, 2, "w-a", &a);
	assign_all(f->st, 3, 4, "w-b", &a);
	assign_all(f->st, 5, 5, "w-c", &a);
	assert_int_equal(complete(f->st, 1, 1, 1, "0", 1, "w-a", &rec), CM_OK);
	assert_int_equal(complete(f->st, 2, 2, 1, "1", 1, "w-a", &rec), CM_OK);
	assert_int_equal(complete(f->st, 3, 3, 1, "2", 1, "w-b", &rec), CM_OK); /* w-b still holds task 4 */
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM holders"), 3);

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_worker_forget(f->st, "w-a"), CM_OK);
	assert_int_equal(store_worker_forget(f->st, "w-b"), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM workers"), 1);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM holders WHERE name = 'w-a'"), 0);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM holders WHERE name = 'w-b'"), 1);
	/* Its task still counts as held by it: its result is taken. */
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(complete(f->st, 4, 4, 1, "3", 1, "w-b", &rec), CM_OK);
	assert_int_equal(rec, 1);
	/* w-c is still listed: the pool's delete takes its holder along. */
	assert_int_equal(complete(f->st, 5, 5, 1, "4", 1, "w-c", &rec), CM_OK);
	assert_int_equal(store_pool_delete(f->st, "p-1"), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM holders WHERE name = 'w-c'"), 0);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM workers"), 0);
}

typedef struct failure_seen {
	int n;
	int64_t index[8], run_us[8];
	char error[8][16], worker[8][24], arg[8][16];
} failure_seen;

static int on_failure_facts(void *ctx, const store_failure *f)
{
	failure_seen *s = ctx;

	s->index[s->n] = f->index;
	s->run_us[s->n] = f->run_us;
	snprintf(s->error[s->n], 16, "%.*s", (int)f->len, f->error);
	snprintf(s->worker[s->n], 24, "%s", f->worker ? f->worker : "(none)");
	snprintf(s->arg[s->n], 16, "%.*s", (int)f->arg_len, f->arg ? f->arg : "");
	s->n++;
	return CM_OK;
}

/* A failed task is read back with its input, and where and how long it
 * ran when that was noted (not for the gateway's own verdicts); the notes
 * go with the job's tasks. */
static void test_failures_with_their_input_worker_and_time(void **state)
{
	fixture *f = *state;
	seen a = {0};
	failure_seen fs = {0};
	int rec;
	int64_t next = -1;

	insert_job(f->st, 5);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 5, "w-a", &a);
	assert_int_equal(complete(f->st, 2, 1, 0, "boom", 4, "w-a", &rec), CM_OK);
	assert_int_equal(rec, 1);
	assert_int_equal(store_failure_note(f->st, 2, "w-a", 1500), CM_OK);
	assert_int_equal(complete(f->st, 3, 2, 1, "2", 1, "w-a", &rec), CM_OK);
	assert_int_equal(complete(f->st, 5, 3, 0, "timed out", 9, NULL, &rec), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);

	assert_int_equal(store_results_failed(f->st, 1, 1, 5, 0, 10, on_failure_facts, &fs, &next), CM_OK);
	assert_int_equal(fs.n, 2);
	assert_int_equal(next, 5);
	assert_int_equal(fs.index[0], 1);
	assert_string_equal(fs.error[0], "boom");
	assert_string_equal(fs.arg[0], "1");
	assert_string_equal(fs.worker[0], "w-a");
	assert_int_equal(fs.run_us[0], 1500);
	assert_int_equal(fs.index[1], 4);
	assert_string_equal(fs.error[1], "timed out");
	assert_string_equal(fs.arg[1], "4");
	assert_string_equal(fs.worker[1], "(none)");
	assert_int_equal(fs.run_us[1], -1);

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_tasks_delete(f->st, 1, 5), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM failure_notes"), 0);
}

/* A database of schema 8 held its task records fixed, 12 bytes a task:
 * opened now, they read as they were (results in both orders, failures,
 * the tasks a worker holds), and the chunk is written as runs once it
 * changes. */
static void test_reads_fixed_records_of_before(void **state)
{
	fixture *f = *state;
	seen a = {0}, r = {0}, failed = {0}, back = {0};
	char detail[256] = "";
	int64_t next;
	int rec;
	sqlite3 *db;
	sqlite3_stmt *q;

	insert_job(f->st, 5);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 5, "w-a", &a);
	assert_int_equal(complete(f->st, 1, 1, 1, "0", 1, "w-a", &rec), CM_OK);
	assert_int_equal(complete(f->st, 2, 2, 0, "bad", 3, "w-a", &rec), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	store_close(f->st);
	f->st = NULL;

	/* The chunk's records rewritten as a gateway of schema 8 wrote them. */
	trec t[5];
	uint8_t fixed[5 * RECORDS_FIXED_BYTES] = {0};
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT tasks FROM chunk_state WHERE id = 1", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(((const uint8_t *)sqlite3_column_blob(q, 0))[0], RECORDS_RUNS);
	assert_int_equal(task_records_decode(t, 5, sqlite3_column_blob(q, 0), (size_t)sqlite3_column_bytes(q, 0)),
	                 CM_OK);
	sqlite3_finalize(q);
	for (int i = 0; i < 5; i++) {
		uint8_t *p = fixed + i * RECORDS_FIXED_BYTES;
		p[0] = t[i].state;
		p[1] = t[i].ok;
		p[2] = (uint8_t)t[i].attempts;
		for (int b = 0; b < 8; b++)
			p[4 + b] = (uint8_t)((uint64_t)t[i].x >> (8 * b));
	}
	assert_int_equal(sqlite3_prepare_v2(db, "UPDATE chunk_state SET tasks = ? WHERE id = 1", -1, &q, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(q, 1, fixed, sizeof(fixed), SQLITE_STATIC);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	/* ... whose secrets' columns had their names of then, and jobs no name. */
	assert_int_equal(sqlite3_exec(db,
	                              "ALTER TABLE workers RENAME COLUMN secret_sha256 TO secret;"
	                              "ALTER TABLE processes RENAME COLUMN secret_sha256 TO secret;"
	                              "ALTER TABLE jobs DROP COLUMN name;"
	                              "ALTER TABLE jobs DROP COLUMN inputs_total;"
	                              "ALTER TABLE jobs DROP COLUMN inputs_done;"
	                              "ALTER TABLE jobs DROP COLUMN inputs_failed;"
	                              "DROP TABLE job_inputs;"
	                              "ALTER TABLE pools DROP COLUMN workers_forgotten;"
	                              "ALTER TABLE pools DROP COLUMN lost_forgotten;"
	                              "DROP INDEX queue_items_by_hold;"
	                              "ALTER TABLE queue_items DROP COLUMN hold;"
	                              "ALTER TABLE workers DROP COLUMN output_next;"
	                              "ALTER TABLE queues DROP COLUMN lease;"
	                              "PRAGMA user_version = 8",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_open(f->path, 1, &f->st, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store_results_input(f->st, 1, 1, 5, 0, 100, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.args[0], "0");
	assert_string_equal(r.args[1], "bad");
	assert_int_equal(next, 2);
	assert_int_equal(store_results_failed(f->st, 1, 1, 5, 0, 10, on_failure, &failed, &next), CM_OK);
	assert_int_equal(failed.n, 1);
	assert_int_equal(failed.ids[0], 1);
	assert_string_equal(failed.args[0], "bad");
	int64_t held = -1;
	assert_int_equal(store_tasks_held_count(f->st, "w-a", &held), CM_OK);
	assert_int_equal(held, 3);
	/* w-a still holds ids 3 to 5: its result counts, another's does not. */
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(complete(f->st, 3, 3, 1, "2", 1, "w-b", &rec), CM_OK);
	assert_int_equal(rec, 0);
	assert_int_equal(complete(f->st, 3, 3, 1, "2", 1, "w-a", &rec), CM_OK);
	assert_int_equal(rec, 1);
	assert_int_equal(store_tasks_requeue(f->st, "w-a", on_task, &back), CM_OK);
	assert_int_equal(back.n, 2);
	assert_int_equal(back.ids[0], 4);
	assert_int_equal(back.ids[1], 5);
	assert_int_equal(store_commit(f->st), CM_OK);

	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT tasks FROM chunk_state WHERE id = 1", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(((const uint8_t *)sqlite3_column_blob(q, 0))[0], RECORDS_RUNS); /* written as runs */
	assert_true(sqlite3_column_bytes(q, 0) < (int)sizeof(fixed));
	sqlite3_finalize(q);
	sqlite3_close(db);
}

static void test_requeue_returns_pending_tasks(void **state)
{
	fixture *f = *state;
	seen a = {0}, q = {0}, again = {0};
	int rec;

	insert_job(f->st, 6);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 3, "w-a", &a);
	assign_all(f->st, 4, 6, "w-b", &a);
	assert_int_equal(complete(f->st, 2, 1, 1, "1", 1, NULL, &rec), CM_OK);
	assert_int_equal(store_tasks_requeue(f->st, "w-a", on_task, &q), CM_OK);
	assert_int_equal(q.n, 2); /* ids 1 and 3; 2 has its result */
	assert_int_equal(q.ids[0], 1);
	assert_int_equal(q.ids[1], 3);
	assert_int_equal(q.attempts[0], 1);
	/* Back in the queue: assignable again, attempts counted up. */
	assign_all(f->st, 1, 3, "w-c", &again);
	assert_int_equal(again.n, 2);
	assert_int_equal(again.attempts[0], 2);
	assert_int_equal(store_commit(f->st), CM_OK);
}

static void test_idempotency_and_reload(void **state)
{
	fixture *f = *state;
	char id[20];
	int64_t job_num, task_id;
	store *reader;
	char detail[256] = "";
	seen r = {0};
	int64_t next;
	int rec;
	store_job j = {.num = 2,
	               .id = "j-2",
	               .pool_id = "p-1",
	               .function = "echo",
	               .idem_key = "key",
	               .state = "running",
	               .base = 100,
	               .total = 0,
	               .chunksize = 1,
	               .created_ms = 1};

	insert_job(f->st, 2);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_job_insert(f->st, &j), CM_OK);
	assert_int_equal(store_job_find_idem(f->st, "p-1", "key", id), CM_OK);
	assert_string_equal(id, "j-2");
	assert_int_equal(store_job_find_idem(f->st, "p-1", "other", id), CM_ENOENT);
	assert_int_equal(complete(f->st, 1, 1, 1, "7", 1, NULL, &rec), CM_OK);
	/* A reader sees nothing uncommitted. */
	assert_int_equal(store_open(f->path, 0, &reader, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store_results_input(reader, 1, 1, 2, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 0);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_results_input(reader, 1, 1, 2, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 1);
	store_close(reader);
	assert_int_equal(store_next_ids(f->st, &job_num, &task_id), CM_OK);
	assert_int_equal(job_num, 3);
	assert_int_equal(task_id, 100); /* past every job's ids, though j-2 has no task yet */
}

static void test_cancel_fills_every_missing_result(void **state)
{
	fixture *f = *state;
	seen a = {0}, r = {0};
	int rec;
	int64_t n = 0, next;

	insert_job(f->st, 4);
	assert_int_equal(store_begin(f->st), CM_OK);
	assign_all(f->st, 1, 2, "w-a", &a);
	assert_int_equal(complete(f->st, 2, 1, 1, "5", 1, NULL, &rec), CM_OK);
	/* In two slices, as the engine does it. */
	assert_int_equal(store_job_cancel(f->st, 1, 2, 2, "cancelled", &n), CM_OK);
	assert_int_equal(n, 1); /* task 1, pending */
	assert_int_equal(store_job_cancel(f->st, 3, 4, 3, "cancelled", &n), CM_OK);
	assert_int_equal(n, 2); /* two queued */
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_results_input(f->st, 1, 1, 4, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 4);
	assert_int_equal(next, 4);
	assert_string_equal(r.args[0], "cancelled");
	assert_string_equal(r.args[1], "5");
	memset(&r, 0, sizeof(r));
	assert_int_equal(store_results_completion(f->st, 1, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 4); /* seqs unique: all four come back once */
	/* ... and dense, in id order after the one recorded: 1 (task 2), 2, 3, 4. */
	int64_t want[] = {1, 0, 2, 3};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r.ids[i], want[i]); /* index */
		assert_int_equal(r.attempts[i], i + 1); /* seq */
	}
	assert_int_equal(next, 4);
}

typedef struct loaded_worker {
	int n;
	char id[20], secret[80];
	int64_t output_next;
} loaded_worker;

static void on_worker(void *ctx, const char *id, const char *pool_id, const char *handle, const char *state,
                      const char *secret, int64_t started_ms, int64_t output_next)
{
	loaded_worker *w = ctx;

	(void)pool_id;
	(void)handle;
	(void)state;
	(void)started_ms;
	w->n++;
	if (strcmp(id, "w-old") == 0) {
		snprintf(w->id, sizeof(w->id), "%s", id);
		snprintf(w->secret, sizeof(w->secret), "%s", secret ? secret : "(null)");
		w->output_next = output_next;
	}
}

static void on_pool(void *ctx, const char *id, const char *spec_json, const char *state, const char *reason,
                    int64_t created_ms)
{
	(void)spec_json;
	(void)state;
	(void)reason;
	(void)created_ms;
	snprintf(ctx, 20, "%s", id);
}

/* A big job through the store's chunks: many more chunks than it keeps in
 * memory, over several transactions, one of them rolled back. Every task is
 * handed out once, every result recorded once with its value, in input and
 * in completion order, and what was rolled back is not there. */
typedef struct tally {
	int64_t n, sum_index, bad;
	int64_t last_seq; /* completion order: seqs rise */
	int by_seq;
} tally;

static int count_task(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	tally *t = ctx;
	char want[24];

	snprintf(want, sizeof(want), "%lld", (long long)(id - 1));
	t->bad += attempts != 1 || len != strlen(want) || memcmp(arg, want, len) != 0;
	t->n++;
	return CM_OK;
}

static int count_result(void *ctx, const store_result *r)
{
	tally *t = ctx;
	char want[24];

	snprintf(want, sizeof(want), "v%lld", (long long)r->index);
	t->bad += !r->ok || r->len != strlen(want) || memcmp(r->value, want, r->len) != 0 ||
	          (t->by_seq && r->seq != t->last_seq + 1);
	t->last_seq = r->seq;
	t->sum_index += r->index;
	t->n++;
	return CM_OK;
}

static void complete_range(store *st, int64_t lo, int64_t hi, int64_t *seq, const char *holder)
{
	for (int64_t id = lo; id <= hi; id++) {
		char v[24];
		int rec = 0;
		int len = snprintf(v, sizeof(v), "v%lld", (long long)(id - 1));
		assert_int_equal(complete(st, id, *seq + 1, 1, v, (size_t)len, holder, &rec), CM_OK);
		assert_int_equal(rec, 1);
		(*seq)++;
	}
}

/* A chunk whose tasks all succeeded loses its arguments in the commit of
 * its last result: a job of two chunks (1,024 and 976 tasks) keeps the
 * first's while one of its results is missing, drops them with it, and
 * keeps the second's, which holds a failure the failures page shows with
 * its input. Both chunks' results read as before. */
static void test_args_go_once_every_task_of_their_chunk_succeeded(void **state)
{
	fixture *f = *state;
	tally taken = {0}, in = {0};
	failure_seen fs = {0};
	int64_t next = 0, seq = 0;
	int rec = 0;

	insert_job(f->st, 2000);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM chunks"), 2);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_tasks_assign(f->st, 1, 2000, "w-a", count_task, &taken, &next), CM_OK);
	assert_int_equal(taken.n, 2000);
	complete_range(f->st, 1, 1023, &seq, "w-a");
	complete_range(f->st, 1025, 1499, &seq, "w-a");
	assert_int_equal(complete(f->st, 1500, ++seq, 0, "boom", 4, "w-a", &rec), CM_OK);
	complete_range(f->st, 1501, 2000, &seq, "w-a");
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM chunks"), 2);

	assert_int_equal(store_begin(f->st), CM_OK);
	complete_range(f->st, 1024, 1024, &seq, "w-a");
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM chunks WHERE id = 1"), 0);
	assert_int_equal(file_int(f->path, "SELECT count(*) FROM chunks WHERE id = 1025"), 1);

	assert_int_equal(store_results_failed(f->st, 1, 1, 2000, 0, 10, on_failure_facts, &fs, &next), CM_OK);
	assert_int_equal(fs.n, 1);
	assert_int_equal(fs.index[0], 1499);
	assert_string_equal(fs.error[0], "boom");
	assert_string_equal(fs.arg[0], "1499");
	assert_int_equal(store_results_input(f->st, 1, 1, 2000, 0, 1499, count_result, &in, &next), CM_OK);
	assert_int_equal(in.n, 1499);
	assert_int_equal(in.bad, 0);
	assert_int_equal(in.sum_index, 1499 * 1498 / 2);
}

static void test_many_chunks_over_transactions(void **state)
{
	fixture *f = *state;
	const int n = 150000; /* about 147 chunks */
	tally taken = {0}, in = {0}, byseq = {.by_seq = 1};
	int64_t next = 0, seq = 0, held = -1;
	int rec = 0;

	insert_job(f->st, n);
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_tasks_assign(f->st, 1, n, "w-a", count_task, &taken, &next), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(taken.n, n);
	assert_int_equal(taken.bad, 0);
	assert_int_equal(store_tasks_held_count(f->st, "w-a", &held), CM_OK);
	assert_int_equal(held, n);

	/* Results from the back half first, then a transaction rolled back. */
	assert_int_equal(store_begin(f->st), CM_OK);
	complete_range(f->st, n / 2 + 1, n, &seq, "w-a");
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_begin(f->st), CM_OK);
	int64_t lost_seq = seq;
	complete_range(f->st, 1, 1000, &lost_seq, "w-a");
	store_rollback(f->st);
	assert_int_equal(store_tasks_held_count(f->st, "w-a", &held), CM_OK);
	assert_int_equal(held, n / 2);
	/* Then the front half, in transactions of 10,000; a repeat is refused. */
	for (int64_t lo = 1; lo <= n / 2; lo += 10000) {
		assert_int_equal(store_begin(f->st), CM_OK);
		complete_range(f->st, lo, lo + 9999 < n / 2 ? lo + 9999 : n / 2, &seq, "w-a");
		assert_int_equal(complete(f->st, lo, seq + 1, 1, "again", 5, "w-a", &rec), CM_OK);
		assert_int_equal(rec, 0);
		assert_int_equal(store_commit(f->st), CM_OK);
	}
	assert_int_equal(store_tasks_held_count(f->st, "w-a", &held), CM_OK);
	assert_int_equal(held, 0);

	for (int64_t cursor = 0; cursor < n;) {
		int64_t before = in.n;
		assert_int_equal(store_results_input(f->st, 1, 1, n, cursor, 7000, count_result, &in, &cursor), CM_OK);
		assert_true(in.n > before);
	}
	for (int64_t cursor = 0; cursor < n;) {
		int64_t before = byseq.n;
		assert_int_equal(store_results_completion(f->st, 1, cursor, 7000, count_result, &byseq, &cursor),
		                 CM_OK);
		assert_true(byseq.n > before);
	}
	assert_int_equal(in.n, n);
	assert_int_equal(byseq.n, n);
	assert_int_equal(in.bad, 0);
	assert_int_equal(byseq.bad, 0);
	assert_int_equal(in.sum_index, (int64_t)n * (n - 1) / 2);
	assert_int_equal(byseq.sum_index, (int64_t)n * (n - 1) / 2);
	job_counts c = {0};
	assert_int_equal(store_job_each(f->st, on_job_counts, &c), CM_OK);
	assert_int_equal(c.done[1], n);
	assert_int_equal(c.failed[1], 0);
}

/* A database made by the first release's schema (store/tests/schema_v1.sql) opens,
 * is migrated step by step, keeps its rows, and is not migrated twice. */
/* Appends "id=secret;" of each process to ctx (a 128-byte string). */
static void on_process(void *ctx, const store_process *p)
{
	char *out = ctx;
	size_t n = strlen(out);

	snprintf(out + n, 128 - n, "%s=%s;", p->id, p->secret_hash ? p->secret_hash : "(null)");
}

/* Appends "ID=CONTEXT;" (or "(null)") for each job to ctx. */
static void on_job_context(void *ctx, const store_job *j)
{
	char *out = ctx;
	size_t used = strlen(out);

	snprintf(out + used, 128 - used, "%s=%.*s;", j->id, j->context ? (int)j->context_len : 6,
	         j->context ? (const char *)j->context : "(null)");
}

/* A database of the first release's schema (store/tests/schema_v1.sql) at
 * DIR/name, open for the test to fill: *path gets its path. */
static sqlite3 *v1_database(const fixture *f, const char *name, char path[128])
{
	char *sql = NULL;
	size_t len = 0;
	sqlite3 *db;
	FILE *fp = fopen(STRAND_FIXTURES "/schema_v1.sql", "r");

	assert_non_null(fp);
	assert_int_equal(getdelim(&sql, &len, '\0', fp) > 0, 1);
	fclose(fp);
	snprintf(path, 128, "%s/%s", f->dir, name);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	free(sql);
	return db;
}

static void test_migrates_a_version_1_database(void **state)
{
	fixture *f = *state;
	char path[128], detail[256] = "", pool[20] = "";
	store *st = NULL;
	loaded_worker w = {0};
	sqlite3 *db = v1_database(f, "v1.db", path);

	assert_int_equal(
	        sqlite3_exec(db,
	                     "INSERT INTO pools VALUES('p-old', 'poolsecret', '{}', 'active', NULL, 1);"
	                     "INSERT INTO workers VALUES('w-old', 'p-old', '123', 'connected', NULL, 1);"
	                     "INSERT INTO processes VALUES('r-old', '{}', 'local', '99', 'running', NULL, NULL,"
	                     " 1, NULL);"
	                     "INSERT INTO jobs VALUES(1, 'j-old', 'p-old', 'echo', NULL, NULL, 'running', 1, 0, 1,"
	                     " 3, 0, 0, 1);",
	                     NULL, NULL, NULL),
	        SQLITE_OK);
	sqlite3_close(db);

	for (int round = 0; round < 2; round++) {
		assert_int_equal(store_open(path, 1, &st, detail, sizeof(detail)), CM_OK);
		w.n = 0;
		assert_int_equal(store_worker_each_live(st, on_worker, &w), CM_OK);
		assert_int_equal(w.n, 1 + round); /* w-old, then w-new too */
		assert_string_equal(w.id, "w-old");
		assert_string_equal(w.secret, "(null)"); /* it must be replaced: it has no secret of its own */
		assert_int_equal(store_pool_each(st, on_pool, pool), CM_OK);
		assert_string_equal(pool, "p-old");
		/* A process of version 1 has no hub secret; one saved now keeps its. */
		char procs[128] = "";
		assert_int_equal(store_process_each(st, on_process, procs), CM_OK);
		assert_string_equal(procs, round == 0 ? "r-old=(null);" : "r-old=(null);r-new=procsecret;");
		store_process sp = {.id = "r-new",
		                    .spec_json = "{}",
		                    .backend = "local",
		                    .state = "running",
		                    .created_ms = 2,
		                    .secret_hash = "procsecret"};
		/* A job of version 1 has no context; one saved now keeps its. */
		char jobs[128] = "";
		assert_int_equal(store_job_each(st, on_job_context, jobs), CM_OK);
		assert_string_equal(jobs, round == 0 ? "j-old=(null);" : "j-old=(null);j-new=\"ctx\";");
		store_job sj = {.num = 2,
		                .id = "j-new",
		                .pool_id = "p-old",
		                .function = "rt:pickle",
		                .state = "running",
		                .base = 1,
		                .chunksize = 1,
		                .max_attempts = 3,
		                .created_ms = 2,
		                .context = "\"ctx\"",
		                .context_len = 5,
		                .name = "nightly"};
		assert_int_equal(store_begin(st), CM_OK);
		assert_int_equal(store_worker_insert(st, "w-new", "p-old", "124", "s3cr3t", 2), CM_OK);
		assert_int_equal(store_process_save(st, &sp), CM_OK);
		if (round == 0)
			assert_int_equal(store_job_insert(st, &sj), CM_OK);
		assert_int_equal(store_commit(st), CM_OK);
		store_close(st);
	}
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 21);
	sqlite3_finalize(q);
	/* 21: the queues of before go with no lease. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM queues WHERE lease IS NOT NULL", -1, &q, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	/* 20: workers have stored none of their lines of output. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM workers WHERE output_next != 0", -1, &q, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	/* 19: queue items can be held, none are. */
	assert_int_equal(
	        sqlite3_prepare_v2(db, "SELECT count(*) FROM queue_items WHERE hold IS NOT NULL", -1, &q, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	/* 17: join tokens, none yet. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM join_tokens", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	/* 16: failed tasks' notes, none yet. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM failure_notes", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
	/* 15: workers found by pool. */
	assert_int_equal(
	        sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN DELETE FROM workers WHERE pool_id = 'p'", -1, &q, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_non_null(strstr((const char *)sqlite3_column_text(q, 3), "workers_by_pool"));
	sqlite3_finalize(q);
	/* 13: a job's name; none for one of before. 14: counts by input, none
	 * for a job of before (one input a task). */
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT group_concat(id || '=' || coalesce(name, '-') || '/' ||"
	                                    " coalesce(inputs_total, '-')) FROM jobs",
	                                    -1, &q, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(q, 0), "j-old=-/-,j-new=nightly/-");
	sqlite3_finalize(q);
	/* rewritten once for incremental vacuum */
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA auto_vacuum", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 2);
	sqlite3_finalize(q);
	/* 6: tasks by chunks; the table of a row per task is gone. */
	assert_int_equal(
	        sqlite3_prepare_v2(db,
	                           "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master"
	                           " WHERE name IN ('tasks', 'chunks', 'chunk_state', 'results') ORDER BY name)",
	                           -1, &q, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(q, 0), "chunk_state,chunks,results");
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* Whether the file at path holds needle anywhere. */
static int file_holds(const char *path, const char *needle)
{
	FILE *fp = fopen(path, "rb");
	size_t n = strlen(needle), len = 0;
	char *data = NULL;
	int found = 0;

	if (!fp)
		return 0;
	found = getdelim(&data, &len, EOF, fp) >= 0 && memmem(data, len, needle, n) != NULL;
	fclose(fp);
	free(data);
	return found;
}

static void on_process_hash(void *ctx, const store_process *p)
{
	snprintf(ctx, 80, "%s", p->secret_hash ? p->secret_hash : "(null)");
}

/* A database of before hashed secrets (version 3 to 11 kept each worker's
 * and process's secret as it is) keeps only their SHA-256 once migrated,
 * and the secrets themselves are gone from its file and log. */
static void test_migration_keeps_only_secret_hashes(void **state)
{
	fixture *f = *state;
	const char *worker_secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	const char *process_secret = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
	char path[128], wal[140], detail[256] = "", proc_hash[80] = "";
	store *st = NULL;
	loaded_worker w = {0};
	sqlite3 *db = v1_database(f, "v3.db", path);
	char insert[512];

	/* Version 3's changes to version 1, and rows holding plain secrets. */
	snprintf(insert, sizeof(insert),
	         "ALTER TABLE workers ADD COLUMN secret TEXT; ALTER TABLE pools DROP COLUMN secret;"
	         "ALTER TABLE processes ADD COLUMN secret TEXT; PRAGMA user_version = 3;"
	         "INSERT INTO pools VALUES('p-old', '{}', 'active', NULL, 1);"
	         "INSERT INTO workers VALUES('w-old', 'p-old', '123', 'connected', NULL, 1, '%s');"
	         "INSERT INTO processes VALUES('r-old', '{}', 'local', '99', 'running', NULL, NULL, 1, NULL, '%s');",
	         worker_secret, process_secret);
	assert_int_equal(sqlite3_exec(db, insert, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(file_holds(path, worker_secret), 1); /* the check below can fail */

	assert_int_equal(store_open(path, 1, &st, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store_worker_each_live(st, on_worker, &w), CM_OK);
	assert_int_equal(w.n, 1);
	assert_string_equal(w.secret, "a8ae6e6ee929abea3afcfc5258c8ccd6f85273e0d4626d26c7279f3250f77c8e");
	/* A worker of before version 20 has sent no line stored; one that
	 * has is read back with the number of its next. */
	assert_int_equal(w.output_next, 0);
	assert_int_equal(store_worker_set_output_next(st, "w-old", 42), CM_OK);
	w = (loaded_worker){0};
	assert_int_equal(store_worker_each_live(st, on_worker, &w), CM_OK);
	assert_int_equal(w.output_next, 42);
	assert_int_equal(store_process_each(st, on_process_hash, proc_hash), CM_OK);
	assert_string_equal(proc_hash, "7b9d07f2404b102b3c62fede026097c5ab81668f18414abd8ea560cecb008006");
	snprintf(wal, sizeof(wal), "%s-wal", path);
	assert_int_equal(file_holds(wal, worker_secret), 0);
	assert_int_equal(file_holds(wal, process_secret), 0);
	store_close(st);
	assert_int_equal(file_holds(path, worker_secret), 0);
	assert_int_equal(file_holds(path, process_secret), 0);
	assert_int_equal(file_holds(wal, worker_secret), 0);
}

/* A database of before chunks (a row per task) keeps every task through
 * the migration: what is queued with its attempts, what a worker holds,
 * each result with its seq, value and failure, and the arguments of what
 * still has to run. */
static void test_migrates_task_rows_into_chunks(void **state)
{
	fixture *f = *state;
	char path[128], detail[256] = "";
	store *st = NULL;
	seen r = {0}, queued = {0}, taken = {0};
	int64_t next, held = 0;
	sqlite3 *db = v1_database(f, "rows.db", path);

	/* Job 1, ids 1..5: queued; held by w-old; done; failed; queued after
	 * two runs. Job 2, id 6: done. */
	assert_int_equal(sqlite3_exec(db,
	                              "INSERT INTO pools VALUES('p-old', 'poolsecret', '{}', 'active', NULL, 1);"
	                              "INSERT INTO workers VALUES('w-old', 'p-old', '123', 'connected', NULL, 1);"
	                              "INSERT INTO jobs VALUES(1, 'j-1', 'p-old', 'echo', NULL, NULL, 'running', 1, 5,"
	                              " 1, 3, 0, 0, 1);"
	                              "INSERT INTO jobs VALUES(2, 'j-2', 'p-old', 'echo', NULL, NULL, 'done', 6, 1,"
	                              " 1, 3, 0, 0, 1);"
	                              "INSERT INTO tasks VALUES(1, 1, '\"a\"', 0, 0, NULL, NULL, NULL, NULL);"
	                              "INSERT INTO tasks VALUES(2, 1, '\"b\"', 1, 1, 'w-old', NULL, NULL, NULL);"
	                              "INSERT INTO tasks VALUES(3, 1, '\"c\"', 2, 1, NULL, 1, 1, '30');"
	                              "INSERT INTO tasks VALUES(4, 1, '\"d\"', 2, 1, NULL, 2, 0, 'bad');"
	                              "INSERT INTO tasks VALUES(5, 1, '\"e\"', 0, 2, NULL, NULL, NULL, NULL);"
	                              "INSERT INTO tasks VALUES(6, 2, '\"f\"', 2, 1, NULL, 1, 1, '60');",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_open(path, STORE_WRITER, &st, detail, sizeof(detail)), CM_OK);
	job_counts c = {0};
	assert_int_equal(store_job_each(st, on_job_counts, &c), CM_OK);
	assert_int_equal(c.done[1], 2);
	assert_int_equal(c.failed[1], 1);
	assert_int_equal(store_tasks_held_count(st, "w-old", &held), CM_OK);
	assert_int_equal(held, 1);
	assert_int_equal(store_tasks_queued_each(st, 1, on_task, &queued), CM_OK);
	assert_int_equal(queued.n, 2);
	assert_int_equal(queued.ids[0], 1);
	assert_int_equal(queued.attempts[0], 0);
	assert_int_equal(queued.ids[1], 5);
	assert_int_equal(queued.attempts[1], 2);
	/* Input order stops at index 0 (queued); completion order has both. */
	assert_int_equal(store_results_input(st, 1, 1, 5, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 0);
	assert_int_equal(store_results_completion(st, 1, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.ids[0], 2);
	assert_string_equal(r.args[0], "30");
	assert_int_equal(r.ids[1], 3);
	assert_string_equal(r.args[1], "bad");
	assert_int_equal(next, 2);
	memset(&r, 0, sizeof(r));
	assert_int_equal(store_results_input(st, 2, 6, 1, 0, 10, on_result, &r, &next), CM_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.args[0], "60");
	/* The arguments of what is queued, and w-old's task recorded once. */
	assign_all(st, 1, 5, "w-new", &taken);
	assert_int_equal(taken.n, 2);
	assert_string_equal(taken.args[0], "\"a\"");
	assert_string_equal(taken.args[1], "\"e\"");
	assert_int_equal(taken.attempts[1], 3);
	int rec = 0;
	assert_int_equal(complete(st, 2, 3, 1, "20", 2, "w-old", &rec), CM_OK);
	assert_int_equal(rec, 1);
	assert_int_equal(complete(st, 2, 4, 1, "20", 2, NULL, &rec), CM_OK);
	assert_int_equal(rec, 0);
	store_close(st);
}

static void count_pool(void *ctx, const char *id, const char *spec_json, const char *state, const char *reason,
                       int64_t created_ms)
{
	(void)id;
	(void)spec_json;
	(void)state;
	(void)reason;
	(void)created_ms;
	(*(int *)ctx)++;
}

/* A write that fails inside a transaction fails its commit, even if its
 * caller never looked: nothing of the transaction is stored. The failure
 * is real: a trigger in the database refuses queue items. */
static void test_failed_write_fails_the_commit(void **state)
{
	fixture *f = *state;
	char *items[] = {"1"};
	size_t lens[] = {1};
	sqlite3 *db;
	int pools = 0;

	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                              "CREATE TRIGGER refuse BEFORE INSERT ON queue_items "
	                              "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_queue_insert(f->st, "q-1", "queue", 1, NULL), CM_OK);
	assert_int_equal(store_pool_insert(f->st, "p-1", "{}", "active", 1), CM_OK);
	(void)store_queue_put(f->st, "q-1", 1, items, lens); /* fails; ignored here on purpose */
	assert_int_equal(store_pool_set_state(f->st, "p-1", "closed", NULL), CM_OK);
	assert_int_not_equal(store_commit(f->st), CM_OK);
	assert_non_null(strstr(store_errmsg(f->st), "refused by the test"));
	store_rollback(f->st);
	assert_int_equal(store_pool_each(f->st, count_pool, &pools), CM_OK);
	assert_int_equal(pools, 0);

	/* The next transaction starts clean. */
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_pool_insert(f->st, "p-2", "{}", "active", 1), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_pool_each(f->st, count_pool, &pools), CM_OK);
	assert_int_equal(pools, 1);
}

/* What a take handed out, in order, as one string ("i1 i2 ..."). */
typedef struct taken_items {
	char text[256];
} taken_items;

static int on_item(void *ctx, const void *value, size_t len)
{
	taken_items *t = ctx;
	size_t at = strlen(t->text);

	snprintf(t->text + at, sizeof(t->text) - at, "%s%.*s", at ? " " : "", (int)len, (const char *)value);
	return CM_OK;
}

typedef struct queue_row {
	int64_t size, bytes;
	char holds[128];
	char lease[24];
} queue_row;

static void on_queue(void *ctx, const char *id, const char *kind, int64_t created_ms, int64_t size, int64_t bytes,
                     const char *lease)
{
	queue_row *r = ctx;

	(void)id, (void)kind, (void)created_ms;
	r->size = size;
	r->bytes = bytes;
	snprintf(r->lease, sizeof(r->lease), "%s", lease);
}

static void on_hold(void *ctx, const char *queue, const char *hold, int64_t n, int64_t bytes)
{
	queue_row *r = ctx;
	size_t at = strlen(r->holds);

	snprintf(r->holds + at, sizeof(r->holds) - at, "%s:%s:%lld:%lld ", queue, hold, (long long)n, (long long)bytes);
}

/* A queue's client lease is kept with it ("" for none), as a start finds
 * it. */
static void test_queue_lease_kept(void **state)
{
	fixture *f = *state;
	queue_row r = {0};

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_queue_insert(f->st, "q-1", "queue", 1, "l-7"), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_queue_each(f->st, on_queue, &r), CM_OK);
	assert_string_equal(r.lease, "l-7");
	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_queue_delete(f->st, "q-1"), CM_OK);
	assert_int_equal(store_queue_insert(f->st, "q-2", "turns", 1, ""), CM_OK);
	assert_int_equal(store_commit(f->st), CM_OK);
	assert_int_equal(store_queue_each(f->st, on_queue, &r), CM_OK);
	assert_string_equal(r.lease, "");
}

/* A take under a hold leaves the items stored but out of every other take;
 * releasing it removes the first `used` and puts the rest back at the head
 * in their order. A take stops past max_bytes (after its first item). */
static void test_queue_holds(void **state)
{
	fixture *f = *state;
	char *items[] = {"i1", "i2", "i3", "i4", "i5"};
	size_t lens[] = {2, 2, 2, 2, 2};
	taken_items t = {""};
	queue_row r = {0};
	int64_t n, bytes, removed, removed_bytes;

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_queue_insert(f->st, "q-1", "queue", 1, NULL), CM_OK);
	assert_int_equal(store_queue_put(f->st, "q-1", 5, items, lens), CM_OK);
	assert_int_equal(store_queue_take(f->st, "q-1", 2, 1 << 20, "l1.h1", on_item, &t, &n, &bytes), CM_OK);
	assert_string_equal(t.text, "i1 i2");
	assert_int_equal(n, 2);
	assert_int_equal(bytes, 4);
	t.text[0] = '\0';
	assert_int_equal(store_queue_take(f->st, "q-1", 1, 1 << 20, NULL, on_item, &t, &n, &bytes), CM_OK);
	assert_string_equal(t.text, "i3"); /* the held ones are passed over */
	assert_int_equal(store_commit(f->st), CM_OK);

	/* As a start finds it: i4 and i5 to take, i1 and i2 held. */
	assert_int_equal(store_queue_each(f->st, on_queue, &r), CM_OK);
	assert_int_equal(r.size, 2);
	assert_int_equal(r.bytes, 8);
	assert_int_equal(store_queue_holds_each(f->st, on_hold, &r), CM_OK);
	assert_string_equal(r.holds, "q-1:l1.h1:2:4 ");

	assert_int_equal(store_begin(f->st), CM_OK);
	assert_int_equal(store_queue_release(f->st, "l1.h1", 1, &removed, &removed_bytes), CM_OK);
	assert_int_equal(removed, 1);
	assert_int_equal(removed_bytes, 2);
	t.text[0] = '\0';
	assert_int_equal(store_queue_take(f->st, "q-1", 10, 5, NULL, on_item, &t, &n, &bytes), CM_OK);
	assert_string_equal(t.text, "i2 i4"); /* i2 back first; a third would pass 5 bytes */
	t.text[0] = '\0';
	assert_int_equal(store_queue_take(f->st, "q-1", 10, 1, NULL, on_item, &t, &n, &bytes), CM_OK);
	assert_string_equal(t.text, "i5"); /* the first always comes */
	assert_int_equal(store_queue_release(f->st, "l1.h9", 3, &removed, &removed_bytes), CM_OK);
	assert_int_equal(removed, 0); /* no such hold: nothing */
	assert_int_equal(store_commit(f->st), CM_OK);
	r = (queue_row){0};
	assert_int_equal(store_queue_each(f->st, on_queue, &r), CM_OK);
	assert_int_equal(r.size, 0);
	assert_int_equal(r.bytes, 0);
}

static void test_open_rejects_corrupt_file(void **state)
{
	fixture *f = *state;
	char path[128];
	char detail[256] = "";
	store *st = NULL;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/corrupt.db", f->dir);
	fp = fopen(path, "w");
	fputs("this is not a database, but it is long enough to look like one to a careless reader", fp);
	fclose(fp);
	assert_int_not_equal(store_open(path, 1, &st, detail, sizeof(detail)), CM_OK);
	assert_null(st);
	assert_true(strlen(detail) > 0);
}

/* A writer that stops without closing, as under kill -9: a child commits a
 * pool and exits. Its write-ahead log holds the commit. The caller has no
 * store open: a fork copies only the calling thread, and a lock another
 * thread held then (a writer's checkpoint thread, the allocator's) would
 * never be released in the child. */
static void crash_after_commit(const char *path)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		char detail[256] = "";
		store *st = NULL;
		if (store_open(path, STORE_WRITER, &st, detail, sizeof(detail)) != CM_OK || store_begin(st) != CM_OK ||
		    store_pool_insert(st, "p-1", "{}", "active", 1) != CM_OK || store_commit(st) != CM_OK)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A database stopped uncleanly whose log was then removed would load
 * without its last commits: it is refused. With its log back it opens, the
 * commit there. A clean close needs no log. */
static void test_open_refuses_lost_log_after_crash(void **state)
{
	fixture *f = *state;
	char path[128], wal[160], aside[160];
	char detail[512] = "";
	store *st = NULL;
	int pools = 0;

	snprintf(path, sizeof(path), "%s/crashed.db", f->dir);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(aside, sizeof(aside), "%s/aside", f->dir);
	store_close(f->st); /* no thread of it in the fork */
	f->st = NULL;
	crash_after_commit(path);
	assert_int_equal(rename(wal, aside), 0);
	assert_int_equal(store_open(path, STORE_WRITER, &st, detail, sizeof(detail)), CM_EIO);
	assert_null(st);
	assert_non_null(strstr(detail, "was not closed cleanly and its write-ahead log"));
	assert_int_equal(rename(aside, wal), 0);
	assert_int_equal(store_open(path, STORE_WRITER, &st, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store_pool_each(st, count_pool, &pools), CM_OK);
	assert_int_equal(pools, 1);
	store_close(st); /* clean: the log goes, and none is needed */
	assert_int_not_equal(access(wal, F_OK), 0);
	assert_int_equal(store_open(path, STORE_WRITER | STORE_SYNC_FULL, &st, detail, sizeof(detail)), CM_OK);
	pools = 0;
	assert_int_equal(store_pool_each(st, count_pool, &pools), CM_OK);
	assert_int_equal(pools, 1);
	store_close(st);
}

typedef struct check_seen {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char why[512];
} check_seen;

static void on_damage(void *ctx, const char *why)
{
	check_seen *c = ctx;

	pthread_mutex_lock(&c->mu);
	snprintf(c->why, sizeof(c->why), "%s", why);
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* The integrity check reads what opening does not: a sound file passes; a
 * damaged index page (of a table nothing has read yet) opens fine and
 * fails the check, which the thread reports. */
static void test_check_finds_damaged_page(void **state)
{
	fixture *f = *state;
	check_seen damage = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	store_check *c = NULL;
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t page = 0, size = 0;
	char detail[512] = "";

	insert_job(f->st, 10);
	assert_int_equal(store_check_file(f->path, 0, detail, sizeof(detail)), CM_OK);
	store_close(f->st);
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM "
	                                    "sqlite_master WHERE name = 'sqlite_autoindex_rings_1'",
	                                    -1, &s, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	page = sqlite3_column_int64(s, 0);
	size = sqlite3_column_int64(s, 1);
	sqlite3_finalize(s);
	sqlite3_close(db);
	FILE *fp = fopen(f->path, "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, (long)((page - 1) * size), SEEK_SET), 0);
	assert_int_equal(fwrite("\x0d\xff\xff\xff\xff\xff\xff\xff", 1, 8, fp), 8);
	fclose(fp);

	assert_int_equal(store_open(f->path, STORE_WRITER, &f->st, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store_check_start(f->path, 0, on_damage, &damage, &c), CM_OK);
	pthread_mutex_lock(&damage.mu);
	while (!damage.why[0])
		pthread_cond_wait(&damage.cv, &damage.mu);
	pthread_mutex_unlock(&damage.mu);
	store_check_stop(c);
	assert_non_null(strstr(damage.why, "database failed its integrity check"));
	assert_non_null(strstr(damage.why, "Page"));
	assert_int_equal(store_check_file(f->path, 0, detail, sizeof(detail)), CM_EIO);
	assert_string_equal(detail, damage.why);
}

/* The line this program prints when run again as `--what path`: a process
 * of its own, whose SQLite knows nothing of ours (see main). */
static void run_in_another_process(const char *what, const char *path, char *line, size_t len)
{
	char exe[512], cmd[1200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;

	assert_true(n > 0);
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd), "'%s' --%s '%s'", exe, what, path);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(line, (int)len, p));
	assert_int_equal(pclose(p), 0);
}

/* What another process gets reading the database at path: SQLite's code
 * and the jobs it counted. */
static void read_from_another_process(const char *path, int *rc, long long *jobs)
{
	char line[128];

	run_in_another_process("count-jobs", path, line, sizeof(line));
	assert_int_equal(sscanf(line, "%d %lld", rc, jobs), 2);
}

static int count_jobs(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long jobs = -1;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &s, NULL)) == SQLITE_OK &&
	    (rc = sqlite3_step(s)) == SQLITE_ROW) {
		jobs = sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	}
	printf("%d %lld\n", rc, jobs);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return 0;
}

/* The gateway's process holds its database alone: another process reading
 * it, or opening it to write (a second gateway), is refused while the
 * store is open, and finds everything once it is closed. The process's own
 * readers see each commit. STORE_SHARED lets the other process read. */
static void test_another_process_is_kept_out(void **state)
{
	fixture *f = *state;
	store *reader = NULL;
	char detail[256] = "";
	long long jobs = -1;
	int64_t n = -1;
	int rc = -1;

	insert_job(f->st, 3);
	assert_int_equal(store_open(f->path, STORE_READER, &reader, detail, sizeof(detail)), CM_OK);
	assert_int_equal(store__int_query(reader, "SELECT count(*) FROM jobs", &n), CM_OK);
	assert_int_equal(n, 1);
	store_close(reader);
	read_from_another_process(f->path, &rc, &jobs);
	assert_int_equal(rc, SQLITE_BUSY);
	assert_int_equal(jobs, -1);

	store_close(f->st);
	f->st = NULL;
	read_from_another_process(f->path, &rc, &jobs);
	assert_int_equal(rc, SQLITE_OK);
	assert_int_equal(jobs, 1);

	assert_int_equal(store_open(f->path, STORE_WRITER | STORE_SHARED, &f->st, detail, sizeof(detail)), CM_OK);
	read_from_another_process(f->path, &rc, &jobs);
	assert_int_equal(rc, SQLITE_OK);
	assert_int_equal(jobs, 1);
}

/* A second writer in another process (a second gateway on the database)
 * cannot open it, and says why. */
static void test_a_second_writer_is_refused(void **state)
{
	fixture *f = *state;
	char line[512] = "", want[400];

	run_in_another_process("open-writer", f->path, line, sizeof(line));
	snprintf(want, sizeof(want), "%d database %s is in use by another process (a gateway on it?)\n", CM_EIO,
	         f->path);
	assert_string_equal(line, want);
}

static int open_writer(const char *path)
{
	store *st = NULL;
	char detail[256] = "";
	int err = store_open(path, STORE_WRITER, &st, detail, sizeof(detail));

	printf("%d %s\n", err, detail);
	store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--count-jobs") == 0)
		return count_jobs(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--open-writer") == 0)
		return open_writer(argv[2]);

	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_assign_marks_pending_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_open_refuses_lost_log_after_crash, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_check_finds_damaged_page, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_another_process_is_kept_out, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_second_writer_is_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_assign_leaves_what_fn_refuses, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_job_counts_loaded, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_inputs_by_task, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_job_removed_by_ranges, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_vacuum_gives_freed_pages_back, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_checkpoints_run_beside_the_writer, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_the_log_starts_again_under_steady_commits, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_result_recorded_exactly_once, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_result_only_from_the_holder, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_results_input_order_stops_at_gap, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failures_with_their_input_worker_and_time, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_args_go_once_every_task_of_their_chunk_succeeded, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_forgotten_workers_leave_nothing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reads_fixed_records_of_before, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_requeue_returns_pending_tasks, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_idempotency_and_reload, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_cancel_fills_every_missing_result, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failed_write_fails_the_commit, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_queue_lease_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_queue_holds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_open_rejects_corrupt_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_many_chunks_over_transactions, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_migrates_a_version_1_database, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_migration_keeps_only_secret_hashes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_migrates_task_rows_into_chunks, setup, teardown),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
