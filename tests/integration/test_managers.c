/*
 * Managers and AsyncManager calls on a real gateway: builtin types keep
 * state, calls to one manager run in the order made, four managers given a
 * 1 s call each run them at the same time (their own start and end times
 * overlap), errors are results, a manager whose process dies fails (its
 * state is gone) instead of coming back empty, so does a runtime manager
 * whose runtime dies, bad requests are refused;
 * and the CartPole demo runs.
 */
#include <setjmp.h>
#include <signal.h>
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

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	return 0;
}

static char *manager(const char *type)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"type\":\"%s\"}", type);
	response r = http(&g, "POST", "/v1/managers", body, NULL);
	char *id;

	if (r.status != 201)
		fail_msg("manager %s: %ld %s", type, r.status, r.body);
	assert_non_null(strstr(r.location, "/v1/managers/m-"));
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

/* Makes a call; returns its handle's id (new string). */
static char *call(const char *m, const char *method, json_t *args)
{
	char path[128];
	response r;
	char *id;

	snprintf(path, sizeof(path), "/v1/managers/%s/calls", m);
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "method", method, "args", args));
	if (r.status != 202)
		fail_msg("call %s: %ld %s", method, r.status, r.body);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "pending");
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

/* The call's outcome (new reference), waiting for it. */
static json_t *get(const char *m, const char *cid)
{
	char path[160];
	response r;
	json_t *j;

	snprintf(path, sizeof(path), "/v1/managers/%s/calls/%s?wait=30", m, cid);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "done");
	j = json_incref(r.json);
	response_free(&r);
	return j;
}

static json_t *call_get(const char *m, const char *method, json_t *args)
{
	char *cid = call(m, method, args);
	json_t *out = get(m, cid);

	free(cid);
	return out;
}

static json_t *result_of(json_t *outcome)
{
	return json_object_get(outcome, "result");
}

static void test_builtin_types_keep_state(void **state)
{
	(void)state;
	char *d = manager("dict");
	json_decref(call_get(d, "set", json_pack("[s,{s:i}]", "k", "x", 1)));
	json_t *o = call_get(d, "get", json_pack("[s]", "k"));
	assert_int_equal(json_integer_value(json_object_get(result_of(o), "x")), 1);
	json_decref(o);
	o = call_get(d, "len", json_array());
	assert_int_equal(json_integer_value(result_of(o)), 1);
	json_decref(o);

	/* A manager is not a pool: not listed as one, and no pool route takes it. */
	json_t *pools = http_get_ok(&g, "/v1/pools"), *p;
	size_t k;
	json_array_foreach (json_object_get(pools, "pools"), k, p)
		assert_string_not_equal(json_string_value(json_object_get(p, "id")), d);
	json_decref(pools);
	char path[128], want[160];
	snprintf(path, sizeof(path), "/v1/pools/%s/map", d);
	response r = http(&g, "POST", path, "{\"function\":\"echo\",\"args\":[1]}", NULL);
	assert_int_equal(r.status, 404);
	snprintf(want, sizeof(want), "no such pool: %s is a manager (/v1/managers/%s)", d, d);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), want);
	response_free(&r);

	char *q = manager("queue");
	json_decref(call_get(q, "put", json_pack("[s]", "first")));
	json_decref(call_get(q, "put", json_pack("[s]", "second")));
	o = call_get(q, "get", json_array());
	assert_string_equal(json_string_value(result_of(o)), "first");
	json_decref(o);

	char *l = manager("list");
	json_decref(call_get(l, "extend", json_pack("[[i,i,i]]", 1, 2, 3)));
	o = call_get(l, "pop", json_array());
	assert_int_equal(json_integer_value(result_of(o)), 3);
	json_decref(o);
	free(d);
	free(q);
	free(l);
}

static void test_calls_run_in_order(void **state)
{
	char *cids[100];

	(void)state;
	char *c = manager("counter");
	/* All made before any is read: handles come back at once. */
	for (int i = 0; i < 100; i++)
		cids[i] = call(c, "add", json_pack("[i]", 1));
	for (int i = 0; i < 100; i++) {
		json_t *o = get(c, cids[i]);
		assert_true(json_is_true(json_object_get(o, "ok")));
		assert_int_equal(json_integer_value(result_of(o)), i + 1);
		json_decref(o);
		free(cids[i]);
	}
	free(c);
}

static void test_four_async_managers_overlap(void **state)
{
	char *m[4], *cids[4];
	json_int_t started[4], ended[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		m[i] = manager("sleeper");
	for (int i = 0; i < 4; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/managers/%s", m[i]);
		pool_wait_connected(&g, m[i], 1);
	}
	for (int i = 0; i < 4; i++)
		cids[i] = call(m[i], "sleep", json_pack("[i]", 1000));
	for (int i = 0; i < 4; i++) {
		json_t *o = get(m[i], cids[i]);
		started[i] = json_integer_value(json_object_get(o, "started_ms"));
		ended[i] = json_integer_value(json_object_get(o, "ended_ms"));
		assert_true(ended[i] > started[i]);
		json_decref(o);
		free(cids[i]);
		free(m[i]);
	}
	/* All four were running at one moment: the latest start comes before
	 * the earliest end. */
	json_int_t last_start = started[0], first_end = ended[0];
	for (int i = 1; i < 4; i++) {
		last_start = started[i] > last_start ? started[i] : last_start;
		first_end = ended[i] < first_end ? ended[i] : first_end;
	}
	assert_true(last_start < first_end);
}

static void test_errors_and_bad_requests(void **state)
{
	(void)state;
	char *d = manager("dict");
	json_t *o = call_get(d, "get", json_pack("[s]", "missing"));
	assert_true(json_is_false(json_object_get(o, "ok")));
	assert_non_null(strstr(json_string_value(json_object_get(o, "error")), "KeyError"));
	json_decref(o);
	o = call_get(d, "fly", json_array());
	assert_non_null(strstr(json_string_value(json_object_get(o, "error")), "no method fly"));
	json_decref(o);

	char path[128];
	snprintf(path, sizeof(path), "/v1/managers/%s/calls", d);
	static const char *const bad[] = {"{}", "{\"method\":1}", "{\"method\":\"get\",\"args\":3}",
	                                  "{\"method\":\"get\",\"kwargs\":{}}", "nonsense"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		response r = http(&g, "POST", path, bad[i], NULL);
		assert_int_equal(r.status, 400);
		response_free(&r);
	}
	response r = http(&g, "POST", "/v1/managers", "{\"type\":\"teapot\"}", NULL);
	assert_int_equal(r.status, 422);
	response_free(&r);
	r = http(&g, "POST", "/v1/managers/m-0000000000000000/calls", "{\"method\":\"get\"}", NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	free(d);
}

/* A call that waits (POST .../calls?wait=S) answers with its outcome when
 * it comes in time, as GET of the call would; one that outlives its wait
 * gets its handle (202), read later as any other. */
static void test_a_call_that_waits_answers_with_its_outcome(void **state)
{
	char path[128], location[160];

	(void)state;
	char *d = manager("dict");
	snprintf(path, sizeof(path), "/v1/managers/%s/calls?wait=30", d);
	response r = http(&g, "POST", path, "{\"method\":\"set\",\"args\":[\"k\",5]}", NULL);
	assert_int_equal(r.status, 200);
	const char *cid = json_string_value(json_object_get(r.json, "id"));
	snprintf(location, sizeof(location), "/v1/managers/%s/calls/%s", d, cid);
	assert_string_equal(r.location, location);
	json_t *view = get(d, cid);
	assert_true(json_equal(r.json, view));
	assert_true(json_is_true(json_object_get(view, "ok")));
	json_decref(view);
	response_free(&r);
	r = http(&g, "POST", path, "{\"method\":\"get\",\"args\":[\"k\"]}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "result")), 5);
	response_free(&r);
	r = http(&g, "POST", path, "{\"method\":\"get\",\"args\":[\"missing\"]}", NULL);
	assert_int_equal(r.status, 200);
	assert_true(json_is_false(json_object_get(r.json, "ok")));
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "error")), "KeyError"));
	response_free(&r);

	char *s = manager("sleeper");
	snprintf(path, sizeof(path), "/v1/managers/%s/calls?wait=1", s);
	r = http(&g, "POST", path, "{\"method\":\"sleep\",\"args\":[2500]}", NULL);
	assert_int_equal(r.status, 202);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "pending");
	assert_string_equal(json_string_value(json_object_get(r.json, "manager")), s);
	view = get(s, json_string_value(json_object_get(r.json, "id")));
	assert_true(json_real_value(json_object_get(view, "result")) == 2500.0);
	json_decref(view);
	response_free(&r);

	static const char *const bad[] = {"?wait=-1", "?wait=x", "?wait=100000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "/v1/managers/%s/calls%s", d, bad[i]);
		r = http(&g, "POST", path, "{\"method\":\"len\"}", NULL);
		assert_int_equal(r.status, 400);
		response_free(&r);
	}
	snprintf(path, sizeof(path), "/v1/managers/m-0000000000000000/calls?wait=5");
	r = http(&g, "POST", path, "{\"method\":\"len\"}", NULL);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "no such manager");
	response_free(&r);
	free(d);
	free(s);
}

/* A manager of type runtime: its object is whatever the runtime keeps
 * between calls (here sys.path of strand's Python runtime), each call one
 * of the runtime's functions; a runtime that dies takes its state with it,
 * so later calls fail instead of meeting an empty runtime. */
static void test_runtime_manager(void **state)
{
	(void)state;
	response r = http(&g, "POST", "/v1/managers", "{\"type\":\"runtime\"}", NULL);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "a manager of type 'runtime' needs field 'runtime'"));
	response_free(&r);
	r = http(&g, "POST", "/v1/managers", "{\"type\":\"runtime\",\"runtime\":\"python\"}", NULL);
	assert_int_equal(r.status, 201);
	char *m = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);

	json_t *o = call_get(m, "sys:path.append", json_pack("[s]", "/strand-marker"));
	assert_true(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
	json_decref(call_get(m, "sys:path.append", json_pack("[s]", "/strand-marker")));
	o = call_get(m, "sys:path.count", json_pack("[s]", "/strand-marker"));
	assert_int_equal(json_integer_value(json_object_get(o, "result")), 2);
	json_decref(o);
	o = call_get(m, "sys:path.count", json_pack("[s, s]", "one", "two"));
	assert_string_equal(json_string_value(json_object_get(o, "error")),
	                    "a call to a runtime manager takes one argument (args: [ARG])");
	json_decref(o);

	o = call_get(m, "os:_exit", json_pack("[i]", 3));
	assert_true(json_is_false(json_object_get(o, "ok")));
	assert_non_null(
	        strstr(json_string_value(json_object_get(o, "error")), "the runtime exited (exited with code 3"));
	json_decref(o);
	o = call_get(m, "sys:path.count", json_pack("[s]", "/strand-marker"));
	assert_string_equal(json_string_value(json_object_get(o, "error")),
	                    "the manager's runtime has exited: the object it held is gone");
	json_decref(o);
	free(m);
}

static void test_dead_manager_fails(void **state)
{
	pid_t pid;

	(void)state;
	char *c = manager("counter");
	pool_wait_connected(&g, c, 1);
	json_decref(call_get(c, "add", json_pack("[i]", 5)));
	assert_int_equal(pool_worker_pids(&g, c, &pid, 1), 1);
	kill(-pid, SIGKILL); /* its group: the worker and its sandbox, if any */
	for (int i = 0; i < 100; i++) {
		json_t *p = pool_get(&g, c);
		int failed = strcmp(json_string_value(json_object_get(p, "state")), "failed") == 0;
		if (failed)
			assert_non_null(strstr(json_string_value(json_object_get(p, "reason")), "state"));
		json_decref(p);
		if (failed) {
			/* No silent restart from an empty counter. */
			char path[128];
			snprintf(path, sizeof(path), "/v1/managers/%s/calls", c);
			response r = http(&g, "POST", path, "{\"method\":\"get\"}", NULL);
			assert_int_equal(r.status, 409);
			response_free(&r);
			free(c);
			return;
		}
		usleep(50000);
	}
	fail_msg("manager did not fail after its process died");
}

static void test_cartpole_demo(void **state)
{
	char cmd[512];
	FILE *p;
	char line[256];
	int sync = 0, async = 0;

	(void)state;
	snprintf(cmd, sizeof(cmd), "%s/strand-example-async-manager --url %s --steps 20 --substeps 100", STRAND_BIN_DIR,
	         g.base);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		sync |= strncmp(line, "Sync manager took ", 18) == 0;
		async |= strncmp(line, "Async manager took ", 19) == 0;
	}
	assert_int_equal(pclose(p), 0);
	assert_true(sync && async);
	/* The demo's managers are gone. */
	response r = http(&g, "GET", "/v1/managers", NULL, NULL);
	json_t *m;
	size_t i;
	json_array_foreach (json_object_get(r.json, "managers"), i, m)
		if (json_string_value(json_object_get(m, "type")) &&
		    strcmp(json_string_value(json_object_get(m, "type")), "cartpole.so:CartPole") == 0)
			assert_string_equal(json_string_value(json_object_get(m, "state")), "terminated");
	response_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_builtin_types_keep_state),
	        cmocka_unit_test(test_calls_run_in_order),
	        cmocka_unit_test(test_a_call_that_waits_answers_with_its_outcome),
	        cmocka_unit_test(test_four_async_managers_overlap),
	        cmocka_unit_test(test_errors_and_bad_requests),
	        cmocka_unit_test(test_runtime_manager),
	        cmocka_unit_test(test_dead_manager_fails),
	        cmocka_unit_test(test_cartpole_demo),
	};
	return cmocka_run_group_tests_name("managers", tests, setup, teardown);
}
