/*
 * Pool and gateway lifecycle: DELETE leaves no worker process (and, once it
 * ended, no pool), a quiet gateway cuts its log, SIGTERM stops
 * the gateway and its workers cleanly, and a restarted gateway (after a
 * clean stop or a SIGKILL) serves everything it had acknowledged; its
 * threads are named.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
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

#include "tests/support/harness.h"

static void test_delete_leaves_no_worker(void **state)
{
	gateway g;
	pid_t pids[8];
	char path[128];
	char *pool;
	response r;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create(&g, 3);
	pool_wait_connected(&g, pool, 3);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 8), 3);
	for (int i = 0; i < 3; i++)
		assert_true(process_alive(pids[i]));
	/* Busy workers too: a long map is running when the pool is deleted. */
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&g, "POST", path, "{\"function\":\"sleep\",\"args\":[60000,60000,60000,60000]}", NULL);
	assert_int_equal(r.status, 202);
	char job[64];
	snprintf(job, sizeof(job), "/v1/jobs/%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "terminated");
	assert_int_equal(json_integer_value(json_object_get(r.json, "live_workers")), 0);
	response_free(&r);
	for (int i = 0; i < 3; i++)
		assert_false(process_alive(pids[i]));
	r = http(&g, "GET", job, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "cancelled");
	assert_int_equal(json_integer_value(json_object_get(r.json, "failed")), 4);
	response_free(&r);
	/* Every index has an answer, so a client paging results finishes. */
	json_t *items = job_results(&g, job + strlen("/v1/jobs/"), "input", 5000);
	assert_int_equal(json_array_size(items), 4);
	for (size_t i = 0; i < 4; i++)
		assert_non_null(
		        strstr(json_string_value(json_object_get(json_array_get(items, i), "error")), "cancelled"));
	json_decref(items);
	/* Deleting the terminated pool removes it, as DELETE removes an ended
	 * job: gone from every view, its jobs with it, for good. */
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "deleted");
	assert_string_equal(json_string_value(json_object_get(r.json, "id")), pool);
	response_free(&r);
	for (int restarted = 0; restarted < 2; restarted++) {
		expect_problem(&g, "GET", path, NULL, 404, "no such pool");
		expect_problem(&g, "DELETE", path, NULL, 404, "no such pool");
		expect_problem(&g, "GET", job, NULL, 404, "no such job");
		for (int i = 0; i < 2; i++) {
			r = http(&g, "GET", i ? "/metrics" : "/v1/pools", NULL, NULL);
			assert_int_equal(r.status, 200);
			assert_null(strstr(r.body, pool));
			response_free(&r);
		}
		gateway_kill(&g);
		gateway_restart(&g);
	}
	free(pool);
	gateway_cleanup(&g);
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* A gateway that went quiet cuts its log: 20 MB of arguments and results
 * leave it far past 8 MiB, and once nothing was committed for 10 s it is
 * copied into the database and cut to nothing; the work goes on after. */
static void test_a_quiet_gateway_cuts_its_log(void **state)
{
	char wal[320], arg[10001];
	gateway g;

	(void)state;
	gateway_start(&g, NULL);
	snprintf(wal, sizeof(wal), "%s-wal", g.db);
	char *pool = pool_create(&g, 2);
	memset(arg, 'x', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	json_t *args = json_array();
	for (int i = 0; i < 2000; i++)
		json_array_append_new(args, json_string(arg));
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "echo", "args", args));
	assert_int_equal(job_wait_done(&g, job, 2000), 2000);
	assert_true(file_size(wal) > 8LL << 20);
	long long size = file_size(wal);
	for (int i = 0; i < 400 && size > 8LL << 20; i++) {
		usleep(100000);
		size = file_size(wal);
	}
	assert_true(size <= 8LL << 20);
	free(job);
	job = job_submit(&g, pool, json_pack("{s:s, s:[i,i,i]}", "function", "echo", "args", 1, 2, 3));
	json_t *items = job_results(&g, job, "input", 3);
	assert_int_equal(json_array_size(items), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 2), "value")), 3);
	json_decref(items);
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

/* SIGTERM to a gateway (with args) stops it and, by telling them, its
 * workers. */
static void sigterm_stops(const char *const *args)
{
	gateway g;
	pid_t pids[8];
	char *pool;
	int status;

	gateway_start(&g, args);
	pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 8), 2);
	status = gateway_stop(&g);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 2; i++)
		assert_false(process_alive(pids[i]));
	/* Told to stop, not signalled: each ended by itself. */
	char line[96];
	snprintf(line, sizeof(line), "of pool %s stopped (code 0)", pool);
	assert_int_equal(gateway_log_count(&g, line), 2);
	free(pool);
	gateway_cleanup(&g);
}

static void test_sigterm_stops_gateway_and_workers(void **state)
{
	(void)state;
	sigterm_stops(NULL);
}

/* The same over a tls+tcp:// hub: its workers hear "stop" too, and are
 * not killed after the grace (issue 39 saw "stopped (code 137)"). */
static void test_sigterm_stops_workers_on_a_tls_hub(void **state)
{
	(void)state;
	with_tls_args(sigterm_stops);
}

/* Each of the gateway's threads is named (top -H, perf, bench/lists): the
 * engine, the hub, the executor of each backend, the resumer of parked
 * requests, the request deadlines' sweeper, the checkpointer, and MHD's. */
static void test_threads_are_named(void **state)
{
	static const char *const named[] = {"engine",    "hub",        "exec-local", "resumer",
	                                    "deadlines", "checkpoint", "MHD-worker"};
	gateway g;
	char path[320], comm[32], seen[1024] = "";

	(void)state;
	gateway_start(&g, NULL);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)g.pid);
	DIR *d = opendir(path);
	assert_non_null(d);
	for (struct dirent *t; (t = readdir(d));) {
		if (t->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)g.pid, t->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "[%s]", comm);
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		char want[40];
		snprintf(want, sizeof(want), "[%s]", named[i]);
		if (!strstr(seen, want))
			fail_msg("no thread named %s among %s", named[i], seen);
	}
	gateway_cleanup(&g);
}

static void assert_echo_results(json_t *items, int n)
{
	json_t *it;
	size_t k;

	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		assert_int_equal(json_integer_value(json_object_get(it, "index")), (json_int_t)k);
		assert_true(json_is_true(json_object_get(it, "ok")));
	}
}

static void test_restart_after_kill_loses_nothing(void **state)
{
	gateway g;
	char path[128];
	char *pool;
	char done_job[32], live_job[32];
	json_t *args = json_array();
	response r;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	/* One job finished before the crash... */
	r = http(&g, "POST", path, "{\"function\":\"echo\",\"args\":[10,11,12]}", NULL);
	snprintf(done_job, sizeof(done_job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	json_decref(job_results(&g, done_job, "input", 5000));
	/* ...and one in flight when the gateway is killed. */
	for (int i = 0; i < 200; i++)
		json_array_append_new(args, json_integer(10));
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "function", "sleep", "args", args));
	assert_int_equal(r.status, 202);
	snprintf(live_job, sizeof(live_job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	assert_true(job_wait_done(&g, live_job, 5) < 200); /* in flight: begun, not finished */
	gateway_kill(&g);

	gateway_restart(&g);
	json_t *items = job_results(&g, done_job, "input", 5000);
	assert_int_equal(json_array_size(items), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 2), "value")), 12);
	json_decref(items);
	items = job_results(&g, live_job, "input", 5000);
	assert_echo_results(items, 200);
	json_decref(items);
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "active");
	response_free(&r);
	free(pool);
	gateway_cleanup(&g);
}

static void test_closed_pool_finishes_then_stops_workers(void **state)
{
	gateway g;
	char path[128];
	char *pool;
	char job[32];
	pid_t pids[4];
	response r;

	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	assert_int_equal(pool_worker_pids(&g, pool, pids, 4), 2);
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&g, "POST", path, "{\"function\":\"sleep\",\"args\":[50,50,50,50,50,50]}", NULL);
	snprintf(job, sizeof(job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/pools/%s/close", pool);
	r = http(&g, "POST", path, "", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	/* close is not terminate: the queued work still completes (join). */
	json_t *items = job_results(&g, job, "input", 5000);
	assert_int_equal(json_array_size(items), 6);
	json_decref(items);
	for (int i = 0; i < 200 && (process_alive(pids[0]) || process_alive(pids[1])); i++)
		usleep(25000);
	assert_false(process_alive(pids[0]));
	assert_false(process_alive(pids[1]));
	free(pool);
	gateway_cleanup(&g);
}

/* Waits for an echo map of 1..3 on the pool and checks its results. */
static void assert_echo_map(gateway *g, const char *pool)
{
	char *job = job_submit(g, pool, json_pack("{s:s, s:[i,i,i]}", "function", "echo", "args", 1, 2, 3));
	json_t *items = job_results(g, job, "input", 10);

	assert_int_equal(json_array_size(items), 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(items, i), "value")),
		                 (json_int_t)i + 1);
	json_decref(items);
	free(job);
}

/* A hub on a Unix socket (ipc://, gateway/hub/poll.c): workers dial it and a map
 * comes back whole; a killed gateway leaves its socket file, which the
 * next one takes over, and its workers come back; a socket someone
 * listens on is not taken, nor a file that is not a socket: another
 * gateway's start is refused, saying so. */
static void test_ipc_hub(void **state)
{
	static char dir[] = "/tmp/strand-ipc-XXXXXX", hub_url[200], sock[100];
	static const char *const args[] = {"--hub", hub_url, NULL};
	struct stat sb;
	gateway g;
	char flags[300], want[400];

	(void)state;
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755); /* sandboxed workers may run as uids of their own */
	snprintf(sock, sizeof(sock), "%s/hub.sock", dir);
	snprintf(hub_url, sizeof(hub_url), "ipc://%s", sock);
	gateway_start(&g, args);
	char *pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	assert_echo_map(&g, pool);

	gateway_kill(&g);
	assert_int_equal(stat(sock, &sb), 0);
	assert_true(S_ISSOCK(sb.st_mode));
	gateway_restart(&g);
	pool_wait_connected(&g, pool, 2);
	assert_echo_map(&g, pool);

	snprintf(flags, sizeof(flags), "--hub %s", hub_url);
	char *out = gateway_output(flags);
	snprintf(want, sizeof(want), "cannot start: cannot listen on hub %s: Address already in use", hub_url);
	if (!strstr(out, want) || !strstr(out, "exit=1"))
		fail_msg("'%s' does not say '%s' and exit 1", out, want);
	free(out);
	/* A file that is not a socket is not taken for a stale one. */
	char file[160];
	snprintf(file, sizeof(file), "%s/not-a-socket", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(flags, sizeof(flags), "--hub ipc://%s", file);
	out = gateway_output(flags);
	if (!strstr(out, "Address already in use") || !strstr(out, "exit=1"))
		fail_msg("'%s' does not refuse ipc://%s", out, file);
	free(out);
	assert_int_equal(stat(file, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(unlink(file), 0);
	free(pool);
	gateway_cleanup(&g);
	assert_int_equal(rmdir(dir), 0); /* the socket went with the gateway's clean stop */
}

/* A hub URL the gateway cannot listen on stops its start, saying why. */
static void test_bad_hub_urls_refused(void **state)
{
	static const struct {
		const char *flags, *words;
	} cases[] = {
	        {"--hub tcp://127.0.0.1",
	         "hub URL must be tcp://HOST:PORT ([V6]:PORT, port 1 to 65535), not tcp://127.0.0.1"},
	        {"--hub tcp://::1:7070",
	         "hub URL must be tcp://HOST:PORT ([V6]:PORT, port 1 to 65535), not tcp://::1:7070"},
	        {"--hub tcp4://127.0.0.1:70000", "not tcp4://127.0.0.1:70000"},
	        {"--hub ipc://", "hub ipc:// path must be 1 to 107 bytes"},
	        {"--hub ipc:///tmp/"
	         "x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789x123456789"
	         "x123456789",
	         "hub ipc:// path must be 1 to 107 bytes"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = gateway_output(cases[i].flags);
		if (!strstr(out, cases[i].words) || !strstr(out, "exit=1"))
			fail_msg("%s: '%s' does not say '%s' and exit 1", cases[i].flags, out, cases[i].words);
		free(out);
	}
}

/* A whole-number flag or variable is one, whole, and in its range: else a
 * usage error (64) that names it (atoi took "4abc" as 4 and "two" as 0). */
static void test_bad_whole_numbers_refused(void **state)
{
	static const struct {
		const char *env, *flags, *words;
	} cases[] = {
	        {NULL, "--local-starts 0", "--local-starts must be 1 to 4096"},
	        {NULL, "--local-starts 4097", "--local-starts must be 1 to 4096"},
	        {NULL, "--local-starts two", "--local-starts must be a whole number, not 'two'"},
	        {NULL, "--local-starts 4abc", "--local-starts must be a whole number, not '4abc'"},
	        {NULL, "--lease-ms 5s", "--lease-ms must be a whole number, not '5s'"},
	        {NULL, "--http-idle ''", "--http-idle must be a whole number, not ''"},
	        {NULL, "--http-per-client ' 8'", "--http-per-client must be a whole number, not ' 8'"},
	        {NULL, "--gpus 4294967297", "--gpus must be a whole number, not '4294967297'"},
	        {"2x", "", "STRAND_LOCAL_STARTS must be a whole number, not '2x'"},
	        {"3", "--local-starts 1e3", "--local-starts must be a whole number, not '1e3'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].env)
			setenv("STRAND_LOCAL_STARTS", cases[i].env, 1);
		char *out = gateway_output(cases[i].flags);
		unsetenv("STRAND_LOCAL_STARTS");
		if (!strstr(out, cases[i].words) || !strstr(out, "exit=64"))
			fail_msg("%s: '%s' does not say '%s' and exit 64", cases[i].flags, out, cases[i].words);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_delete_leaves_no_worker),
	        cmocka_unit_test(test_sigterm_stops_gateway_and_workers),
	        cmocka_unit_test(test_sigterm_stops_workers_on_a_tls_hub),
	        cmocka_unit_test(test_a_quiet_gateway_cuts_its_log),
	        cmocka_unit_test(test_restart_after_kill_loses_nothing),
	        cmocka_unit_test(test_closed_pool_finishes_then_stops_workers),
	        cmocka_unit_test(test_ipc_hub),
	        cmocka_unit_test(test_bad_hub_urls_refused),
	        cmocka_unit_test(test_bad_whole_numbers_refused),
	        cmocka_unit_test(test_threads_are_named),
	};
	return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}
