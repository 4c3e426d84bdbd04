/*
 * Chaos: a 20,000-task map runs while a helper SIGKILLs a random worker
 * every 200 ms and, twice, the gateway itself (restarted at once on the same
 * database). The map must complete with every result exactly once. Bounded:
 * the chaos stops after 60 s whatever happens.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/harness.h"

#define TASKS 20000

static void test_chaos(void **state)
{
	gateway g;
	char path[128], job_path[128];
	char job[32];
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int worker_kills = 0, gateway_kills = 0;
	response r;

	(void)state;
	print_message("chaos seed %u\n", seed);
	srand(seed);
	gateway_start(&g, NULL);
	/* Each worker death costs its tasks an attempt: allow plenty. */
	r = http(&g, "POST", "/v1/pools", "{\"processes\":3,\"max_attempts\":20}", NULL);
	assert_int_equal(r.status, 201);
	char *pool = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	pool_wait_connected(&g, pool, 3);

	/* 1 ms each: 6.7 s of sleeps on 3 workers at the least, so that both
	 * of the gateway's kills (ticks 5 and 12) come before the end on any
	 * machine; of 0.2 ms each, a run once ended before the second. */
	json_t *args = json_array();
	for (int i = 0; i < TASKS; i++)
		json_array_append_new(args, json_integer(1));
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "function", "sleep", "args", args));
	assert_int_equal(r.status, 202);
	snprintf(job, sizeof(job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(job_path, sizeof(job_path), "/v1/jobs/%s", job);
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);

	for (int tick = 0; tick < 300; tick++) { /* 300 x 200 ms = 60 s at most */
		usleep(200000);
		r = http(&g, "GET", job_path, NULL, NULL);
		int done = r.status == 200 && strcmp(json_string_value(json_object_get(r.json, "state")), "done") == 0;
		response_free(&r);
		if (done)
			break;
		if ((tick == 5 || tick == 12) && gateway_kills < 2) {
			gateway_kill(&g);
			gateway_restart(&g);
			gateway_kills++;
			continue;
		}
		r = http(&g, "GET", path, NULL, NULL);
		json_t *w, *live = json_array();
		size_t k;
		/* Connected workers only: killing each new one before it connects
		 * is what a broken worker looks like, and fails the pool on purpose
		 * (a slow sanitizer build starts workers slower than one a tick). */
		json_array_foreach (json_object_get(r.json, "workers"), k, w)
			if (strcmp(json_string_value(json_object_get(w, "state")), "connected") == 0)
				json_array_append(live, w);
		if (json_array_size(live)) {
			json_t *victim = json_array_get(live, (size_t)rand() % json_array_size(live));
			pid_t pid = (pid_t)json_integer_value(json_object_get(victim, "pid"));
			if (pid > 0 && kill(-pid, SIGKILL) == 0) /* its group: the worker and its sandbox */
				worker_kills++;
		}
		json_decref(live);
		response_free(&r);
	}
	print_message("killed %d workers and the gateway %d times\n", worker_kills, gateway_kills);
	assert_int_equal(gateway_kills, 2);
	assert_true(worker_kills >= 3);

	json_t *items = job_results(&g, job, "completion", 20000);
	json_t *it;
	size_t k;
	assert_each_index_once(items, TASKS);
	json_decref(items);
	/* Input order agrees: the same 20,000, each once, in order. */
	items = job_results(&g, job, "input", 20000);
	assert_int_equal(json_array_size(items), TASKS);
	json_array_foreach (items, k, it)
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
	json_decref(items);
	free(pool);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_chaos),
	};
	return cmocka_run_group_tests_name("chaos", tests, NULL, NULL);
}
