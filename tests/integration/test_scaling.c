/*
 * Pool sizes on the local backend: PATCH /v1/pools/{id} grows and shrinks a
 * pool during a map, and every index comes back exactly once with its own
 * value; retired workers end cleanly (exit code 0, not counted lost); the
 * size survives a kill -9 of the gateway in the middle of a resize (the
 * restarted gateway starts or retires workers to reach it); a shrink racing
 * a worker's crash loses nothing. Autoscale takes a pool from 0 workers to
 * its max under a 20,000-task backlog, never above it, and back to 0 once
 * idle. Refusals carry their exact reasons.
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

typedef pool_fixture fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	gateway_start(&f->g, NULL);
	*state = f;
	return 0;
}

static response patch(fixture *f, const char *body)
{
	char path[96];

	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	return http(&f->g, "PATCH", path, body, NULL);
}

static void patch_ok(fixture *f, const char *body, int processes)
{
	response r = patch(f, body);

	if (r.status != 200)
		fail_msg("PATCH %s: %ld %s", body, r.status, r.body);
	assert_int_equal(json_integer_value(json_object_get(r.json, "processes")), processes);
	response_free(&r);
}

static long long pool_int(json_t *p, const char *key)
{
	return (long long)json_integer_value(json_object_get(p, key));
}

/* Waits (up to 60 s) until the pool has exactly n live workers, all of them
 * connected; returns the pool's view then. */
static json_t *wait_live(fixture *f, int n)
{
	for (int i = 0; i < 600; i++) {
		json_t *p = pool_get(&f->g, f->pool), *w;
		size_t k;
		int connected = 0;
		json_array_foreach (json_object_get(p, "workers"), k, w)
			connected += strcmp(json_string_value(json_object_get(w, "state")), "connected") == 0;
		if (pool_int(p, "live_workers") == n && connected == n)
			return p;
		json_decref(p);
		usleep(100 * 1000);
	}
	json_t *p = pool_get(&f->g, f->pool);
	fail_msg("pool %s never had exactly %d connected workers: %s", f->pool, n, json_dumps(p, 0));
	return NULL;
}

/* A map of n sleeps of ms each, whose value is its own argument. */
static char *sleeps(fixture *f, int n, double ms)
{
	json_t *args = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_real(ms + i * 1e-6)); /* each value its own */
	return job_submit(&f->g, f->pool, json_pack("{s:s, s:o}", "function", "sleep", "args", args));
}

static void expect_exact(fixture *f, const char *job, int n, double ms)
{
	json_t *items = job_results(&f->g, job, "input", 5000), *it;
	size_t k;

	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		if (!json_is_true(json_object_get(it, "ok")))
			fail_msg("task %zu failed: %s", k, json_string_value(json_object_get(it, "error")));
		double v = json_number_value(json_object_get(it, "value"));
		if (v < ms + k * 1e-6 - 1e-9 || v > ms + k * 1e-6 + 1e-9)
			fail_msg("task %zu: value %.9f, expected %.9f", k, v, ms + k * 1e-6);
	}
	json_decref(items);
}

/* Every exited worker of the pool ended with code 0 (it was told to stop,
 * holding nothing), and none was lost. */
static void expect_clean_retirements(fixture *f, int retired)
{
	json_t *p = pool_get(&f->g, f->pool), *w;
	size_t k;
	int exited = 0;

	json_array_foreach (json_object_get(p, "workers"), k, w)
		if (strcmp(json_string_value(json_object_get(w, "state")), "exited") == 0) {
			exited++;
			assert_int_equal(json_integer_value(json_object_get(w, "exit_code")), 0);
		}
	assert_int_equal(exited, retired);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")), 0);
	json_decref(p);
}

static void test_grow_and_shrink_during_a_map(void **state)
{
	fixture *f = *state;

	f->pool = pool_create(&f->g, 2);
	json_decref(wait_live(f, 2));
	char *job = sleeps(f, 1500, 4.0);
	job_wait_done(&f->g, job, 100);
	patch_ok(f, "{\"processes\": 4}", 4);
	json_decref(wait_live(f, 4));
	job_wait_done(&f->g, job, 600);
	patch_ok(f, "{\"processes\": 1}", 1);
	expect_exact(f, job, 1500, 4.0);
	json_decref(wait_live(f, 1));
	expect_clean_retirements(f, 3);
	free(job);
}

static void test_size_survives_a_gateway_kill_mid_resize(void **state)
{
	fixture *f = *state;

	f->pool = pool_create(&f->g, 1);
	json_decref(wait_live(f, 1));
	char *job = sleeps(f, 1000, 5.0);
	job_wait_done(&f->g, job, 50);
	patch_ok(f, "{\"processes\": 3}", 3);
	gateway_kill(&f->g); /* its workers live on, and are adopted */
	gateway_restart(&f->g);
	json_t *p = wait_live(f, 3);
	assert_int_equal(pool_int(p, "processes"), 3);
	json_decref(p);
	patch_ok(f, "{\"processes\": 1}", 1);
	gateway_kill(&f->g);
	gateway_restart(&f->g);
	p = wait_live(f, 1);
	assert_int_equal(pool_int(p, "processes"), 1);
	json_decref(p);
	expect_exact(f, job, 1000, 5.0);
	free(job);
}

static void test_shrink_racing_a_worker_crash(void **state)
{
	fixture *f = *state;
	pid_t pids[8];

	f->pool = pool_create(&f->g, 3);
	json_decref(wait_live(f, 3));
	char *job = sleeps(f, 1200, 4.0);
	job_wait_done(&f->g, job, 100);
	assert_int_equal(pool_worker_pids(&f->g, f->pool, pids, 8), 3);
	patch_ok(f, "{\"processes\": 1}", 1);
	kill(pids[1], SIGKILL); /* retiring or staying: either way its tasks come back */
	expect_exact(f, job, 1200, 4.0);
	json_decref(wait_live(f, 1));
	free(job);
}

static void test_autoscale_from_zero_to_max_and_back(void **state)
{
	fixture *f = *state;
	long long most = 0;

	f->pool = pool_create_spec(&f->g, "{\"autoscale\": {\"min\": 0, \"max\": 4, \"target_s\": 1, \"idle_s\": 1}}");
	json_t *p = pool_get(&f->g, f->pool);
	assert_int_equal(pool_int(p, "processes"), 0);
	assert_int_equal(pool_int(p, "live_workers"), 0);
	json_decref(p);

	char *job = sleeps(f, 20000, 0.5);
	for (int i = 0; i < 3000; i++) { /* until the map is done */
		p = pool_get(&f->g, f->pool);
		long long live = pool_int(p, "live_workers");
		int done = json_integer_value(json_object_get(json_object_get(p, "counters"), "jobs_open")) == 0;
		json_decref(p);
		if (live > most)
			most = live;
		if (done)
			break;
		usleep(20 * 1000);
	}
	assert_int_equal(most, 4);
	expect_exact(f, job, 20000, 0.5);

	p = wait_live(f, 0);
	assert_int_equal(pool_int(p, "processes"), 0);
	json_t *scale = json_object_get(p, "autoscale");
	assert_int_equal(json_integer_value(json_object_get(scale, "desired")), 0);
	assert_non_null(strstr(json_string_value(json_object_get(scale, "reason")), "idle for 1 s"));
	json_decref(p);
	free(job);
}

/* A pool resized back and forth keeps the 16 most recent exited workers in
 * view, not every one it ever had. */
static void test_exited_workers_kept_bounded(void **state)
{
	fixture *f = *state;

	f->pool = pool_create(&f->g, 1);
	json_decref(wait_live(f, 1));
	for (int i = 0; i < 10; i++) {
		patch_ok(f, "{\"processes\": 3}", 3);
		json_decref(wait_live(f, 3));
		patch_ok(f, "{\"processes\": 1}", 1);
		json_decref(wait_live(f, 1));
	}
	for (int run = 0; run < 2; run++) { /* ... also after a restart */
		json_t *p = pool_get(&f->g, f->pool);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_started")),
		                 21);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")),
		                 0);
		assert_int_equal(json_array_size(json_object_get(p, "workers")), 1 + 16);
		json_decref(p);
		if (run == 0) {
			gateway_kill(&f->g);
			gateway_restart(&f->g);
			json_decref(wait_live(f, 1));
		}
	}
}

static void test_resize_refusals(void **state)
{
	fixture *f = *state;
	char path[96];

	f->pool = pool_create(&f->g, 1);
	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	expect_problem(&f->g, "PATCH", path, "{}", 400, "give 'processes' or 'autoscale'");
	expect_problem(&f->g, "PATCH", path, "{\"processes\": 0}", 400, "field 'processes' must be 1 or more");
	expect_problem(&f->g, "PATCH", path, "{\"processes\": \"4\"}", 400,
	               "field 'processes' must be an integer from 0");
	expect_problem(&f->g, "PATCH", path, "{\"processes\": 2, \"image\": \"x\"}", 400, "'image'");
	expect_problem(&f->g, "PATCH", path, "{\"autoscale\": {\"min\": 3, \"max\": 2}}", 400,
	               "field 'autoscale.min' (3) is above 'autoscale.max' (2)");
	expect_problem(&f->g, "PATCH", path, "{\"autoscale\": {\"min\": 1}}", 400, "field 'autoscale.max' is required");
	expect_problem(&f->g, "PATCH", path, "{\"autoscale\": {\"max\": 2, \"idle\": 1}}", 400, "autoscale.idle");
	expect_problem(&f->g, "PATCH", path, "{\"autoscale\": {\"min\": 0, \"max\": 2}, \"processes\": 3}", 400,
	               "field 'processes' (3) must be within autoscale's min and max (0 to 2)");
	expect_problem(&f->g, "PUT", path, "{\"processes\": 2}", 405, "use GET, PATCH or DELETE on /v1/pools/{id}");
	expect_problem(&f->g, "PATCH", "/v1/pools/p-0000000000000000", "{\"processes\": 2}", 404, "no such pool");
	patch_ok(f, "{\"autoscale\": {\"min\": 1, \"max\": 2}}", 1);
	expect_problem(&f->g, "PATCH", path, "{\"processes\": 2}", 409, "autoscales between 1 and 2 workers");
	patch_ok(f, "{\"autoscale\": null, \"processes\": 2}", 2);
	json_t *p = pool_get(&f->g, f->pool);
	assert_null(json_object_get(p, "autoscale"));
	json_decref(p);
	expect_problem(&f->g, "POST", "/v1/pools", "{\"processes\": 0}", 400,
	               "field 'processes' must be an integer from 1");
	expect_problem(&f->g, "POST", "/v1/pools", "{\"processes\": 5, \"autoscale\": {\"max\": 4}}", 400,
	               "field 'processes' must be an integer from 0 to 4");

	char *manager = http_create(&f->g, "/v1/managers", "{\"type\": \"dict\"}");
	snprintf(path, sizeof(path), "/v1/pools/%s", manager);
	expect_problem(&f->g, "PATCH", path, "{\"processes\": 2}", 404, "is a manager (/v1/managers/m-");
	free(manager);

	snprintf(path, sizeof(path), "/v1/pools/%s", f->pool);
	response r = http(&f->g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	expect_problem(&f->g, "PATCH", path, "{\"processes\": 3}", 409, "is terminated: it cannot be resized");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_grow_and_shrink_during_a_map, setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_size_survives_a_gateway_kill_mid_resize, setup,
	                                        pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_shrink_racing_a_worker_crash, setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_autoscale_from_zero_to_max_and_back, setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_exited_workers_kept_bounded, setup, pool_fixture_teardown),
	        cmocka_unit_test_setup_teardown(test_resize_refusals, setup, pool_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
