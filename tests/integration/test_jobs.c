/*
 * One job's control: DELETE /v1/jobs/{id} cancels a running job (every
 * task without a result fails "cancelled", each index answered once, also
 * across a crash of the gateway) and
 * removes an ended one (gone from every view, its tasks deleted from the
 * database in the background, also across a crash of the gateway); --retain
 * removes ended jobs by itself and the file shrinks, and ended processes
 * and rings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tests/support/harness.h"

typedef pool_fixture fixture;

/* n copies of v as a map's args. */
static json_t *args_of(int n, json_int_t v)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v < 0 ? i : v));
	return a;
}

static response job_request(fixture *f, const char *method, const char *job)
{
	char path[96];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	return http(&f->g, method, path, NULL, NULL);
}

/* A count read from the gateway's database (read-only, beside it, as an
 * operator's sqlite3 would: the fixtures' gateways let other processes
 * read it as it runs, --db-shared). */
static long long scalar(fixture *f, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	long long n = -1;

	assert_int_equal(sqlite3_open_v2(f->g.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

#define STORED_TASKS "SELECT coalesce(sum(n), 0) FROM chunk_state"

/* Waits (30 s at most) until the database holds no task, result or job. */
static void wait_tasks_deleted(fixture *f)
{
	long long tasks = -1, results = -1, jobs = -1;

	for (int i = 0; i < 3000; i++) {
		tasks = scalar(f, STORED_TASKS);
		results = scalar(f, "SELECT count(*) FROM results");
		jobs = scalar(f, "SELECT count(*) FROM jobs");
		if (tasks == 0 && results == 0 && jobs == 0)
			return;
		usleep(10000);
	}
	fail_msg("after 30 s the database still holds %lld tasks, %lld result groups and %lld jobs", tasks, results,
	         jobs);
}

static void test_cancel_running_job(void **state)
{
	fixture *f = *state;
	const int n = 40;
	char *job = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "sleep", "args", args_of(n, 100)));

	assert_true(job_wait_done(&f->g, job, 2) < n);
	response r = job_request(f, "DELETE", job);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	response_free(&r);

	/* Every index once: the ones that ran, the rest cancelled. */
	json_t *items = job_results(&f->g, job, "input", 100), *it;
	size_t k;
	long long ran = 0, cancelled = 0;
	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		if (json_is_true(json_object_get(it, "ok"))) {
			assert_int_equal(json_integer_value(json_object_get(it, "value")), 100);
			ran++;
		} else {
			assert_string_equal(json_string_value(json_object_get(it, "error")), "cancelled");
			cancelled++;
		}
	}
	json_decref(items);
	assert_true(ran >= 2);
	assert_true(cancelled >= 1);
	r = job_request(f, "GET", job);
	assert_int_equal(json_integer_value(json_object_get(r.json, "done")), n);
	assert_int_equal(json_integer_value(json_object_get(r.json, "failed")), cancelled);
	response_free(&r);

	/* The pool serves the next job; the cancelled one stays readable. */
	char *next = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "echo", "args", args_of(3, -1)));
	items = job_results(&f->g, next, "input", 10);
	assert_each_index_once(items, 3);
	json_decref(items);
	r = job_request(f, "GET", job);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	response_free(&r);

	/* POST .../cancel cancels as DELETE does, and never removes: an ended
	 * job is left as it is, with a 409 that says so. */
	char path[96];
	free(job);
	job = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "sleep", "args", args_of(n, 100)));
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", job);
	r = http(&f->g, "POST", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	response_free(&r);
	json_decref(job_results(&f->g, job, "input", 100)); /* every index answered */
	expect_problem(&f->g, "POST", path, NULL, 409, "has ended (cancelled): nothing to cancel; DELETE removes it");
	r = job_request(f, "GET", job);
	assert_int_equal(r.status, 200);
	response_free(&r);
	expect_problem(&f->g, "GET", path, NULL, 405, "use POST on /v1/jobs/{id}/cancel");
	expect_problem(&f->g, "POST", "/v1/jobs/j-0000000000000000/cancel", NULL, 404, "no such job");
	free(next);
	free(job);
}

static void test_remove_ended_job(void **state)
{
	fixture *f = *state;
	char path[128], body[64];
	const int n = 5000;
	json_t *spec = json_pack("{s:s, s:o}", "function", "echo", "args", args_of(n, -1));
	char *text = json_dumps(spec, JSON_COMPACT);

	snprintf(path, sizeof(path), "/v1/pools/%s/map", f->pool);
	response r = http(&f->g, "POST", path, text, "Idempotency-Key: once");
	assert_int_equal(r.status, 202);
	char *job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	json_t *items = job_results(&f->g, job, "input", 2000);
	assert_each_index_once(items, n);
	json_decref(items);

	r = job_request(f, "DELETE", job);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "deleted");
	response_free(&r);
	r = job_request(f, "GET", job);
	assert_int_equal(r.status, 404);
	response_free(&r);
	snprintf(body, sizeof(body), "/v1/jobs/%s/results", job);
	r = http(&f->g, "GET", body, NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	r = job_request(f, "DELETE", job);
	assert_int_equal(r.status, 404);
	response_free(&r);
	snprintf(body, sizeof(body), "/v1/pools/%s/jobs", f->pool);
	json_t *jobs = http_get_ok(&f->g, body);
	assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), 0);
	json_decref(jobs);
	wait_tasks_deleted(f);

	/* Its idempotency key is free again: the same request makes a new job. */
	r = http(&f->g, "POST", path, text, "Idempotency-Key: once");
	assert_int_equal(r.status, 202);
	assert_string_not_equal(json_string_value(json_object_get(r.json, "id")), job);
	response_free(&r);
	free(text);
	json_decref(spec);
	free(job);
}

/* The gateway is killed while a removed job's tasks are being deleted: the
 * next start goes on deleting them, and the job stays gone. */
static void test_removal_resumes_after_crash(void **state)
{
	fixture *f = *state;
	const int n = 40000; /* 20 cycles of deletion, 20 ms apart at least */
	char *job = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "noop", "args", args_of(n, 0)));

	job_wait_done(&f->g, job, n);
	response r = job_request(f, "DELETE", job);
	assert_int_equal(r.status, 200);
	response_free(&r);
	gateway_kill(&f->g);
	long long left = scalar(f, STORED_TASKS);
	assert_true(left > 0); /* 2,000 a cycle: not all gone yet */
	assert_true(left < n + 1);
	gateway_restart(&f->g);
	r = job_request(f, "GET", job);
	assert_int_equal(r.status, 404);
	response_free(&r);
	wait_tasks_deleted(f);
	free(job);
}

/* A large job cancelled: its missing results are filled a slice a cycle;
 * the gateway killed meanwhile goes on after its restart, and every index
 * is answered once, "cancelled". */
static void test_cancel_resumes_after_crash(void **state)
{
	fixture *f = *state;
	const int n = 40000; /* 20 slices */
	char *block =
	        job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "sleep", "args", args_of(2, 3000)));
	char *job = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "echo", "args", args_of(n, -1)));

	/* Both workers sleep on the first job: the second has not started. */
	response r = job_request(f, "DELETE", job);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	assert_true(json_integer_value(json_object_get(r.json, "done")) < n);
	response_free(&r);
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	json_t *items = job_results(&f->g, job, "completion", 5000), *it;
	size_t k;
	assert_int_equal(json_array_size(items), n);
	unsigned char *seen = calloc(n, 1);
	json_array_foreach (items, k, it) {
		json_int_t i = json_integer_value(json_object_get(it, "index"));
		assert_true(i >= 0 && i < n && !seen[i]);
		seen[i] = 1;
		assert_string_equal(json_string_value(json_object_get(it, "error")), "cancelled");
	}
	free(seen);
	json_decref(items);
	r = job_request(f, "GET", job);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	assert_int_equal(json_integer_value(json_object_get(r.json, "failed")), n);
	response_free(&r);
	free(job);
	free(block);
}

static const char *const db_shared[] = {"--db-shared", NULL};

static int shared_setup(void **state)
{
	return pool_fixture_setup_with(state, db_shared);
}

/* A gateway with --retain 3s and a pool of two. */
static const char *const retain_3s[] = {"--retain", "3s", "--db-shared", NULL};

static int retaining_setup(void **state)
{
	return pool_fixture_setup_with(state, retain_3s);
}

/* A job's "ended_at" (NULL while it runs); free it. */
static char *job_ended_at(fixture *f, const char *job)
{
	response r = job_request(f, "GET", job);
	assert_int_equal(r.status, 200);
	const char *at = json_string_value(json_object_get(r.json, "ended_at"));
	char *copy = at ? strdup(at) : NULL;
	response_free(&r);
	return copy;
}

/* --retain: an ended job is kept that long after it ended (its end time
 * survives a crash of the gateway), then removed with its tasks and
 * results, and the database file gives the space back; a running job
 * stays, however old. */
static void test_retention_removes_ended_jobs(void **state)
{
	fixture *f = *state;
	const int n = 20000;
	char arg[401];
	json_t *args = json_array();

	memset(arg, 'x', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = 0;
	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_string(arg));
	char *running =
	        job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "sleep", "args", args_of(1, 60000)));
	char *job = job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "echo", "args", args));
	job_wait_done(&f->g, job, n);
	long long full = scalar(f, "PRAGMA page_count");
	/* its results, 8 MB in 4 KiB pages; its arguments went as each chunk's
	 * tasks all succeeded, the running job's stay */
	assert_true(full > n * 400 / 4096);
	assert_int_equal(scalar(f, "SELECT count(*) FROM chunks"), 1);
	char *ended = job_ended_at(f, job);
	assert_non_null(ended);
	assert_null(job_ended_at(f, running));
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	char *ended_again = job_ended_at(f, job); /* kept past the restart, with its end */
	assert_string_equal(ended_again, ended);

	long long pages = full, tasks = -1;
	int status = 0;
	for (int i = 0; i < 300 && !(status == 404 && tasks == 0 && pages < full / 4); i++) {
		usleep(100000);
		response r = job_request(f, "GET", job);
		status = r.status;
		response_free(&r);
		tasks = scalar(f, STORED_TASKS) - 1; /* the running job's one stays */
		pages = scalar(f, "PRAGMA page_count");
	}
	assert_int_equal(status, 404);
	assert_int_equal(scalar(f, "SELECT count(*) FROM jobs"), 1); /* the running one */
	assert_int_equal(scalar(f, "SELECT count(*) FROM results"), 0);
	assert_int_equal(scalar(f, STORED_TASKS), 1);
	assert_true(pages < full / 4);
	char *still = job_ended_at(f, running);
	assert_null(still);
	free(ended);
	free(ended_again);
	free(job);
	free(running);
}

/* GET path's status. */
static long get_status(fixture *f, const char *path)
{
	response r = http(&f->g, "GET", path, NULL, NULL);
	long status = r.status;

	response_free(&r);
	return status;
}

/* --retain removes a terminated pool and a terminated manager (their jobs,
 * workers and output with them) that long after they ended; an active pool
 * stays. Their rows are gone: a restarted gateway does not bring them back. */
static void test_retention_removes_terminated_pools(void **state)
{
	fixture *f = *state;
	char path[128], mpath[128], sql[256], jpath[96];

	char *pool = http_create(&f->g, "/v1/pools", "{\"processes\":1}");
	char *manager = http_create(&f->g, "/v1/managers", "{\"type\": \"dict\"}");
	char *job = job_submit(&f->g, pool, json_pack("{s:s, s:[i,i]}", "function", "echo", "args", 1, 2));
	job_wait_done(&f->g, job, 2);
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	snprintf(mpath, sizeof(mpath), "/v1/managers/%s", manager);
	snprintf(jpath, sizeof(jpath), "/v1/jobs/%s", job);
	response r = http(&f->g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "terminated");
	response_free(&r);
	r = http(&f->g, "DELETE", mpath, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_int_equal(get_status(f, path), 200); /* kept while younger than --retain */
	for (int i = 0; i < 300 && (get_status(f, path) != 404 || get_status(f, mpath) != 404); i++)
		usleep(100000);
	assert_int_equal(get_status(f, path), 404);
	assert_int_equal(get_status(f, mpath), 404);
	assert_int_equal(get_status(f, jpath), 404);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM jobs WHERE pool_id = '%s'", pool);
	for (int i = 0; i < 100 && scalar(f, sql) != 0; i++)
		usleep(100000); /* its jobs go a few a cycle, then the pool's row */
	assert_int_equal(scalar(f, sql), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pools WHERE id IN ('%s', '%s')", pool, manager);
	for (int i = 0; i < 100 && scalar(f, sql) != 0; i++)
		usleep(100000);
	assert_int_equal(scalar(f, sql), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM workers WHERE pool_id IN ('%s', '%s')", pool, manager);
	assert_int_equal(scalar(f, sql), 0);
	snprintf(sql, sizeof(sql), "/v1/pools/%s", f->pool);
	assert_int_equal(get_status(f, sql), 200); /* the active one stays */
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	assert_int_equal(get_status(f, path), 404);
	assert_int_equal(get_status(f, mpath), 404);
	free(job);
	free(manager);
	free(pool);
}

/* --retain also removes ended processes, with their output files, and
 * rings whose members all ended, with their members (never a member
 * alone); a process that runs stays, and one terminated is removed in
 * turn. Their rows are gone: a restarted gateway does not bring them
 * back. */
static void test_retention_removes_ended_processes_and_rings(void **state)
{
	fixture *f = *state;
	char path[256], log[512], member[2][32];

	char *ended = http_create(&f->g, "/v1/processes", "{\"command\":[\"true\"]}");
	char *running = http_create(&f->g, "/v1/processes", "{\"command\":[\"sleep\",\"60\"]}");
	response made = http_json(&f->g, "POST", "/v1/rings", json_pack("{s:i, s:[s]}", "size", 2, "command", "true"));
	assert_int_equal(made.status, 201);
	json_t *ring = json_incref(made.json);
	response_free(&made);
	snprintf(path, sizeof(path), "/v1/processes/%s?wait=30", ended);
	json_t *p = http_get_ok(&f->g, path);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	json_decref(p);
	char ring_id[32];
	snprintf(ring_id, sizeof(ring_id), "%s", json_string_value(json_object_get(ring, "id")));
	snprintf(path, sizeof(path), "/v1/rings/%s?wait=30", ring_id);
	json_t *r = http_get_ok(&f->g, path);
	assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
	for (int i = 0; i < 2; i++)
		snprintf(member[i], sizeof(member[i]), "%s",
		         json_string_value(
		                 json_object_get(json_array_get(json_object_get(r, "members"), (size_t)i), "id")));
	json_decref(r);
	snprintf(log, sizeof(log), "%s.logs/%s.log", f->g.db, ended);
	assert_int_equal(access(log, F_OK), 0);

	char ended_path[128], ring_path[128];
	snprintf(ended_path, sizeof(ended_path), "/v1/processes/%s", ended);
	snprintf(ring_path, sizeof(ring_path), "/v1/rings/%s", ring_id);
	for (int i = 0; i < 150 && (get_status(f, ended_path) != 404 || get_status(f, ring_path) != 404); i++)
		usleep(100000);
	assert_int_equal(get_status(f, ended_path), 404);
	assert_int_equal(get_status(f, ring_path), 404);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/v1/processes/%s", member[i]);
		assert_int_equal(get_status(f, path), 404);
	}
	assert_int_not_equal(access(log, F_OK), 0);
	snprintf(path, sizeof(path), "/v1/processes/%s", running);
	p = http_get_ok(&f->g, path);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "running");
	json_decref(p);
	assert_int_equal(scalar(f, "SELECT count(*) FROM processes"), 1);
	assert_int_equal(scalar(f, "SELECT count(*) FROM rings"), 0);

	gateway_kill(&f->g);
	gateway_restart(&f->g);
	assert_int_equal(get_status(f, ended_path), 404);
	assert_int_equal(get_status(f, ring_path), 404);
	response d = http(&f->g, "DELETE", path, NULL, NULL);
	assert_int_equal(d.status, 200);
	response_free(&d);
	for (int i = 0; i < 150 && get_status(f, path) != 404; i++)
		usleep(100000);
	assert_int_equal(get_status(f, path), 404);
	assert_int_equal(scalar(f, "SELECT count(*) FROM processes"), 0);
	json_decref(ring);
	free(ended);
	free(running);
}

/* The ids of GET path's jobs, in order, space-separated; *next its
 * next_cursor ("" when null). */
static void list_ids(fixture *f, const char *path, char *ids, size_t len, char *next, size_t next_len)
{
	json_t *page = http_get_ok(&f->g, path), *j;
	size_t k, n = 0;

	ids[0] = '\0';
	json_array_foreach (json_object_get(page, "jobs"), k, j)
		n += (size_t)snprintf(ids + n, len - n, "%s%s", n ? " " : "",
		                      json_string_value(json_object_get(j, "id")));
	snprintf(next, next_len, "%s", json_string_value(json_object_get(page, "next_cursor")) ?: "");
	json_decref(page);
}

/* GET /v1/jobs: newest first across pools, by pool and by state, paged
 * with next_cursor; a manager's calls only when asked for by its id. */
static void test_job_list(void **state)
{
	fixture *f = *state;
	char *other = pool_create(&f->g, 1), ids[512], next[32], path[160], want[512];
	char *a = job_submit(&f->g, f->pool, json_pack("{s:s, s:[i,i]}", "function", "echo", "args", 1, 2));
	char *b = job_submit(&f->g, other, json_pack("{s:s, s:[i]}", "function", "echo", "args", 3));
	char *c = job_submit(&f->g, f->pool, json_pack("{s:s, s:[i]}", "function", "sleep", "args", 600000));
	job_wait_done(&f->g, a, 2);
	job_wait_done(&f->g, b, 1);
	char *m = http_create(&f->g, "/v1/managers", "{\"type\": \"dict\"}");
	snprintf(path, sizeof(path), "/v1/managers/%s/calls", m);
	response r = http(&f->g, "POST", path, "{\"method\":\"len\",\"args\":[]}", NULL);
	assert_int_equal(r.status, 202);
	char *call = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);

	list_ids(f, "/v1/jobs", ids, sizeof(ids), next, sizeof(next));
	snprintf(want, sizeof(want), "%s %s %s", c, b, a);
	assert_string_equal(ids, want);
	assert_string_equal(next, "");
	snprintf(path, sizeof(path), "/v1/jobs?pool=%s", f->pool);
	list_ids(f, path, ids, sizeof(ids), next, sizeof(next));
	snprintf(want, sizeof(want), "%s %s", c, a);
	assert_string_equal(ids, want);
	list_ids(f, "/v1/jobs?state=running", ids, sizeof(ids), next, sizeof(next));
	assert_string_equal(ids, c);
	snprintf(path, sizeof(path), "/v1/jobs?pool=%s", m);
	list_ids(f, path, ids, sizeof(ids), next, sizeof(next));
	assert_string_equal(ids, call);

	/* One a page: the same three; the last page says none is left. */
	const char *order[] = {c, b, a};
	list_ids(f, "/v1/jobs?limit=1", ids, sizeof(ids), next, sizeof(next));
	for (int i = 0; i < 3; i++) {
		assert_string_equal(ids, order[i]);
		if (i == 2)
			break;
		assert_true(next[0]);
		snprintf(path, sizeof(path), "/v1/jobs?limit=1&cursor=%s", next);
		list_ids(f, path, ids, sizeof(ids), next, sizeof(next));
	}
	assert_string_equal(next, "");

	r = http(&f->g, "GET", "/v1/jobs?state=finished", NULL, NULL);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "query 'state' must be submitting, running, done or cancelled");
	response_free(&r);
	r = http(&f->g, "GET", "/v1/jobs?pool=p-0000000000000000", NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	r = http(&f->g, "POST", "/v1/jobs", "{}", NULL);
	assert_int_equal(r.status, 405);
	response_free(&r);
	free(other);
	free(a);
	free(b);
	free(c);
	free(m);
	free(call);
}

/* A job may carry a name: shown with it, in the list, and after a
 * restart; a job without one shows none. */
static void test_job_name(void **state)
{
	fixture *f = *state;
	char *named =
	        job_submit(&f->g, f->pool,
	                   json_pack("{s:s, s:[i], s:s}", "function", "echo", "args", 1, "name", "nightly résumés"));
	char *plain = job_submit(&f->g, f->pool, json_pack("{s:s, s:[i]}", "function", "echo", "args", 2));
	job_wait_done(&f->g, named, 1);
	for (int round = 0; round < 2; round++) {
		response r = job_request(f, "GET", named);
		assert_string_equal(json_string_value(json_object_get(r.json, "name")), "nightly résumés");
		response_free(&r);
		r = job_request(f, "GET", plain);
		assert_null(json_object_get(r.json, "name"));
		response_free(&r);
		r = http(&f->g, "GET", "/v1/jobs", NULL, NULL);
		assert_string_equal(
		        json_string_value(json_object_get(json_array_get(json_object_get(r.json, "jobs"), 1), "name")),
		        "nightly résumés");
		response_free(&r);
		if (round == 0) {
			gateway_kill(&f->g);
			gateway_restart(&f->g);
		}
	}
	free(named);
	free(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_cancel_running_job, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_job_list, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_job_name, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_remove_ended_job, shared_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_removal_resumes_after_crash, shared_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_cancel_resumes_after_crash, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_retention_removes_ended_jobs, retaining_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_retention_removes_terminated_pools, retaining_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_retention_removes_ended_processes_and_rings, retaining_setup,
	                                        pool_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
