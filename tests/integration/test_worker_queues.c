/*
 * Queues and pipes reached from inside a worker, over nng (the plugin API,
 * through tests/plugins/queue_plugin.c), meeting what is put and taken over
 * HTTP: both ways, long waits, pipe ends, and refusals.
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

static gateway g;
static char *pool;

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(pool);
	gateway_cleanup(&g);
	return 0;
}

/* Runs one task of qp.so:fn on arg (stolen) inside a worker of on's pool
 * in_pool; returns its outcome item (new reference). */
static json_t *task_on(const gateway *on, const char *in_pool, const char *fn, json_t *arg)
{
	char path[128], function[32];
	response r;
	json_t *item;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=60", in_pool);
	snprintf(function, sizeof(function), "qp.so:%s", fn);
	r = http_json(on, "POST", path, json_pack("{s:s, s:o}", "function", function, "arg", arg));
	assert_int_equal(r.status, 200);
	item = json_incref(r.json);
	response_free(&r);
	return item;
}

static json_t *task(const char *fn, json_t *arg)
{
	return task_on(&g, pool, fn, arg);
}

static void test_queue_both_ways(void **state)
{
	char path[160];
	(void)state;
	char *q = http_create(&g, "/v1/queues", NULL);

	/* A worker puts, HTTP takes. */
	json_t *t = task("put", json_pack("{s:s, s:{s:i}}", "queue", q, "item", "from", 1));
	assert_true(json_is_true(json_object_get(t, "ok")));
	json_decref(t);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?wait=5", q);
	response r = http(&g, "POST", path, NULL, NULL);
	assert_int_equal(
	        json_integer_value(json_object_get(json_array_get(json_object_get(r.json, "items"), 0), "from")), 1);
	response_free(&r);

	/* HTTP puts, a worker takes. */
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	r = http(&g, "POST", path, "{\"items\":[\"a\",[2]]}", NULL);
	response_free(&r);
	t = task("get", json_pack("{s:s, s:i}", "queue", q, "wait_ms", 1000));
	assert_string_equal(json_string_value(json_object_get(t, "value")), "a");
	json_decref(t);
	t = task("get", json_pack("{s:s, s:i}", "queue", q, "wait_ms", 1000));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "value"), 0)), 2);
	json_decref(t);
	/* Empty: null after the wait. */
	t = task("get", json_pack("{s:s, s:i}", "queue", q, "wait_ms", 200));
	assert_true(json_is_null(json_object_get(t, "value")));
	json_decref(t);
	free(q);
}

/* A put of item by a task of pool on on's queue q, which must succeed. */
static void put_from_task(const gateway *on, const char *in_pool, const char *q, int item)
{
	json_t *t = task_on(on, in_pool, "put", json_pack("{s:s, s:i}", "queue", q, "item", item));
	if (!json_is_true(json_object_get(t, "ok")))
		fail_msg("put %d: %s", item, json_string_value(json_object_get(t, "error")));
	json_decref(t);
}

/* A worker keeps its queue connection from task to task (two calls on it
 * here). The gateway crashes and starts again, the worker lives on: its
 * next task's queue call finds that connection closed and dials again,
 * instead of failing. */
static void queue_calls_around_a_restart(const char *const *args)
{
	gateway h;
	char path[160];

	gateway_start(&h, args);
	char *one = pool_create(&h, 1);
	pool_wait_connected(&h, one, 1);
	char *q = http_create(&h, "/v1/queues", NULL);
	put_from_task(&h, one, q, 0);
	put_from_task(&h, one, q, 1);
	gateway_kill(&h);
	gateway_restart(&h);
	pool_wait_connected(&h, one, 1); /* the same worker, adopted */
	put_from_task(&h, one, q, 2);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10", q);
	response r = http(&h, "POST", path, NULL, NULL);
	json_t *want = json_pack("[iii]", 0, 1, 2);
	assert_true(json_equal(json_object_get(r.json, "items"), want));
	json_decref(want);
	response_free(&r);
	free(q);
	free(one);
	gateway_cleanup(&h);
}

static void test_queue_calls_after_a_gateway_restart(void **state)
{
	(void)state;
	queue_calls_around_a_restart(NULL);
}

/* The same through a tls+tcp:// hub (on nng's TLS stream, a task's second
 * queue call failed: cancelling the read that watched the idle connection
 * closed it). */
static void test_queue_calls_over_a_tls_hub(void **state)
{
	(void)state;
	with_tls_args(queue_calls_around_a_restart);
}

static void test_pipe_between_worker_and_http(void **state)
{
	char path[200];
	(void)state;
	char *p = http_create(&g, "/v1/pipes", "{\"duplex\":true}");

	json_t *t = task("pipe_send", json_pack("{s:s, s:i, s:s}", "pipe", p, "end", 0, "item", "hello"));
	assert_true(json_is_true(json_object_get(t, "ok")));
	json_decref(t);
	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/1/recv?wait=5", p);
	response r = http(&g, "POST", path, NULL, NULL);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r.json, "items"), 0)), "hello");
	response_free(&r);

	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/1/send", p);
	r = http(&g, "POST", path, "{\"item\":\"back\"}", NULL);
	response_free(&r);
	t = task("pipe_recv", json_pack("{s:s, s:i, s:i}", "pipe", p, "end", 0, "wait_ms", 1000));
	assert_string_equal(json_string_value(json_object_get(t, "value")), "back");
	json_decref(t);
	free(p);
}

/* The size of what task fn's arg names: its value, an integer. */
static json_int_t size_seen(json_t *arg)
{
	json_t *t = task("size", arg);
	if (!json_is_integer(json_object_get(t, "value")))
		fail_msg("size: %s", json_dumps(t, 0));
	json_int_t n = json_integer_value(json_object_get(t, "value"));
	json_decref(t);
	return n;
}

/* A task asks how many items wait: in a queue (as they are put and
 * taken over HTTP), and for each end of a pipe to receive. */
static void test_sizes_from_a_task(void **state)
{
	char path[200];
	(void)state;
	char *q = http_create(&g, "/v1/queues", NULL);
	assert_int_equal(size_seen(json_pack("{s:s}", "queue", q)), 0);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	response r = http(&g, "POST", path, "{\"items\":[1,2,3]}", NULL);
	response_free(&r);
	assert_int_equal(size_seen(json_pack("{s:s}", "queue", q)), 3);
	snprintf(path, sizeof(path), "/v1/queues/%s/take", q);
	r = http(&g, "POST", path, NULL, NULL);
	response_free(&r);
	assert_int_equal(size_seen(json_pack("{s:s}", "queue", q)), 2);

	/* A duplex pipe: what end 1 sent waits for end 0, nothing for end 1. */
	char *p = http_create(&g, "/v1/pipes", "{\"duplex\":true}");
	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/1/send", p);
	r = http(&g, "POST", path, "{\"item\":\"one\"}", NULL);
	response_free(&r);
	r = http(&g, "POST", path, "{\"item\":\"two\"}", NULL);
	response_free(&r);
	assert_int_equal(size_seen(json_pack("{s:s, s:i}", "pipe", p, "end", 0)), 2);
	assert_int_equal(size_seen(json_pack("{s:s, s:i}", "pipe", p, "end", 1)), 0);

	/* No such queue: the task fails, as any refused call. */
	json_t *t = task("size", json_pack("{s:s}", "queue", "q-0000000000000000"));
	assert_true(json_is_false(json_object_get(t, "ok")));
	json_decref(t);
	free(p);
	free(q);
}

static void test_refusals_are_task_errors(void **state)
{
	(void)state;
	json_t *t = task("put", json_pack("{s:s, s:i}", "queue", "q-0000000000000000", "item", 1));
	assert_true(json_is_false(json_object_get(t, "ok")));
	json_decref(t);
	char *s = http_create(&g, "/v1/pipes", "{\"duplex\":false}");
	t = task("pipe_send", json_pack("{s:s, s:i, s:i}", "pipe", s, "end", 1, "item", 1)); /* end 1 only receives */
	assert_true(json_is_false(json_object_get(t, "ok")));
	json_decref(t);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_queue_both_ways),
	        cmocka_unit_test(test_pipe_between_worker_and_http),
	        cmocka_unit_test(test_sizes_from_a_task),
	        cmocka_unit_test(test_refusals_are_task_errors),
	        cmocka_unit_test(test_queue_calls_after_a_gateway_restart),
	        cmocka_unit_test(test_queue_calls_over_a_tls_hub),
	};
	return cmocka_run_group_tests_name("worker_queues", tests, setup, teardown);
}
