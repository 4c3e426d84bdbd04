/*
 * POST /v1/pools/{id}/apply?wait=S, answered by the engine once the task's
 * result is committed: the result as a results page shows it, with its job
 * and Location; 202 with the job when the wait passes first; every apply
 * waiting on one job (one Idempotency-Key) gets the same result; a job
 * cancelled while an apply waits answers it with the cancelled result, and
 * a gateway that stops answers it with 202 before it exits. The waits below
 * are the longest the API takes: an apply that is not released when it
 * should be holds the test past its ctest timeout.
 */
#include <pthread.h>
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

#include "tests/support/harness.h"

typedef pool_fixture fixture;

/* One apply on its own thread. */
typedef struct apply_call {
	fixture *f;
	char path[128];
	const char *body;
	char header[160]; /* "" or "Idempotency-Key: ..." */
	response r;
	pthread_t thread;
} apply_call;

static void *apply_main(void *arg)
{
	apply_call *a = arg;

	a->r = http(&a->f->g, "POST", a->path, a->body, a->header[0] ? a->header : NULL);
	return NULL;
}

static void apply_begin(apply_call *a, fixture *f, int wait_s, const char *body, const char *key)
{
	a->f = f;
	snprintf(a->path, sizeof(a->path), "/v1/pools/%s/apply?wait=%d", f->pool, wait_s);
	a->body = body;
	a->header[0] = '\0';
	if (key)
		snprintf(a->header, sizeof(a->header), "Idempotency-Key: %s", key);
	assert_int_equal(pthread_create(&a->thread, NULL, apply_main, a), 0);
}

static response *apply_end(apply_call *a)
{
	pthread_join(a->thread, NULL);
	return &a->r;
}

/* The job an apply without wait made (202). */
static char *apply_queued(fixture *f, const char *body, const char *key)
{
	char path[128], header[160];
	response r;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply", f->pool);
	snprintf(header, sizeof(header), "Idempotency-Key: %s", key);
	r = http(&f->g, "POST", path, body, header);
	if (r.status != 202)
		fail_msg("apply: %ld %s", r.status, r.body);
	char *job = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return job;
}

static void expect_item(const response *r, const char *job, const char *item_json)
{
	char expected[512], location[96];
	json_t *want;

	if (r->status != 200)
		fail_msg("status %ld, expected 200: %s", r->status, r->body);
	/* output_last: these functions print nothing, so the pool has no line */
	snprintf(expected, sizeof(expected), "%.*s,\"job\":\"%s\",\"output_last\":0}", (int)strlen(item_json) - 1,
	         item_json, job);
	want = json_loads(expected, 0, NULL);
	assert_non_null(want);
	if (!json_equal(r->json, want))
		fail_msg("got %s, expected %s", r->body, expected);
	json_decref(want);
	snprintf(location, sizeof(location), "/v1/jobs/%s", job);
	assert_string_equal(r->location, location);
}

static void test_apply_answers_with_its_result(void **state)
{
	fixture *f = *state;
	char path[128];
	response r;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=30", f->pool);
	r = http(&f->g, "POST", path, "{\"function\":\"echo\",\"arg\":{\"s\":\"\\u00e9\\ud83d\\ude00\",\"n\":[1,2.5]}}",
	         NULL);
	const char *job = json_string_value(json_object_get(r.json, "job"));
	assert_non_null(job);
	expect_item(&r, job, "{\"index\":0,\"ok\":true,\"value\":{\"s\":\"\xc3\xa9\xf0\x9f\x98\x80\",\"n\":[1,2.5]}}");
	response_free(&r);

	r = http(&f->g, "POST", path, "{\"function\":\"fail\",\"arg\":\"boom \\\"quoted\\\"\"}", NULL);
	job = json_string_value(json_object_get(r.json, "job"));
	assert_non_null(job);
	expect_item(&r, job, "{\"index\":0,\"ok\":false,\"error\":\"boom \\\"quoted\\\"\"}");
	response_free(&r);
}

static void test_apply_past_its_wait_is_accepted(void **state)
{
	fixture *f = *state;
	char path[128], location[96];
	response r;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=1", f->pool);
	r = http(&f->g, "POST", path, "{\"function\":\"sleep\",\"arg\":3000}", NULL);
	if (r.status != 202)
		fail_msg("status %ld, expected 202: %s", r.status, r.body);
	char *job = strdup(json_string_value(json_object_get(r.json, "id")));
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "running");
	assert_int_equal(json_integer_value(json_object_get(r.json, "total")), 1);
	snprintf(location, sizeof(location), "/v1/jobs/%s", job);
	assert_string_equal(r.location, location);
	response_free(&r);

	json_t *items = job_results(&f->g, job, "input", 10);
	assert_int_equal(json_array_size(items), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "value")), 3000);
	json_decref(items);
	free(job);
}

static void test_applies_with_one_key_share_the_result(void **state)
{
	fixture *f = *state;
	const char *body = "{\"function\":\"sleep\",\"arg\":1500}";
	char *job = apply_queued(f, body, "shared-1");
	apply_call a[3];

	for (int i = 0; i < 3; i++)
		apply_begin(&a[i], f, 300, body, "shared-1");
	for (int i = 0; i < 3; i++) {
		response *r = apply_end(&a[i]);
		expect_item(r, job, "{\"index\":0,\"ok\":true,\"value\":1500}");
		response_free(r);
	}
	free(job);
}

static void test_apply_waiting_on_a_cancelled_job(void **state)
{
	fixture *f = *state;
	const char *body = "{\"function\":\"sleep\",\"arg\":600000}";
	char *job = apply_queued(f, body, "cancel-1");
	char path[96];
	apply_call a;
	response r;

	apply_begin(&a, f, 300, body, "cancel-1");
	usleep(300 * 1000); /* most often it waits by now; if not, it finds the job cancelled */
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = http(&f->g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	expect_item(apply_end(&a), job, "{\"index\":0,\"ok\":false,\"error\":\"cancelled\"}");
	response_free(&a.r);
	free(job);
}

static void test_apply_waiting_when_the_gateway_stops(void **state)
{
	fixture *f = *state;
	const char *body = "{\"function\":\"sleep\",\"arg\":600000}";
	char *job = apply_queued(f, body, "stop-1");
	apply_call a;

	apply_begin(&a, f, 300, body, "stop-1");
	usleep(300 * 1000);
	int status = gateway_stop(&f->g);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	response *r = apply_end(&a);
	if (r->status != 202)
		fail_msg("status %ld, expected 202: %s", r->status, r->body);
	assert_string_equal(json_string_value(json_object_get(r->json, "id")), job);
	response_free(r);
	free(job);
	gateway_restart(&f->g); /* for the teardown */
}

static void test_apply_refused(void **state)
{
	fixture *f = *state;
	char path[128];
	response r;

	r = http(&f->g, "POST", "/v1/pools/p-none/apply?wait=5", "{\"function\":\"echo\",\"arg\":1}", NULL);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "no such pool");
	response_free(&r);

	snprintf(path, sizeof(path), "/v1/pools/%s/close", f->pool);
	r = http(&f->g, "POST", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=5", f->pool);
	r = http(&f->g, "POST", path, "{\"function\":\"echo\",\"arg\":1}", NULL);
	assert_int_equal(r.status, 409);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "takes no new work"));
	response_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_apply_answers_with_its_result, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_apply_past_its_wait_is_accepted, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_applies_with_one_key_share_the_result, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_apply_waiting_on_a_cancelled_job, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_apply_waiting_when_the_gateway_stops, pool_fixture_setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_apply_refused, pool_fixture_setup, pool_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
