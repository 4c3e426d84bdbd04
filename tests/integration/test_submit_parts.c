/*
 * A map sent in parts: POST /v1/pools/{id}/map with a 'total' above its
 * arguments makes a job "submitting"; POST /v1/jobs/{id}/args brings the
 * next part at offset 'received'. A wrong offset, a part past the total or
 * a part to an ended job is refused with 409 and the reason; a part stored
 * before is answered as stored (a retry whose answer was lost); the parts
 * survive a kill -9 of the gateway; a cancelled job keeps what it received.
 * Tasks that carry several inputs each make a job that counts by input.
 * A million tasks, sent in parts by libstrand, give exact results across a
 * kill -9 mid-map while retention removes an older job beside them.
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

#include "client/client.h"
#include "tests/support/harness.h"

typedef pool_fixture fixture;

/* Integers lo..hi-1 as a JSON array. */
static json_t *range_of(int lo, int hi)
{
	json_t *a = json_array();

	for (int i = lo; i < hi; i++)
		json_array_append_new(a, json_integer(i));
	return a;
}

/* POSTs the part lo..hi-1 at offset; returns the response. */
static response send_part(fixture *f, const char *job, int offset, int lo, int hi)
{
	char path[96];

	snprintf(path, sizeof(path), "/v1/jobs/%s/args", job);
	return http_json(&f->g, "POST", path, json_pack("{s:i, s:o}", "offset", offset, "args", range_of(lo, hi)));
}

static void expect_job(const response *r, int status, const char *state, long long received)
{
	if (r->status != status)
		fail_msg("status %ld, expected %d: %s", r->status, status, r->body);
	if (state)
		assert_string_equal(json_string_value(json_object_get(r->json, "state")), state);
	if (received >= 0)
		assert_int_equal(json_integer_value(json_object_get(r->json, "received")), received);
}

static void expect_refused(const response *r, const char *part)
{
	if (r->status != 409 || !strstr(r->body, part))
		fail_msg("status %ld '%s', expected 409 with '%s'", r->status, r->body, part);
}

/* The job's results in input order: echo of 0..n-1, each index once. */
static void expect_echoes(fixture *f, const char *job, int n)
{
	json_t *items = job_results(&f->g, job, "input", n + 1), *it;
	size_t k;

	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		assert_true(json_is_true(json_object_get(it, "ok")));
		assert_int_equal(json_integer_value(json_object_get(it, "value")), (json_int_t)k);
	}
	json_decref(items);
}

/* Starts a map of total echo tasks with the first `first` arguments. */
static char *map_start(fixture *f, int first, int total)
{
	char path[96];
	response r;
	char *job;

	snprintf(path, sizeof(path), "/v1/pools/%s/map", f->pool);
	r = http_json(&f->g, "POST", path,
	              json_pack("{s:s, s:o, s:i}", "function", "echo", "args", range_of(0, first), "total", total));
	expect_job(&r, 202, first < total ? "submitting" : NULL, first < total ? first : -1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "total")), total);
	job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return job;
}

static void test_map_in_parts(void **state)
{
	fixture *f = *state;
	char *job = map_start(f, 3, 7);
	response r;

	/* The first part's tasks run while the rest is awaited. */
	assert_int_equal(job_wait_done(&f->g, job, 3), 3);
	r = send_part(f, job, 5, 5, 7);
	expect_refused(&r, "starts at offset 3");
	response_free(&r);
	r = send_part(f, job, 3, 3, 5);
	expect_job(&r, 200, "submitting", 5);
	response_free(&r);
	r = send_part(f, job, 3, 3, 5); /* a retry: stored already */
	expect_job(&r, 200, "submitting", 5);
	response_free(&r);
	r = send_part(f, job, 4, 4, 6); /* overlaps what is stored */
	expect_refused(&r, "starts at offset 5");
	response_free(&r);
	r = send_part(f, job, 5, 5, 8);
	expect_refused(&r, "goes 1 past");
	response_free(&r);
	r = send_part(f, job, 5, 5, 7);
	assert_int_equal(r.status, 200);
	assert_null(json_object_get(r.json, "received"));
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 7), 7);
	expect_echoes(f, job, 7);
	r = send_part(f, job, 7, 7, 8);
	expect_refused(&r, "is done");
	response_free(&r);
	r = http(&f->g, "POST", "/v1/jobs/j-0000000000000000/args", "{\"offset\":0,\"args\":[]}", NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	r = http(&f->g, "GET", "/v1/jobs/j-0000000000000000/args", NULL, NULL);
	assert_int_equal(r.status, 405);
	response_free(&r);
	free(job);
}

/* A job of nothing but parts: the map brings none of them. */
static void test_parts_only(void **state)
{
	fixture *f = *state;
	char *job = map_start(f, 0, 4);
	response r = send_part(f, job, 0, 0, 4);

	expect_job(&r, 200, NULL, -1);
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 4), 4);
	expect_echoes(f, job, 4);
	free(job);
}

/* What was received is kept across a kill -9, and the job goes on from
 * there after the restart. */
static void test_parts_survive_kill(void **state)
{
	fixture *f = *state;
	char *job = map_start(f, 2, 6);
	char path[96];
	response r = send_part(f, job, 2, 2, 4);

	expect_job(&r, 200, "submitting", 4);
	response_free(&r);
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = http(&f->g, "GET", path, NULL, NULL);
	expect_job(&r, 200, "submitting", 4);
	response_free(&r);
	r = send_part(f, job, 4, 4, 6);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 6), 6);
	expect_echoes(f, job, 6);
	free(job);
}

/* A cancelled submitting job is what it received: its total shrinks to
 * that, each of those indexes is answered once, and no part is taken. */
static void test_cancel_while_submitting(void **state)
{
	fixture *f = *state;
	char *job = map_start(f, 3, 1000);
	char path[96];
	response r;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = http(&f->g, "DELETE", path, NULL, NULL);
	expect_job(&r, 200, "cancelled", -1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "total")), 3);
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 3), 3);
	json_t *items = job_results(&f->g, job, "input", 10), *it;
	size_t k;
	assert_int_equal(json_array_size(items), 3);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		if (json_is_true(json_object_get(it, "ok")))
			assert_int_equal(json_integer_value(json_object_get(it, "value")), (json_int_t)k);
		else
			assert_string_equal(json_string_value(json_object_get(it, "error")), "cancelled");
	}
	json_decref(items);
	r = send_part(f, job, 3, 3, 4);
	expect_refused(&r, "is cancelled");
	response_free(&r);
	assert_int_equal(gateway_stop(&f->g), 0);
	gateway_restart(&f->g);
	r = http(&f->g, "GET", path, NULL, NULL);
	expect_job(&r, 200, "cancelled", -1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "total")), 3);
	response_free(&r);
	free(job);
}

/* Posts body to path and expects status with part in its body. */
static void expect_status(fixture *f, const char *path, json_t *body, long status, const char *part)
{
	response r = http_json(&f->g, "POST", path, body);

	if (r.status != status || !strstr(r.body, part))
		fail_msg("status %ld '%s', expected %ld with '%s'", r.status, r.body, status, part);
	response_free(&r);
}

/* The job's total, done and failed, and its tasks' (all 0 if not shown). */
static void expect_counts(fixture *f, const char *job, long long total, long long done, long long failed,
                          long long tasks_total, long long tasks_done, long long tasks_failed)
{
	char path[96];
	response r;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = http(&f->g, "GET", path, NULL, NULL);
	json_t *tasks = json_object_get(r.json, "tasks");
	long long got[6] = {json_integer_value(json_object_get(r.json, "total")),
	                    json_integer_value(json_object_get(r.json, "done")),
	                    json_integer_value(json_object_get(r.json, "failed")),
	                    json_integer_value(json_object_get(tasks, "total")),
	                    json_integer_value(json_object_get(tasks, "done")),
	                    json_integer_value(json_object_get(tasks, "failed"))};
	long long want[6] = {total, done, failed, tasks_total, tasks_done, tasks_failed};
	for (int i = 0; i < 6; i++)
		if (got[i] != want[i])
			fail_msg("job %s: count %d is %lld, expected %lld: %s", job, i, got[i], want[i], r.body);
	response_free(&r);
}

/* Cancels job and waits until all of its inputs are done (failed). */
static void cancel_until_done(fixture *f, const char *job, long long inputs)
{
	char path[96];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	response r = http(&f->g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, inputs), inputs);
}

/* Tasks that carry several inputs (a client's chunks, "inputs"): the job
 * counts by input, its parts bring their counts, which must add up to
 * "input_total"; the counts and a failure's inputs survive a kill -9;
 * a failed task's inputs all fail with it, and a cancelled job's every
 * input not done. */
static void test_tasks_of_several_inputs(void **state)
{
	fixture *f = *state;
	char map[96], path[96], parts[96];
	response r;

	snprintf(map, sizeof(map), "/v1/pools/%s/map", f->pool);
	expect_status(f, map, json_pack("{s:s, s:[i,s], s:[i]}", "function", "sleep", "args", 0, "x", "inputs", 3), 400,
	              "'inputs' must be an array of 2 counts");
	expect_status(f, map, json_pack("{s:s, s:[i], s:[i]}", "function", "sleep", "args", 0, "inputs", 0), 400,
	              "'inputs[0]' must be an integer from 1 to 1000000");
	expect_status(f, map,
	              json_pack("{s:s, s:[i,s], s:[i,i], s:i}", "function", "sleep", "args", 0, "x", "inputs", 3, 2,
	                        "total", 4),
	              400, "'input_total' is required");
	expect_status(f, map,
	              json_pack("{s:s, s:[i,s], s:[i,i], s:i, s:i}", "function", "sleep", "args", 0, "x", "inputs", 3,
	                        2, "total", 4, "input_total", 6),
	              400, "'input_total'");
	expect_status(f, map, json_pack("{s:s, s:[i], s:i}", "function", "sleep", "args", 0, "input_total", 6), 400,
	              "'input_total' needs 'inputs'");
	expect_status(f, map,
	              json_pack("{s:s, s:[i], s:[i], s:i, s:i}", "function", "sleep", "args", 0, "inputs", 1, "total",
	                        10000001, "input_total", 20000000),
	              413, "a job whose tasks carry several inputs has at most 10000000 tasks ('total')");

	/* Tasks of 3, 2, 4 and 1 inputs; the second fails (sleep's argument
	 * must be a number), and takes its 2 inputs with it. */
	r = http_json(&f->g, "POST", map,
	              json_pack("{s:s, s:[i,s], s:[i,i], s:i, s:i}", "function", "sleep", "args", 0, "x", "inputs", 3,
	                        2, "total", 4, "input_total", 10));
	expect_job(&r, 202, "submitting", 2);
	char *job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 5), 5);
	expect_counts(f, job, 10, 5, 2, 4, 2, 1);
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	expect_counts(f, job, 10, 5, 2, 4, 2, 1);
	snprintf(parts, sizeof(parts), "/v1/jobs/%s/args", job);
	expect_status(f, parts, json_pack("{s:i, s:[i,i]}", "offset", 2, "args", 0, 0), 400,
	              "carry several inputs: this part must give 'inputs'");
	expect_status(f, parts, json_pack("{s:i, s:[i,i], s:[i,i]}", "offset", 2, "args", 0, 0, "inputs", 4, 2), 400,
	              "10 inputs ('input_total'), 5 received: this part's 6 do not add up to them");
	r = http_json(&f->g, "POST", parts,
	              json_pack("{s:i, s:[i,i], s:[i,i]}", "offset", 2, "args", 0, 0, "inputs", 4, 1));
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_int_equal(job_wait_done(&f->g, job, 10), 10);
	expect_counts(f, job, 10, 10, 2, 4, 4, 1);
	snprintf(path, sizeof(path), "/v1/jobs/%s/failures", job);
	r = http(&f->g, "GET", path, NULL, NULL);
	json_t *items = json_object_get(r.json, "items");
	assert_int_equal(json_array_size(items), 1);
	json_t *one = json_array_get(items, 0);
	assert_int_equal(json_integer_value(json_object_get(one, "index")), 3);
	assert_int_equal(json_integer_value(json_object_get(one, "task")), 1);
	assert_int_equal(json_integer_value(json_object_get(one, "inputs")), 2);
	assert_string_equal(json_string_value(json_object_get(one, "error")),
	                    "sleep: argument must be milliseconds (0 to 86400000)");
	response_free(&r);
	free(job);

	/* A job of one input a task takes no counts. */
	r = http_json(&f->g, "POST", map, json_pack("{s:s, s:[i], s:i}", "function", "echo", "args", 1, "total", 2));
	job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(parts, sizeof(parts), "/v1/jobs/%s/args", job);
	expect_status(f, parts, json_pack("{s:i, s:[i], s:[i]}", "offset", 1, "args", 2, "inputs", 5), 400,
	              "carry one input each: this part must not give 'inputs'");
	free(job);

	/* Cancelled while its tasks sleep: every input not done fails. */
	r = http_json(&f->g, "POST", map,
	              json_pack("{s:s, s:[i,i], s:[i,i]}", "function", "sleep", "args", 60000, 60000, "inputs", 5, 7));
	job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	expect_counts(f, job, 12, 0, 0, 2, 0, 0);
	cancel_until_done(f, job, 12);
	expect_counts(f, job, 12, 12, 12, 2, 2, 2);
	free(job);

	/* Cancelled while its parts come: it is the inputs it received. */
	r = http_json(&f->g, "POST", map,
	              json_pack("{s:s, s:[i], s:[i], s:i, s:i}", "function", "sleep", "args", 60000, "inputs", 4,
	                        "total", 3, "input_total", 9));
	job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	cancel_until_done(f, job, 4);
	expect_counts(f, job, 4, 4, 4, 1, 1, 1);
	free(job);
}

/* Long enough for the million-task job to be read whole once it ends
 * (some seconds under the sanitizers), which retention would remove too. */
static const char *const retain_10s[] = {"--retain", "10s", NULL};

static int retaining_setup(void **state)
{
	return pool_fixture_setup_with(state, retain_10s);
}

typedef struct exact {
	json_int_t next; /* the index expected next */
	long wrong;
} exact;

static int check_exact(void *ctx, json_int_t index, int ok, json_t *value)
{
	exact *x = ctx;

	x->wrong += index != x->next || !ok || json_integer_value(value) != index;
	x->next++;
	return 0;
}

static void test_million_tasks_exact_across_kill(void **state)
{
	fixture *f = *state;
	const int n = 1000000;
	json_t *args = json_array();
	char job[32], path[96];
	exact seen = {0};
	response r;

	/* A small job that ends first: retention removes it during the map
	 * (it is 8 s old when the map starts, the map's own results get 10 s
	 * to be read once it ends). */
	char *old = map_start(f, 2, 2);
	assert_int_equal(job_wait_done(&f->g, old, 2), 2);
	sleep(8);
	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_integer(i));
	strand_client *c = strand_client_new(f->g.base);
	assert_int_equal(strand_map(c, f->pool, "echo", args, 1, job), 0);
	json_decref(args);
	long long done = job_wait_done(&f->g, job, n / 4);
	assert_true(done >= n / 4);
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	assert_int_equal(strand_imap(c, job, 0, 100000, check_exact, &seen), 0);
	assert_int_equal(seen.next, n);
	assert_int_equal(seen.wrong, 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = http(&f->g, "GET", path, NULL, NULL);
	expect_job(&r, 200, "done", -1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "done")), n);
	assert_int_equal(json_integer_value(json_object_get(r.json, "failed")), 0);
	response_free(&r);
	/* The old job went by retention (10 s after it ended). */
	snprintf(path, sizeof(path), "/v1/jobs/%s", old);
	for (int i = 0; i < 1500; i++) {
		r = http(&f->g, "GET", path, NULL, NULL);
		int gone = r.status == 404;
		response_free(&r);
		if (gone)
			break;
		usleep(20000);
	}
	r = http(&f->g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	strand_client_free(c);
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_map_in_parts, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_parts_only, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_parts_survive_kill, pool_fixture_setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_cancel_while_submitting, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_tasks_of_several_inputs, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_million_tasks_exact_across_kill, retaining_setup,
	                                        pool_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
