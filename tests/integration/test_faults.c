/*
 * Fault tolerance on real processes: workers killed or hung mid-map, retries
 * and timeouts, the gateway killed and restarted (its workers re-adopted),
 * workers outliving a gateway that never returns. Every test asserts the
 * exact result set: nothing lost, nothing twice.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/harness.h"

static json_int_t counter(const gateway *g, const char *pool, const char *name)
{
	json_t *p = pool_get(g, pool);
	json_int_t v = json_integer_value(json_object_get(json_object_get(p, "counters"), name));

	json_decref(p);
	return v;
}

/* n copies of the argument v, as a JSON array. */
static json_t *repeat(json_t *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append(a, v);
	json_decref(v);
	return a;
}

/* Asserts every index 0..n-1 appears exactly once, ok, with value want. */
static void assert_exact(json_t *items, int n, json_int_t want)
{
	json_t *it;
	size_t k;

	assert_each_index_once(items, n);
	json_array_foreach (items, k, it)
		assert_int_equal(json_integer_value(json_object_get(it, "value")), want);
}

static void test_worker_sigkill_mid_map(void **state)
{
	gateway g;
	pid_t pids[4];
	char *pool, *job;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2);
	job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", repeat(json_integer(2), 1000)));
	assert_true(job_wait_done(&g, job, 50) < 1000); /* both at work, far from done */
	kill(-pids[0], SIGKILL); /* its group: the worker and its sandbox, if any */
	json_t *items = job_results(&g, job, "completion", 5000);
	assert_exact(items, 1000, 2);
	json_decref(items);
	assert_int_equal(counter(&g, pool, "workers_lost"), 1);
	assert_int_equal(counter(&g, pool, "workers_started"), 3);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2); /* back to `processes` */
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

static void test_hung_worker_loses_its_lease(void **state)
{
	static const char *const args[] = {"--lease-ms", "300", NULL};
	gateway g;
	pid_t pids[4];
	char *pool, *job;

	(void)state;
	gateway_start(&g, args);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2);
	job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", repeat(json_integer(5), 300)));
	assert_true(job_wait_done(&g, job, 10) < 300);
	/* Stopped, not dead: only the silence tells; two leases later it is
	 * killed and its tasks run elsewhere. */
	kill(-pids[1], SIGSTOP); /* its group: the worker and its sandbox, if any */
	json_t *items = job_results(&g, job, "input", 5000);
	assert_exact(items, 300, 5);
	json_decref(items);
	assert_false(process_alive(pids[1]));
	assert_int_equal(counter(&g, pool, "workers_lost"), 1);
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

/* The gateway itself stopped for four leases: its workers were healthy all
 * along, so none may be killed for the silence the gateway caused. (A lease
 * long enough that a loaded machine under ASan does not starve a worker:
 * 700 ms was not, with a docker image build beside the suite.) */
static void test_paused_gateway_keeps_healthy_workers(void **state)
{
	static const char *const args[] = {"--lease-ms", "1500", NULL};
	gateway g;
	pid_t before[4], after[4];
	char *pool, *job;

	(void)state;
	gateway_start(&g, args);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, before, 4), 2);
	job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", repeat(json_integer(5), 300)));
	assert_true(job_wait_done(&g, job, 10) < 300);
	kill(g.pid, SIGSTOP);
	usleep(6000000);
	kill(g.pid, SIGCONT);
	json_t *items = job_results(&g, job, "input", 5000);
	assert_exact(items, 300, 5);
	json_decref(items);
	assert_int_equal(counter(&g, pool, "workers_lost"), 0);
	assert_int_equal(pool_worker_pids(&g, pool, after, 4), 2);
	assert_true((before[0] == after[0] && before[1] == after[1]) ||
	            (before[0] == after[1] && before[1] == after[0]));
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

static const char *error_of(json_t *items, size_t i)
{
	return json_string_value(json_object_get(json_array_get(items, i), "error"));
}

static void test_attempts_and_error_retries(void **state)
{
	gateway g;
	char *pool, *job;
	char cmd[512];
	json_t *items;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	/* Default: three runs, then it fails for good. */
	job = job_submit(&g, pool, json_pack("{s:s, s:[n]}", "function", "crash", "args"));
	items = job_results(&g, job, "input", 10);
	assert_non_null(strstr(error_of(items, 0), "worker lost 3 times"));
	json_decref(items);
	free(job);
	/* Retries off for this map: one run. */
	job = job_submit(&g, pool, json_pack("{s:s, s:[n], s:i}", "function", "crash", "args", "max_attempts", 1));
	items = job_results(&g, job, "input", 10);
	assert_non_null(strstr(error_of(items, 0), "worker lost 1 time"));
	json_decref(items);
	free(job);
	/* A command that fails on its first run and succeeds after: an error is
	 * not retried unless asked for... Its marker is in the /tmp of the one
	 * worker of a pool of its own (a sandbox's own; the host's unsandboxed). */
	free(pool);
	pool = pool_create_spec(&g, "{\"processes\":1}");
	snprintf(cmd, sizeof(cmd),
	         "f=/tmp/strand-flaky-%s-$(cat); if [ -e $f ]; then echo 7; else touch $f; exit 1; fi",
	         strrchr(g.dir, '/') + 1);
	job = job_submit(&g, pool, json_pack("{s:[s,s,s], s:[i]}", "command", "sh", "-c", cmd, "args", 1));
	items = job_results(&g, job, "input", 10);
	assert_non_null(strstr(error_of(items, 0), "status 1"));
	json_decref(items);
	free(job);
	/* ...and is when the map says so. */
	job = job_submit(
	        &g, pool,
	        json_pack("{s:[s,s,s], s:[i], s:b}", "command", "sh", "-c", cmd, "args", 2, "retry_errors", 1));
	items = job_results(&g, job, "input", 10);
	assert_true(json_is_true(json_object_get(json_array_get(items, 0), "ok")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "value")), 7);
	json_decref(items);
	for (int k = 1; k <= 2; k++) { /* the markers, where the host's /tmp held them */
		char marker[300];
		snprintf(marker, sizeof(marker), "/tmp/strand-flaky-%s-%d", strrchr(g.dir, '/') + 1, k);
		unlink(marker);
	}
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

static void test_task_timeout_replaces_worker(void **state)
{
	gateway g;
	char *pool, *job;
	json_t *items;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create_spec(&g, "{\"processes\":1,\"timeout_s\":1}");
	pool_wait_connected(&g, pool, 1);
	job = job_submit(&g, pool, json_pack("{s:s, s:[i,i,i]}", "function", "sleep", "args", 60000, 10, 20));
	items = job_results(&g, job, "input", 10);
	assert_int_equal(json_array_size(items), 3);
	assert_non_null(strstr(error_of(items, 0), "timed out after 1.0 s"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 1), "value")), 10);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 2), "value")), 20);
	json_decref(items);
	assert_int_equal(counter(&g, pool, "workers_started"), 2); /* the stuck one was replaced */
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

static void test_gateway_sigkill_readopts_workers(void **state)
{
	gateway g;
	pid_t before[4], after[4];
	char *pool, *job;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, before, 4), 2);
	job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "sleep", "args", repeat(json_real(0.2), 10000)));
	assert_true(job_wait_done(&g, job, 200) < 10000);
	gateway_kill(&g);
	gateway_restart(&g);
	json_t *items = job_results(&g, job, "completion", 20000);
	assert_each_index_once(items, 10000);
	json_decref(items);
	/* The same two processes serve the pool: adopted, not replaced. */
	assert_int_equal(pool_worker_pids(&g, pool, after, 4), 2);
	assert_true((after[0] == before[0] && after[1] == before[1]) ||
	            (after[0] == before[1] && after[1] == before[0]));
	assert_int_equal(counter(&g, pool, "workers_lost"), 0);
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

/* A restarted gateway's stop ends the workers it adopted and knows they
 * ended though it cannot reap them: their new parent does, when it will.
 * Here that parent is this test (a subreaper that reaps only afterwards);
 * a stop that took a zombie for a live worker waited out its grace and
 * left them "not ended in time". */
static void test_a_stop_sees_its_adopted_workers_end(void **state)
{
	gateway g;
	pid_t pids[4];
	cm_buf log;
	char *pool;

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	gateway_start(&g, NULL);
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2);
	gateway_kill(&g); /* its workers are this test's now */
	gateway_restart(&g);
	pool_wait_connected(&g, pool, 2);
	int status = gateway_stop(&g);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	cm_buf_init(&log);
	assert_int_equal(cm_read_tail(g.log, 1 << 20, &log), CM_OK);
	assert_int_equal(cm_buf_append(&log, "", 1), CM_OK);
	assert_null(strstr(log.data, "did not end in time"));
	for (int i = 0; i < 2; i++) {
		char line[160];
		snprintf(line, sizeof(line), "of pool %s stopped", pool);
		const char *at = strstr(log.data, line);
		assert_non_null(at);
		if (i == 0)
			assert_non_null(strstr(at + 1, line)); /* and the other one */
		assert_int_equal(waitpid(pids[i], NULL, 0), pids[i]); /* ended: a zombie reaped here */
	}
	cm_buf_fini(&log);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	free(pool);
	gateway_cleanup(&g);
}

static void test_workers_exit_when_gateway_stays_away(void **state)
{
	gateway g;
	pid_t pids[4];
	char *pool;

	(void)state;
	setenv("STRAND_GATEWAY_TIMEOUT", "2", 1); /* inherited by the workers */
	gateway_start(&g, NULL);
	unsetenv("STRAND_GATEWAY_TIMEOUT");
	pool = pool_create_spec(&g, "{\"processes\":2}");
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2);
	gateway_kill(&g);
	/* Orphans now; they give up on their own (bounded wait: 30 s). */
	for (int i = 0; i < 300 && (process_alive(pids[0]) || process_alive(pids[1])); i++)
		usleep(100000);
	assert_false(process_alive(pids[0]));
	assert_false(process_alive(pids[1]));
	/* Started again and stopped, the gateway gives back what its pool held
	 * outside its folder (the workers' cache in /dev/shm), which a gateway
	 * killed for good leaves (docs/operations.md). */
	gateway_restart(&g);
	free(pool);
	gateway_cleanup(&g);
}

/* Workers that exit before they connect (here a worker program that only
 * complains) fail their pool after a few, saying how many, the last one's
 * exit code, and where a local worker's output went; what it wrote is
 * there. */
static void test_workers_that_never_connect_fail_the_pool(void **state)
{
	/* In a tree of its own, as strand-worker is: the sandbox shows it. */
	char dir[] = "/tmp/strand-test-badworker-XXXXXX", bin_dir[64], bin[80];
	const char *const args[] = {"--worker-bin", bin, NULL};
	gateway g;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(bin_dir, sizeof(bin_dir), "%s/bin", dir);
	assert_int_equal(mkdir(bin_dir, 0755), 0);
	snprintf(bin, sizeof(bin), "%s/strand-worker", bin_dir);
	FILE *f = fopen(bin, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho 'strand-test: this worker gives up' >&2\nexit 3\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(bin, 0755), 0);
	gateway_start(&g, args);
	char *pool = pool_create_spec(&g, "{\"processes\":1}");
	json_t *p = NULL;
	for (int i = 0; i < 200; i++) { /* bounded: 20 s */
		json_decref(p);
		p = pool_get(&g, pool);
		if (strcmp(json_string_value(json_object_get(p, "state")), "active") != 0)
			break;
		usleep(100000);
	}
	char want[256];
	snprintf(want, sizeof(want),
	         "4 workers in a row exited before connecting to the hub tcp://127.0.0.1:%d (the last with code 3); "
	         "what they wrote is in the gateway's own output",
	         g.hub_port);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(p, "reason")), want);
	assert_int_equal(gateway_log_count(&g, "strand-test: this worker gives up"), 4);
	json_decref(p);
	free(pool);
	gateway_cleanup(&g);
	assert_int_equal(unlink(bin), 0);
	assert_int_equal(rmdir(bin_dir), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_worker_sigkill_mid_map),
	        cmocka_unit_test(test_hung_worker_loses_its_lease),
	        cmocka_unit_test(test_paused_gateway_keeps_healthy_workers),
	        cmocka_unit_test(test_attempts_and_error_retries),
	        cmocka_unit_test(test_task_timeout_replaces_worker),
	        cmocka_unit_test(test_gateway_sigkill_readopts_workers),
	        cmocka_unit_test(test_a_stop_sees_its_adopted_workers_end),
	        cmocka_unit_test(test_workers_exit_when_gateway_stays_away),
	        cmocka_unit_test(test_workers_that_never_connect_fail_the_pool),
	};
	return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
