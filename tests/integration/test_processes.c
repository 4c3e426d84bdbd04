/*
 * Process over REST (multiprocessing.Process, `fiber run`): a program and a
 * function run once, exit codes, logs, join with ?wait=, terminate, a
 * process surviving a gateway SIGKILL, a function reaching queues and
 * pipes (also across a gateway SIGKILL), bad requests (a function process
 * in a container is in test_docker).
 */
#include <dirent.h>
#include <setjmp.h>
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

static gateway g;
static const char *const args[] = {"--image", "strand-worker:latest", NULL};

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, args);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	return 0;
}

/* Starts a process; returns its id (new string). */
static char *start(const char *spec)
{
	response r = http(&g, "POST", "/v1/processes", spec, NULL);
	char *id;

	if (r.status != 201)
		fail_msg("start: %ld %s", r.status, r.body);
	assert_non_null(strstr(r.location, "/v1/processes/r-"));
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

/* Joins (waits up to 30 s); returns the process (new reference). */
static json_t *join(const char *id)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/processes/%s?wait=30", id);
	return http_get_ok(&g, path);
}

static char *logs(const char *id)
{
	char path[128];
	response r;
	char *text;

	snprintf(path, sizeof(path), "/v1/processes/%s/logs", id);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.content_type, "text/plain"));
	text = strdup(r.body);
	response_free(&r);
	return text;
}

static void test_program_exit_code_env_and_logs(void **state)
{
	(void)state;
	char *id = start("{\"command\":[\"sh\",\"-c\",\"echo hello $WHO; echo trouble >&2; exit 3\"],"
	                 "\"env\":{\"WHO\":\"strand\"}}");
	json_t *p = join(id);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 3);
	json_decref(p);
	char *out = logs(id);
	assert_non_null(strstr(out, "hello strand"));
	assert_non_null(strstr(out, "trouble"));
	free(out);
	free(id);
}

static void test_function_process(void **state)
{
	(void)state;
	char *id = start("{\"function\":\"pi.so:pi_hits\",\"arg\":100000}");
	json_t *p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	char *out = logs(id);
	long hits = atol(out);
	assert_true(hits > 77000 && hits < 80000);
	free(out);
	free(id);

	id = start("{\"function\":\"fail\",\"arg\":\"no luck\"}");
	p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 1);
	json_decref(p);
	out = logs(id);
	assert_non_null(strstr(out, "no luck"));
	free(out);
	free(id);
}

/* An argument past what one exec string holds (128 KiB) reaches the
 * function whole: 300,000 bytes of two-byte characters, echoed. One over
 * the 1 MiB cap is refused. */
static void test_large_argument(void **state)
{
	enum { CHARS = 150000 };
	char *text = malloc(2 * CHARS + 1);

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < CHARS; i++)
		memcpy(text + 2 * i, "\xc3\xa9", 2); /* é */
	text[2 * CHARS] = '\0';
	json_t *spec = json_pack("{s:s, s:s}", "function", "echo", "arg", text);
	char *body = json_dumps(spec, JSON_COMPACT);
	char *id = start(body);
	json_t *p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	char *out = logs(id);
	json_t *echoed = json_loads(out, JSON_DECODE_ANY, NULL);
	assert_non_null(echoed);
	assert_string_equal(json_string_value(echoed), text);
	json_decref(echoed);
	free(out);
	free(id);
	free(body);
	json_decref(spec);

	char *big = malloc((1u << 20) + 64);
	assert_non_null(big);
	memset(big, 'a', (1u << 20) + 8);
	big[(1u << 20) + 8] = '\0';
	spec = json_pack("{s:s, s:s}", "function", "echo", "arg", big);
	body = json_dumps(spec, JSON_COMPACT);
	response r = http(&g, "POST", "/v1/processes", body, NULL);
	assert_int_equal(r.status, 413);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "field 'arg' is over the"));
	response_free(&r);
	free(body);
	free(big);
	free(text);
	json_decref(spec);
}

static void test_join_and_terminate(void **state)
{
	char path[128];

	(void)state;
	/* ?wait=0: the state now, running; its pid once the backend started it
	 * (starting is asynchronous). */
	char *id = start("{\"command\":[\"sleep\",\"30\"]}");
	snprintf(path, sizeof(path), "/v1/processes/%s", id);
	response r;
	pid_t pid = 0;
	for (int i = 0; i < 250 && pid == 0; i++) {
		r = http(&g, "GET", path, NULL, NULL);
		assert_string_equal(json_string_value(json_object_get(r.json, "state")), "running");
		pid = (pid_t)json_integer_value(json_object_get(r.json, "pid"));
		response_free(&r);
		if (pid == 0)
			usleep(20000);
	}
	assert_true(pid > 0 && process_alive(pid));
	/* terminate(): answered once it is gone. */
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "exited");
	assert_true(json_is_true(json_object_get(r.json, "terminated")));
	assert_int_equal(json_integer_value(json_object_get(r.json, "exit_code")), 128 + 15);
	response_free(&r);
	assert_false(process_alive(pid));
	free(id);

	/* join(): a short program, waited for. */
	id = start("{\"command\":[\"sh\",\"-c\",\"sleep 0.3; exit 7\"]}");
	json_t *p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 7);
	json_decref(p);
	free(id);
	r = http(&g, "GET", "/v1/processes", NULL, NULL);
	assert_true(json_array_size(json_object_get(r.json, "processes")) >= 2);
	response_free(&r);
}

static void test_survives_gateway_kill(void **state)
{
	(void)state;
	char *id = start("{\"command\":[\"sh\",\"-c\",\"sleep 1.5; echo done\"]}");
	gateway_kill(&g);
	gateway_restart(&g);
	json_t *p = join(id);
	/* Adopted, not lost: it ran to its end (its exit code went to another
	 * parent, so only "exited" is known) and its output is there. */
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	json_decref(p);
	char *out = logs(id);
	assert_non_null(strstr(out, "done"));
	free(out);
	free(id);
}

/* The items a POST on path (a queue's take, a pipe end's recv; waiting up
 * to 30 s) takes, as compact JSON. */
static char *take(const char *path)
{
	char url[200];

	snprintf(url, sizeof(url), "%s?max=10&wait=30", path);
	response r = http(&g, "POST", url, NULL, NULL);
	if (r.status != 200)
		fail_msg("POST %s: %ld %s", url, r.status, r.body);
	char *text = json_dumps(json_object_get(r.json, "items"), JSON_COMPACT);
	response_free(&r);
	return text;
}

/* A Process running a C function reaches queues and pipes as a pool's
 * task does (the plugin API over its own hub identity); a program does not
 * get one. */
static void test_function_process_reaches_queues_and_pipes(void **state)
{
	char body[300], path[160];
	(void)state;
	char *q = http_create(&g, "/v1/queues", NULL);

	snprintf(body, sizeof(body), "{\"function\":\"qp.so:put\",\"arg\":{\"queue\":\"%s\",\"item\":[1,\"two\"]}}", q);
	char *id = start(body);
	json_t *p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	snprintf(path, sizeof(path), "/v1/queues/%s/take", q);
	char *items = take(path);
	assert_string_equal(items, "[[1,\"two\"]]");
	free(items);
	free(id);

	/* HTTP sends into a pipe, the process receives and prints it. */
	char *x = http_create(&g, "/v1/pipes", "{\"duplex\":true}");
	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/0/send", x);
	response r = http(&g, "POST", path, "{\"item\":{\"ping\":7}}", NULL);
	assert_int_equal(r.status, 201);
	response_free(&r);
	snprintf(body, sizeof(body),
	         "{\"function\":\"qp.so:pipe_recv\",\"arg\":{\"pipe\":\"%s\",\"end\":1,\"wait_ms\":20000}}", x);
	id = start(body);
	p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	char *out = logs(id);
	assert_string_equal(out, "{\"ping\":7}\n");
	free(out);
	free(id);
	free(x);

	/* A process may not set the names it reaches the hub by. */
	r = http(&g, "POST", "/v1/processes", "{\"command\":[\"true\"],\"env\":{\"STRAND_SECRET\":\"x\"}}", NULL);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "'env.STRAND_SECRET': strand sets it"));
	response_free(&r);
	free(q);
}

/* A function's hub identity is kept with the process: a gateway started
 * again after a SIGKILL adopts it, and its queue call still lands. */
static void test_function_process_queue_call_across_gateway_kill(void **state)
{
	char body[300], path[160];
	(void)state;
	char *q = http_create(&g, "/v1/queues", NULL);

	snprintf(body, sizeof(body),
	         "{\"function\":\"qp.so:put\",\"arg\":{\"queue\":\"%s\",\"delay_ms\":1500,\"item\":\"late\"}}", q);
	char *id = start(body);
	gateway_kill(&g);
	gateway_restart(&g);
	snprintf(path, sizeof(path), "/v1/queues/%s/take", q);
	char *items = take(path);
	assert_string_equal(items, "[\"late\"]");
	free(items);
	json_t *p = join(id);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "exited");
	json_decref(p);
	free(id);
	free(q);
}

/* A program that cannot run fails its start at once with the reason, in
 * the answer to the POST: not as an exit code 127 later. */
static void test_missing_program_fails_at_once(void **state)
{
	static const struct {
		const char *spec, *reason;
	} cases[] = {
	        {"{\"command\":[\"/no/such/program\"]}", "cannot run /no/such/program: No such file or directory"},
	        {"{\"command\":[\"no-such-program-on-path\"]}",
	         "cannot run no-such-program-on-path: No such file or directory"},
	        {NULL, "Permission denied"}, /* not executable */
	        {NULL, "Exec format error"}, /* executable, not a program: execve's errno, from the child */
	};
	char file[2][300], spec[2][700];

	(void)state;
	for (int k = 0; k < 2; k++) {
		snprintf(file[k], sizeof(file[k]), "%s/not-a-program-%d", g.dir, k);
		FILE *f = fopen(file[k], "w");
		assert_non_null(f);
		fputs("no shebang, no ELF header\n", f);
		fclose(f);
		chmod(file[k], k == 0 ? 0644 : 0755);
		snprintf(spec[k], sizeof(spec[k]), "{\"command\":[\"%s\"]}", file[k]);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[1000];
		const char *body = cases[i].spec ? cases[i].spec : spec[i - 2];
		if (cases[i].spec)
			snprintf(want, sizeof(want), "%s", cases[i].reason);
		else
			snprintf(want, sizeof(want), "cannot run %s: %s", file[i - 2], cases[i].reason);
		response r = http(&g, "POST", "/v1/processes", body, NULL);
		assert_int_equal(r.status, 201);
		assert_string_equal(json_string_value(json_object_get(r.json, "state")), "failed");
		assert_string_equal(json_string_value(json_object_get(r.json, "reason")), want);
		assert_int_equal(json_integer_value(json_object_get(r.json, "exit_code")), -1);
		response_free(&r);
	}
}

/* The pid (as this test sees it) of the one `sleep SECONDS` running:
 * found by its command line, as a sandboxed program's own pids are of its
 * pid namespace (waits up to 5 s for it). */
static pid_t sleeping(int seconds)
{
	char want[32];
	int want_len = snprintf(want, sizeof(want), "sleep%c%d", '\0', seconds) + 1;

	for (int i = 0; i < 250; i++) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[300], cmd[64];
			snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
			FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
			size_t n = f ? fread(cmd, 1, sizeof(cmd), f) : 0;
			if (f)
				fclose(f);
			if ((int)n == want_len && memcmp(cmd, want, n) == 0) {
				pid_t pid = (pid_t)atoi(e->d_name); /* e is d's: read before it goes */
				closedir(d);
				return pid;
			}
		}
		if (d)
			closedir(d);
		usleep(20000);
	}
	fail_msg("no process 'sleep %d'", seconds);
	return 0;
}

/* Starts `sh -c "sleep S & TAIL"`: returns its id, and the background
 * sleep's pid in *child (S tells it from every other). */
static char *start_with_child(int seconds, const char *tail, pid_t *child)
{
	char spec[800];

	snprintf(spec, sizeof(spec), "{\"command\":[\"sh\",\"-c\",\"sleep %d & %s\"]}", seconds, tail);
	char *id = start(spec);
	*child = sleeping(seconds);
	return id;
}

/* Nothing a process started outlives it: terminate() signals its whole
 * process group, and what is left when it ends by itself is killed. */
static void test_no_child_outlives_its_process(void **state)
{
	char path[128];
	pid_t child;

	(void)state;
	char *id = start_with_child(77, "wait", &child);
	assert_true(process_alive(child)); /* its shell waits for it */
	snprintf(path, sizeof(path), "/v1/processes/%s", id);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "exited");
	response_free(&r);
	assert_false(process_alive(child));
	free(id);

	/* Its shell ends by itself: 3 s on, so that the test sees the child
	 * first however slow the machine (under TSan it was gone before). */
	id = start_with_child(78, "sleep 3; exit 0", &child);
	json_t *p = join(id);
	assert_int_equal(json_integer_value(json_object_get(p, "exit_code")), 0);
	json_decref(p);
	for (int i = 0; i < 500 && process_alive(child); i++)
		usleep(20000); /* killed when its process was released */
	assert_false(process_alive(child));
	free(id);
}

/* Stopping the gateway ends its processes and what they started. */
static void test_gateway_stop_ends_process_groups(void **state)
{
	pid_t child;

	(void)state;
	char *id = start_with_child(79, "wait", &child);
	assert_true(process_alive(child));
	int status = gateway_stop(&g);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_false(process_alive(child));
	free(id);
	gateway_restart(&g);
}

static void test_bad_requests(void **state)
{
	static const struct {
		const char *body;
		long status;
		const char *part;
	} cases[] = {
	        {"{}", 400, "either 'function'"},
	        {"{\"function\":\"echo\",\"command\":[\"true\"]}", 400, "either 'function'"},
	        {"{\"command\":[]}", 400, "'command'"},
	        {"{\"command\":[\"true\"],\"env\":{\"A\":1}}", 400, "'env.A'"},
	        {"{\"command\":[\"true\"],\"backend\":\"mesos\"}", 422, "unknown backend"},
	        {"{\"function\":\"nosuch\"}", 422, "unknown function"},
	        {"{\"command\":[\"true\"],\"resources\":{\"cpu\":-1}}", 400, "'resources.cpu'"},
	        {"{\"command\":[\"true\"],\"runtime\":\"python\"}", 400, "'runtime' goes with a 'function'"},
	        {"{\"function\":\"rt:m:f\",\"runtime\":7}", 400, "field 'runtime' must be"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		response r = http(&g, "POST", "/v1/processes", cases[i].body, NULL);
		if (r.status != cases[i].status || !strstr(r.body, cases[i].part))
			fail_msg("%s: %ld %s", cases[i].body, r.status, r.body);
		assert_string_equal(r.content_type, "application/problem+json");
		response_free(&r);
	}
	response r = http(&g, "GET", "/v1/processes/r-0000000000000000", NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	/* A program that cannot start still ends: exit code 127, and why. */
	char *id = start("{\"command\":[\"/nonexistent/program\"]}");
	json_t *p = join(id);
	assert_true(json_integer_value(json_object_get(p, "exit_code")) == 127 ||
	            strcmp(json_string_value(json_object_get(p, "state")), "failed") == 0);
	json_decref(p);
	free(id);
}

/* A process that does not hear SIGTERM is killed once the grace is over
 * (the engine looks for such a process only then). Unsandboxed: in a
 * sandbox, SIGTERM ends bubblewrap and everything in it. */
static void test_a_process_deaf_to_sigterm_is_killed(void **state)
{
	static const char *const unsandboxed[] = {"--sandbox", "off", NULL};
	gateway mine = g; /* this test runs its own gateway */
	char path[128];
	response r;

	(void)state;
	gateway_start(&g, unsandboxed);
	char *id = start("{\"command\":[\"sh\",\"-c\",\"trap '' TERM; echo up; exec sleep 30\"]}");
	char *text = NULL;
	for (int i = 0; i < 500 && !(text && strstr(text, "up")); i++) {
		free(text);
		usleep(20000);
		text = logs(id);
	}
	assert_non_null(strstr(text, "up"));
	free(text);
	snprintf(path, sizeof(path), "/v1/processes/%s", id);
	r = http(&g, "DELETE", path, NULL, NULL); /* answered once it is gone */
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "exited");
	assert_true(json_is_true(json_object_get(r.json, "terminated")));
	assert_int_equal(json_integer_value(json_object_get(r.json, "exit_code")), 128 + 9);
	response_free(&r);
	free(id);
	gateway_cleanup(&g);
	g = mine;
}

static void test_gpus_are_handed_out_distinctly(void **state)
{
	static const char *const two_gpus[] = {"--gpus", "2", NULL};
	static const char spec[] = "{\"command\":[\"sh\",\"-c\",\"echo gpu=$CUDA_VISIBLE_DEVICES; sleep 1\"],"
	                           "\"resources\":{\"gpu\":1}}";
	gateway mine = g; /* this test runs its own gateway with 2 GPUs configured */
	char *a, *b, *c, *d;

	(void)state;
	gateway_start(&g, two_gpus);
	a = start(spec);
	b = start(spec);
	c = start(spec);
	json_t *pc = join(c); /* both devices taken: refused, with why */
	assert_string_equal(json_string_value(json_object_get(pc, "state")), "failed");
	assert_non_null(
	        strstr(json_string_value(json_object_get(pc, "reason")), "needs 1 GPU; this host has 2, 0 free"));
	json_decref(pc);
	json_decref(join(a));
	json_decref(join(b));
	char *la = logs(a), *lb = logs(b);
	assert_true((strstr(la, "gpu=0") && strstr(lb, "gpu=1")) || (strstr(la, "gpu=1") && strstr(lb, "gpu=0")));
	free(la);
	free(lb);
	/* More than the host has could never start: refused at once, a pool too. */
	static const char *const too_many[][2] = {
	        {"/v1/processes", "{\"command\":[\"true\"],\"resources\":{\"gpu\":3}}"},
	        {"/v1/pools", "{\"processes\":1,\"resources\":{\"gpu\":3}}"},
	};
	for (size_t i = 0; i < 2; i++) {
		response r = http(&g, "POST", too_many[i][0], too_many[i][1], NULL);
		assert_int_equal(r.status, 422);
		assert_string_equal(
		        json_string_value(json_object_get(r.json, "detail")),
		        "field 'resources.gpu': each needs 3 GPUs; the local backend of this host has 2 (--gpus)");
		response_free(&r);
	}
	/* Given back when they ended: the next one gets a device. */
	d = start("{\"command\":[\"sh\",\"-c\",\"echo gpu=$CUDA_VISIBLE_DEVICES\"],\"resources\":{\"gpu\":2}}");
	json_decref(join(d));
	char *ld = logs(d);
	assert_non_null(strstr(ld, "gpu=0,1"));
	free(ld);
	gateway_cleanup(&g);
	g = mine;
	free(a);
	free(b);
	free(c);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_program_exit_code_env_and_logs),
	        cmocka_unit_test(test_function_process),
	        cmocka_unit_test(test_large_argument),
	        cmocka_unit_test(test_join_and_terminate),
	        cmocka_unit_test(test_survives_gateway_kill),
	        cmocka_unit_test(test_function_process_reaches_queues_and_pipes),
	        cmocka_unit_test(test_function_process_queue_call_across_gateway_kill),
	        cmocka_unit_test(test_missing_program_fails_at_once),
	        cmocka_unit_test(test_no_child_outlives_its_process),
	        cmocka_unit_test(test_gateway_stop_ends_process_groups),
	        cmocka_unit_test(test_bad_requests),
	        cmocka_unit_test(test_a_process_deaf_to_sigterm_is_killed),
	        cmocka_unit_test(test_gpus_are_handed_out_distinctly),
	};
	return cmocka_run_group_tests_name("processes", tests, setup, teardown);
}
