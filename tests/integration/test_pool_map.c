/*
 * Pool.map end to end: a real gateway, real workers, real SQLite, loopback.
 * Every test asserts the exact result set: nothing lost, nothing twice.
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

#include "tests/support/harness.h"

typedef pool_fixture fixture;

static char *submit(fixture *f, json_t *spec)
{
	return job_submit(&f->g, f->pool, spec);
}

static json_t *collect(fixture *f, const char *job, const char *order, int limit)
{
	return job_results(&f->g, job, order, limit);
}

static json_t *range_args(int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:i, s:s}", "i", i, "tag", "x"));
	return a;
}

/* n arguments, each a string of len copies of fill. */
static json_t *big_args(int n, size_t len, char fill)
{
	char *big = malloc(len + 1);
	json_t *args = json_array();

	memset(big, fill, len);
	big[len] = 0;
	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_string(big));
	free(big);
	return args;
}

static void test_map_10000_input_order(void **state)
{
	fixture *f = *state;
	const int n = 10000;
	char *job = submit(f, json_pack("{s:s, s:o}", "function", "echo", "args", range_args(n)));
	json_t *items = collect(f, job, "input", 3000);
	json_t *it;
	size_t k;

	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		assert_true(json_is_true(json_object_get(it, "ok")));
		assert_int_equal(json_integer_value(json_object_get(json_object_get(it, "value"), "i")), (json_int_t)k);
	}
	json_decref(items);
	free(job);
}

static void test_map_10000_completion_order(void **state)
{
	fixture *f = *state;
	const int n = 10000;
	char *job = submit(f, json_pack("{s:s, s:o, s:i}", "function", "echo", "args", range_args(n), "chunksize", 7));
	json_t *items = collect(f, job, "completion", 1234);
	json_t *it;
	size_t k;

	assert_each_index_once(items, n);
	json_array_foreach (items, k, it) {
		json_int_t idx = json_integer_value(json_object_get(it, "index"));
		assert_int_equal(json_integer_value(json_object_get(json_object_get(it, "value"), "i")), idx);
	}
	json_decref(items);
	free(job);
}

static void test_apply_wait_returns_value(void **state)
{
	fixture *f = *state;
	char path[128];
	response r;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=30", f->pool);
	r = http(&f->g, "POST", path, "{\"function\":\"echo\",\"arg\":{\"answer\":42}}", NULL);
	assert_int_equal(r.status, 200);
	assert_true(json_is_true(json_object_get(r.json, "ok")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json, "value"), "answer")), 42);
	response_free(&r);

	/* Without wait: 202 and a job to poll. */
	snprintf(path, sizeof(path), "/v1/pools/%s/apply", f->pool);
	r = http(&f->g, "POST", path, "{\"function\":\"sleep\",\"arg\":5}", NULL);
	assert_int_equal(r.status, 202);
	char *job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	json_t *items = collect(f, job, "input", 10);
	assert_int_equal(json_array_size(items), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "value")), 5);
	json_decref(items);
	free(job);
}

/* GET /v1/jobs/{id}/failures: every failed task once, in index order,
 * with its error and attempts, its input, the worker it ran on and for
 * how long, across pages. */
static void test_failures_paged(void **state)
{
	fixture *f = *state;
	const int n = 3000;
	json_t *args = json_array();
	char path[160];
	int seen = 0;

	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_integer(i % 7 == 3 ? -i : 0));
	char *job = submit(f, json_pack("{s:s, s:o, s:b, s:i}", "function", "sleep", "args", args, "retry_errors", 1,
	                                "max_attempts", 2));
	json_decref(collect(f, job, "completion", 3000)); /* all done */
	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	json_t *pool = http_get_ok(&f->g, path);
	char *workers = json_dumps(json_object_get(pool, "workers"), JSON_COMPACT);
	json_decref(pool);
	const char *cursor = "0";
	char *next = NULL;
	for (int page = 0; page < 100; page++) {
		snprintf(path, sizeof(path), "/v1/jobs/%s/failures?limit=50&cursor=%s", job, cursor);
		json_t *p = http_get_ok(&f->g, path), *it;
		size_t k;
		json_array_foreach (json_object_get(p, "items"), k, it) {
			int want = 3 + 7 * seen++;
			assert_int_equal(json_integer_value(json_object_get(it, "index")), want);
			assert_int_equal(json_integer_value(json_object_get(it, "attempts")), 2);
			assert_string_equal(json_string_value(json_object_get(it, "error")),
			                    "sleep: argument must be milliseconds (0 to 86400000)");
			assert_int_equal(json_integer_value(json_object_get(it, "input")), -want);
			const char *worker = json_string_value(json_object_get(it, "worker"));
			assert_non_null(worker);
			assert_non_null(strstr(workers, worker)); /* one of the pool's */
			assert_true(json_is_real(json_object_get(it, "run_ms")));
			assert_true(json_real_value(json_object_get(it, "run_ms")) >= 0);
		}
		assert_true(json_array_size(json_object_get(p, "items")) <= 50);
		int end = json_is_true(json_object_get(p, "end"));
		free(next);
		next = strdup(json_string_value(json_object_get(p, "next_cursor")));
		cursor = next;
		json_decref(p);
		if (end)
			break;
	}
	assert_int_equal(seen, (n + 3) / 7);
	assert_string_equal(cursor, "3000");
	free(next);
	free(workers);
	free(job);

	/* An input over 1 KiB: its head, cut between characters, and its size. */
	char big[1200 * 2 + 1] = "";
	for (int i = 0; i < 1200; i++)
		strcat(big, "\xc3\xa9"); /* é: two bytes in UTF-8 */
	json_t *one = json_array();
	json_array_append_new(one, json_string(big));
	job = submit(f, json_pack("{s:s, s:o}", "function", "fail", "args", one));
	json_decref(collect(f, job, "completion", 10));
	snprintf(path, sizeof(path), "/v1/jobs/%s/failures", job);
	json_t *p = http_get_ok(&f->g, path), *it = json_array_get(json_object_get(p, "items"), 0);
	assert_null(json_object_get(it, "input"));
	assert_int_equal(json_integer_value(json_object_get(it, "input_bytes")), 2 + 1200 * 2);
	const char *head = json_string_value(json_object_get(it, "input_head"));
	assert_non_null(head);
	assert_int_equal(strlen(head), 1023); /* the quote, then 511 whole é */
	json_decref(p);

	snprintf(path, sizeof(path), "/v1/jobs/%s/failures?limit=0", job);
	response r = http(&f->g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 400);
	response_free(&r);
	r = http(&f->g, "GET", "/v1/jobs/j-0000000000000000/failures", NULL, NULL);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "no such job");
	response_free(&r);
	free(job);
}

/* A page by columns as the items it stands for ({"index","ok","value"} or
 * {"index","ok","error"}), its runs and failed positions checked to agree
 * with its values. */
static json_t *columns_as_items(json_t *page)
{
	json_t *values = json_object_get(page, "values"), *items = json_array(), *run, *pos;
	size_t k, at = 0;

	assert_true(json_is_array(values));
	json_array_foreach (json_object_get(page, "indexes"), k, run) {
		json_int_t first = json_integer_value(json_array_get(run, 0)),
		           count = json_integer_value(json_array_get(run, 1));
		assert_int_equal(json_array_size(run), 2);
		assert_true(count >= 1);
		for (json_int_t i = 0; i < count; i++, at++)
			json_array_append_new(items, json_pack("{s:I, s:b, s:O}", "index", first + i, "ok", 1, "value",
			                                       json_array_get(values, at)));
	}
	assert_int_equal(at, json_array_size(values));
	json_array_foreach (json_object_get(page, "failed"), k, pos) {
		json_t *it = json_array_get(items, (size_t)json_integer_value(pos));
		assert_non_null(it);
		json_object_set_new(it, "ok", json_false());
		json_object_set(it, "error", json_object_get(it, "value"));
		json_object_del(it, "value");
	}
	return items;
}

/* A job's pages by columns hold what its pages by items do, page for page
 * (the same cursors, limits and next cursors), in both orders; the input
 * order's page is one run. */
static void test_results_by_columns(void **state)
{
	fixture *f = *state;
	const int n = 3000;
	json_t *args = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_integer(i % 7 == 3 ? -i : i % 5));
	char *job = submit(f, json_pack("{s:s, s:o, s:i}", "function", "sleep", "args", args, "chunksize", 3));
	json_decref(collect(f, job, "completion", 3000)); /* all done */
	for (int completion = 0; completion < 2; completion++) {
		char cursor[32] = "0";
		int pages = 0, complete = 0;
		while (!complete && pages++ < 10) {
			char path[256];
			snprintf(path, sizeof(path), "/v1/jobs/%s/results?order=%s&limit=700&cursor=%s", job,
			         completion ? "completion" : "input", cursor);
			json_t *items = http_get_ok(&f->g, path);
			strcat(path, "&shape=columns");
			json_t *columns = http_get_ok(&f->g, path), *as_items = columns_as_items(columns);
			assert_true(json_equal(as_items, json_object_get(items, "items")));
			assert_true(json_equal(json_object_get(columns, "next_cursor"),
			                       json_object_get(items, "next_cursor")));
			assert_true(
			        json_equal(json_object_get(columns, "complete"), json_object_get(items, "complete")));
			assert_null(json_object_get(columns, "items"));
			if (!completion) {
				json_t *runs = json_object_get(columns, "indexes");
				assert_int_equal(json_array_size(runs), 1);
				assert_int_equal(json_integer_value(json_array_get(json_array_get(runs, 0), 0)),
				                 atoi(cursor));
			}
			snprintf(cursor, sizeof(cursor), "%s",
			         json_string_value(json_object_get(items, "next_cursor")));
			complete = json_is_true(json_object_get(items, "complete"));
			json_decref(as_items);
			json_decref(columns);
			json_decref(items);
		}
		assert_int_equal(pages, 5); /* 3000 in pages of 700 */
		assert_true(complete);
	}
	/* The failed ones of the first page by columns, exactly. */
	char path[160];
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?shape=columns&limit=20", job);
	json_t *page = http_get_ok(&f->g, path);
	json_t *failed = json_loads("[3,10,17]", 0, NULL);
	assert_true(json_equal(json_object_get(page, "failed"), failed));
	assert_string_equal(json_string_value(json_array_get(json_object_get(page, "values"), 3)),
	                    "sleep: argument must be milliseconds (0 to 86400000)");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(page, "values"), 4)), 4);
	json_decref(failed);
	json_decref(page);
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?shape=rows", job);
	response r = http(&f->g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "query parameter 'shape' must be 'items' or 'columns'");
	response_free(&r);
	free(job);
}

/* A page by columns of large results ends before 16 MiB, as a page by
 * items does, and the next page goes on from there: each index once. */
static void test_columns_page_bounded(void **state)
{
	fixture *f = *state;
	const int n = 20;
	const size_t len = 1000000;
	int seen[20] = {0}, pages = 0, complete = 0;
	char cursor[32] = "0";
	char *job = submit(f, json_pack("{s:s, s:o}", "function", "echo", "args", big_args(n, len, 'b')));
	json_decref(collect(f, job, "completion", 1)); /* all done */
	while (!complete && pages++ < n) {
		char path[160];
		snprintf(path, sizeof(path), "/v1/jobs/%s/results?shape=columns&order=completion&limit=100&cursor=%s",
		         job, cursor);
		response r = http(&f->g, "GET", path, NULL, NULL);
		assert_int_equal(r.status, 200);
		assert_true(r.len <= 16u << 20);
		json_t *items = columns_as_items(r.json), *it;
		size_t k;
		assert_true(json_array_size(items) >= 1 && json_array_size(items) < (size_t)n);
		json_array_foreach (items, k, it) {
			json_int_t index = json_integer_value(json_object_get(it, "index"));
			assert_true(index >= 0 && index < n);
			seen[index]++;
			assert_int_equal(strlen(json_string_value(json_object_get(it, "value"))), len);
		}
		snprintf(cursor, sizeof(cursor), "%s", json_string_value(json_object_get(r.json, "next_cursor")));
		complete = json_is_true(json_object_get(r.json, "complete"));
		json_decref(items);
		response_free(&r);
	}
	assert_true(complete);
	assert_true(pages >= 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(seen[i], 1);
	free(job);
}

static void test_plugin_pi(void **state)
{
	fixture *f = *state;
	json_t *args = json_array();
	json_t *items, *it;
	size_t k;
	double hits = 0;

	for (int i = 0; i < 20; i++)
		json_array_append_new(args, json_integer(50000));
	char *job = submit(f, json_pack("{s:s, s:o}", "function", "pi.so:pi_hits", "args", args));
	items = collect(f, job, "input", 100);
	assert_int_equal(json_array_size(items), 20);
	json_array_foreach (items, k, it) {
		assert_true(json_is_true(json_object_get(it, "ok")));
		hits += (double)json_integer_value(json_object_get(it, "value"));
	}
	double pi = 4.0 * hits / (20.0 * 50000.0);
	assert_true(pi > 3.1 && pi < 3.2);
	json_decref(items);
	free(job);
}

static void test_failures_are_results(void **state)
{
	fixture *f = *state;
	char path[128];
	response after;
	struct {
		json_t *spec;
		const char *error_part;
	} cases[] = {
	        {json_pack("{s:s, s:[s,s,s]}", "function", "fail", "args", "boom", "boom", "boom"), "boom"},
	        {json_pack("{s:s, s:[i,i]}", "function", "missing.so:fn", "args", 1, 2), "not found"},
	        {json_pack("{s:s, s:[i]}", "function", "pi.so:no_such_symbol", "args", 1),
	         "defines no function no_such_symbol"},
	        {json_pack("{s:s, s:[s]}", "function", "pi.so:pi_hits", "args", "many"), "sample count"},
	        {json_pack("{s:[s,s,s], s:[i,i]}", "command", "sh", "-c", "echo oops >&2; exit 3", "args", 1, 2),
	         "status 3: oops"},
	        {json_pack("{s:[s,s,s], s:[i]}", "command", "sh", "-c", "echo not json", "args", 1), "no JSON"},
	        {json_pack("{s:[s], s:[i]}", "command", "/nonexistent/program", "args", 1), "status 127"},
	        {json_pack("{s:s, s:[s]}", "function", "sleep", "args", "soon"), "milliseconds"},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t n = json_array_size(json_object_get(cases[c].spec, "args"));
		char *job = submit(f, cases[c].spec);
		json_t *items = collect(f, job, "input", 100);
		json_t *it;
		size_t k;
		assert_int_equal(json_array_size(items), n);
		json_array_foreach (items, k, it) {
			const char *err = json_string_value(json_object_get(it, "error"));
			assert_true(json_is_false(json_object_get(it, "ok")));
			assert_non_null(err);
			if (!strstr(err, cases[c].error_part))
				fail_msg("case %zu: error '%s' lacks '%s'", c, err, cases[c].error_part);
		}
		json_decref(items);
		snprintf(path, sizeof(path), "/v1/jobs/%s", job);
		response j = http(&f->g, "GET", path, NULL, NULL);
		assert_string_equal(json_string_value(json_object_get(j.json, "state")), "done");
		assert_int_equal(json_integer_value(json_object_get(j.json, "failed")), (json_int_t)n);
		response_free(&j);
		free(job);
	}
	/* The workers lived through all of it: none lost, none replaced. */
	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	after = http(&f->g, "GET", path, NULL, NULL);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(after.json, "counters"), "workers_lost")),
	                 0);
	assert_int_equal(
	        json_integer_value(json_object_get(json_object_get(after.json, "counters"), "workers_started")), 2);
	response_free(&after);
}

static void test_idempotency_key(void **state)
{
	fixture *f = *state;
	char path[128];
	const char *body = "{\"function\":\"echo\",\"args\":[1,2,3]}";
	response a, b, c;

	snprintf(path, sizeof(path), "/v1/pools/%s/map", f->pool);
	a = http(&f->g, "POST", path, body, "Idempotency-Key: k-123");
	b = http(&f->g, "POST", path, body, "Idempotency-Key: k-123");
	c = http(&f->g, "POST", path, body, "Idempotency-Key: k-456");
	assert_int_equal(a.status, 202);
	assert_int_equal(b.status, 202);
	assert_string_equal(json_string_value(json_object_get(a.json, "id")),
	                    json_string_value(json_object_get(b.json, "id")));
	assert_string_not_equal(json_string_value(json_object_get(a.json, "id")),
	                        json_string_value(json_object_get(c.json, "id")));
	response_free(&a);
	response_free(&b);
	response_free(&c);
}

static void test_crashed_worker_is_replaced(void **state)
{
	fixture *f = *state;
	char path[128];
	response r;

	/* A pool that allows two runs per task: "crash" kills its worker each
	 * time, so the task fails for good after the second loss, and the
	 * pool replaces both workers it lost. */
	r = http(&f->g, "POST", "/v1/pools", "{\"processes\":1,\"max_attempts\":2}", NULL);
	assert_int_equal(r.status, 201);
	char *pool = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	free(f->pool);
	f->pool = pool;
	char *job = submit(f, json_pack("{s:s, s:[n]}", "function", "crash", "args"));
	json_t *items = collect(f, job, "input", 10);
	assert_int_equal(json_array_size(items), 1);
	assert_non_null(
	        strstr(json_string_value(json_object_get(json_array_get(items, 0), "error")), "worker lost 2 times"));
	json_decref(items);
	free(job);
	/* The replacement serves new work. */
	job = submit(f, json_pack("{s:s, s:[i,i]}", "function", "echo", "args", 7, 8));
	items = collect(f, job, "input", 10);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 1), "value")), 8);
	json_decref(items);
	free(job);
	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	/* The same after a restart: the counters and the lost workers' rows
	 * (killed: 128 + SIGKILL) are kept. */
	for (int run = 0; run < 2; run++) {
		r = http(&f->g, "GET", path, NULL, NULL);
		json_t *counters = json_object_get(r.json, "counters"), *w;
		assert_int_equal(json_integer_value(json_object_get(counters, "workers_lost")), 2);
		assert_int_equal(json_integer_value(json_object_get(counters, "workers_started")), 3);
		size_t k;
		int exited = 0;
		json_array_foreach (json_object_get(r.json, "workers"), k, w)
			if (strcmp(json_string_value(json_object_get(w, "state")), "exited") == 0) {
				exited++;
				assert_int_equal(json_integer_value(json_object_get(w, "exit_code")), 137);
			}
		assert_int_equal(exited, 2);
		response_free(&r);
		if (run == 0) {
			gateway_kill(&f->g);
			gateway_restart(&f->g);
		}
	}
}

/* Arguments of 1 MB each on tasks that take no time (noop does not
 * read its argument): one worker's batch after the probe would hold all 39
 * others, 39 MB, past the 32 MiB frame a worker accepts, so it never
 * arrived and the job hung. The engine caps a batch's bytes; every task
 * runs once. */
static void test_map_large_arguments(void **state)
{
	fixture *f = *state;
	const int n = 40;

	free(f->pool);
	f->pool = pool_create(&f->g, 1);
	pool_wait_connected(&f->g, f->pool, 1);
	char *job = submit(f, json_pack("{s:s, s:o}", "function", "noop", "args", big_args(n, 1000000, 'a')));
	json_t *items = collect(f, job, "completion", 10);
	json_t *it;
	size_t k;

	assert_each_index_once(items, n);
	json_array_foreach (items, k, it) {
		assert_true(json_is_true(json_object_get(it, "ok")));
		assert_true(json_is_null(json_object_get(it, "value")));
	}
	json_decref(items);
	free(job);
}

static void test_pool_jobs_and_dashboard(void **state)
{
	fixture *f = *state;
	char path[128];
	char *first = submit(f, json_pack("{s:s, s:[i]}", "function", "echo", "args", 1));
	char *second = submit(f, json_pack("{s:s, s:[i,i]}", "function", "noop", "args", 1, 2));
	response r;

	snprintf(path, sizeof(path), "/v1/pools/%s/jobs", f->pool);
	r = http(&f->g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	json_t *jobs = json_object_get(r.json, "jobs");
	assert_int_equal(json_array_size(jobs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "id")), second);
	assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 1), "id")), first);
	response_free(&r);
	r = http(&f->g, "GET", "/", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.content_type, "text/html"));
	assert_non_null(strstr(r.body, "dashboard.js"));
	response_free(&r);
	r = http(&f->g, "GET", "/web/dashboard.js", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/javascript");
	assert_non_null(strstr(r.body, "from \"./views.js\""));
	response_free(&r);
	r = http(&f->g, "GET", "/web/views.js", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "/v1/pools"));
	response_free(&r);
	r = http(&f->g, "GET", "/web/..%2F..%2Fetc%2Fpasswd", NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	free(first);
	free(second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_map_10000_input_order, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_map_10000_completion_order, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_failures_paged, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_results_by_columns, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_columns_page_bounded, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_apply_wait_returns_value, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_plugin_pi, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_failures_are_results, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_idempotency_key, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_crashed_worker_is_replaced, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_map_large_arguments, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_pool_jobs_and_dashboard, pool_fixture_setup,
	                                        pool_fixture_teardown),
	};
	return cmocka_run_group_tests_name("pool_map", tests, NULL, NULL);
}
