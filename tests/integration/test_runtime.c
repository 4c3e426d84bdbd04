/*
 * Runtimes: rt: tasks run in a long-lived program the worker feeds over
 * pipes (worker/runtime.h), here strand's Python runtime (python3 -m
 * strand.runtime, from the build tree). Exact results; an exception with
 * its type and remote traceback; a runtime that dies losing an attempt of
 * its task only and starting again; a runtime that cannot start; refusals.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
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

/* Maps function over args (stolen) on a new pool with this spec; the
 * results in input order. */
static json_t *map_on(const char *spec, const char *function, json_t *args, char **pool_out)
{
	char *pool = pool_create_spec(&g, spec);
	size_t n = json_array_size(args);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", function, "args", args));
	json_t *items = job_results(&g, job, "input", (int)n);
	assert_int_equal(json_array_size(items), n);
	free(job);
	if (pool_out)
		*pool_out = pool;
	else
		free(pool);
	return items;
}

static const char *error_of(json_t *items, size_t i)
{
	const char *e = json_string_value(json_object_get(json_array_get(items, i), "error"));
	return e ? e : "(no error)";
}

static void test_python_functions(void **state)
{
	json_t *args = json_array();

	(void)state;
	for (int i = 0; i < 200; i++)
		json_array_append_new(args, json_integer(i * i));
	json_t *items = map_on("{\"processes\":2,\"runtime\":\"python\"}", "rt:math:sqrt", args, NULL);
	for (size_t i = 0; i < 200; i++) {
		json_t *v = json_object_get(json_array_get(items, i), "value");
		assert_true(json_is_real(v));
		assert_true(json_real_value(v) == (double)i);
	}
	json_decref(items);
	/* A dotted qualname: a method of a class in a module. */
	items = map_on("{\"processes\":1,\"runtime\":\"python\"}", "rt:builtins:str.upper", json_pack("[s]", "abc"),
	               NULL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(items, 0), "value")), "ABC");
	json_decref(items);
}

static void test_exception_carries_type_and_traceback(void **state)
{
	(void)state;
	json_t *items =
	        map_on("{\"processes\":1,\"runtime\":\"python\"}", "rt:json:loads", json_pack("[s]", "{bad"), NULL);
	const char *e = error_of(items, 0);
	static const char head[] = "JSONDecodeError: Expecting property name enclosed in double quotes";
	if (strncmp(e, head, strlen(head)) != 0 ||
	    !strstr(e, "remote traceback:\nTraceback (most recent call last):") || !strstr(e, "json/decoder.py"))
		fail_msg("not the exception with its traceback: %s", e);
	json_decref(items);
}

/* A task that kills the runtime loses an attempt, as on a crashed worker:
 * it runs again, and out of attempts it fails saying how often and how the
 * runtime ended; the worker lives on and the next task runs in a new
 * runtime. */
static void test_runtime_death_is_a_lost_attempt(void **state)
{
	char *pool;

	(void)state;
	json_t *items = map_on("{\"processes\":1,\"runtime\":\"python\"}", "rt:os:_exit", json_pack("[i]", 3), &pool);
	static const char lost3[] = "lost 3 times: runtime python3: the runtime exited (exited with code 3; it is "
	                            "started again for the next task)";
	if (strncmp(error_of(items, 0), lost3, strlen(lost3)) != 0)
		fail_msg("not the runtime's end, three times: %s", error_of(items, 0));
	json_decref(items);
	char *job = job_submit(&g, pool,
	                       json_pack("{s:s, s:[i], s:i}", "function", "rt:os:_exit", "args", 4, "max_attempts", 1));
	items = job_results(&g, job, "input", 1);
	static const char lost1[] = "lost 1 time: runtime python3: the runtime exited (exited with code 4;";
	if (strncmp(error_of(items, 0), lost1, strlen(lost1)) != 0)
		fail_msg("not one lost attempt: %s", error_of(items, 0));
	json_decref(items);
	free(job);
	job = job_submit(&g, pool, json_pack("{s:s, s:[i]}", "function", "rt:math:sqrt", "args", 16));
	items = job_results(&g, job, "input", 1);
	assert_true(json_real_value(json_object_get(json_array_get(items, 0), "value")) == 4.0);
	json_decref(items);
	json_t *p = pool_get(&g, pool);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "counters"), "workers_lost")), 0);
	json_decref(p);
	free(job);
	free(pool);
}

/* Writes script as g.dir/name and returns the spec of a one-worker pool
 * with it as the runtime (new text). */
static char *runtime_spec(const char *name, const char *script)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", g.dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(script, f);
	fclose(f);
	json_t *spec = json_pack("{s:i, s:[s,s]}", "processes", 1, "runtime", "python3", path);
	char *text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	return text;
}

/* A runtime whose last words are not UTF-8 (a character cut short) and
 * that dies on every task: each death is a lost attempt, and the task's
 * error quotes its words with '?' for what is not text. */
static void test_last_words_not_utf8(void **state)
{
	(void)state;
	char *spec_text = runtime_spec("garbled_runtime.py", "import os,struct,sys\n"
	                                                     "H=struct.Struct('<cQII'); w=sys.stdout.buffer\n"
	                                                     "w.write(H.pack(b'S',0,4,1)+b'echo1'); w.flush()\n"
	                                                     "sys.stdin.buffer.read(17)\n"
	                                                     "sys.stderr.buffer.write(b'gone \\xc3'); "
	                                                     "sys.stderr.flush()\n"
	                                                     "os._exit(6)\n");
	json_t *items = map_on(spec_text, "rt:echo", json_pack("[i]", 1), NULL);
	static const char want[] = "lost 3 times: runtime python3: the runtime exited (exited with code 6; it is "
	                           "started again for the next task); its last words:\ngone ?";
	if (strcmp(error_of(items, 0), want) != 0)
		fail_msg("not three lost attempts with the words: %s", error_of(items, 0));
	json_decref(items);
	free(spec_text);
}

/* A runtime of the test's own, in the protocol of docs/tasks.md, "Runtimes": it
 * echoes each task's argument, except that the 20th one it is sent kills
 * it (once per test: a marker file), when the worker sends tasks in runs.
 * The one it died on runs again in a new runtime, the ones sent after it
 * are sent to that one too, and every result is exact. */
static void test_runtime_dying_mid_run_loses_one_task_only(void **state)
{
	char script[2048], marker[300], logs[96], *pool = NULL;
	json_t *args = json_array();

	(void)state;
	/* The marker is in the worker's /tmp: its runtimes, one after the
	 * other, share it (a sandbox's own; the host's when unsandboxed). */
	snprintf(marker, sizeof(marker), "/tmp/strand-died-%s", strrchr(g.dir, '/') + 1);
	snprintf(script, sizeof(script),
	         "import os,struct,sys\n"
	         "H=struct.Struct('<cQII'); r=sys.stdin.buffer; w=sys.stdout.buffer\n"
	         "w.write(H.pack(b'S',0,4,1)+b'echo1'); w.flush()\n"
	         "n=0\n"
	         "while True:\n"
	         "  h=r.read(17)\n"
	         "  if len(h)<17: break\n"
	         "  k,i,a,b=H.unpack(h); r.read(a); arg=r.read(b); n+=1\n"
	         "  if n==20 and not os.path.exists('%s'):\n"
	         "    open('%s','w').close(); sys.stderr.write('dying on purpose\\n'); sys.stderr.flush()\n"
	         "    os._exit(5)\n"
	         "  w.write(H.pack(b'R',i,0,len(arg))+arg); w.flush()\n",
	         marker, marker);
	char *spec_text = runtime_spec("echo_runtime.py", script);
	for (int i = 0; i < 500; i++)
		json_array_append_new(args, json_integer(i * 7));
	json_t *items = map_on(spec_text, "rt:echo", args, &pool);
	/* It did die on one: its last words are the pool's output. */
	snprintf(logs, sizeof(logs), "/v1/pools/%s/logs", pool);
	json_t *out = http_get_ok(&g, logs);
	char *text = json_dumps(out, JSON_COMPACT);
	assert_non_null(strstr(text, "\"text\":\"dying on purpose\""));
	free(text);
	json_decref(out);
	for (size_t i = 0; i < 500; i++) {
		json_t *item = json_array_get(items, i);
		if (!json_is_true(json_object_get(item, "ok")) ||
		    json_integer_value(json_object_get(item, "value")) != (json_int_t)i * 7)
			fail_msg("task %zu: %s", i, error_of(items, i));
	}
	unlink(marker);
	json_decref(items);
	free(spec_text);
	free(pool);
}

/* A job's context reaches the runtime with its tasks (worker/tests/
 * context_runtime.py answers [context, argument, times it was sent]); a job
 * without one runs with none. The job with a context waits behind a 2 s
 * task without (the only worker is busy, so its probe waits) when the
 * gateway is SIGKILLed, so its tasks are handed out by the restarted
 * gateway, with the context it read back from its store. */
static void test_job_context(void **state)
{
	char spec[512];
	json_t *args = json_array();

	(void)state;
	snprintf(spec, sizeof(spec), "{\"processes\":1,\"runtime\":[\"python3\",\"%s/context_runtime.py\"]}",
	         STRAND_FIXTURES);
	char *pool = pool_create_spec(&g, spec);
	json_array_append_new(args, json_pack("{s:f}", "sleep", 2.0));
	char *ahead = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "rt:x", "args", args));
	char *with = job_submit(
	        &g, pool,
	        json_pack("{s:s, s:{s:i}, s:[i,i,i]}", "function", "rt:x", "context", "job", 1, "args", 5, 6, 7));
	/* One worker: it takes the 2 s task first; busy, it never takes the
	 * other job's first task (a probe goes to an empty-handed worker). */
	assert_int_equal(job_wait_done(&g, with, 0), 0);
	gateway_kill(&g);
	gateway_restart(&g);
	json_t *items = job_results(&g, with, "input", 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(json_array_get(items, i), "value");
		json_t *ctx = json_array_get(v, 0);
		if (!json_is_object(ctx) || json_integer_value(json_object_get(ctx, "job")) != 1 ||
		    json_integer_value(json_array_get(v, 1)) != 5 + (json_int_t)i)
			fail_msg("task %zu: %s", i, error_of(items, i));
	}
	json_decref(items);
	items = job_results(&g, ahead, "input", 1);
	json_t *v = json_object_get(json_array_get(items, 0), "value");
	if (!json_is_null(json_array_get(v, 0)) ||
	    json_real_value(json_object_get(json_array_get(v, 1), "sleep")) != 2.0)
		fail_msg("task 0: %s", error_of(items, 0));
	json_decref(items);
	free(ahead);
	free(with);
	free(pool);
}

/* An apply's answer says the number of its pool's last line of output
 * (output_last), its own task's line among them, as the pool's logs do. A
 * gateway killed and restarted reads it back from its store, and stores
 * the line once though the worker sends it again (the pull that brought it
 * was parked, unanswered, when the gateway died). */
static void test_an_apply_says_where_output_ends(void **state)
{
	char path[128], logs[96];

	(void)state;
	char *pool = pool_create_spec(&g, "{\"processes\":1,\"runtime\":\"python\"}");
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=60", pool);
	snprintf(logs, sizeof(logs), "/v1/pools/%s/logs", pool);
	response r = http(&g, "POST", path, "{\"function\":\"rt:builtins:print\",\"arg\":\"one\"}", NULL);
	assert_int_equal(r.status, 200);
	json_int_t last = json_integer_value(json_object_get(r.json, "output_last"));
	response_free(&r);
	json_t *out = http_get_ok(&g, logs);
	json_t *line = json_array_get(json_object_get(out, "lines"), 0);
	assert_string_equal(json_string_value(json_object_get(line, "text")), "one");
	assert_true(last > 0);
	assert_int_equal(json_integer_value(json_object_get(out, "next")), last);
	json_decref(out);
	gateway_kill(&g);
	gateway_restart(&g);
	r = http(&g, "POST", path, "{\"function\":\"rt:builtins:abs\",\"arg\":-7}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "value")), 7);
	assert_int_equal(json_integer_value(json_object_get(r.json, "output_last")), last);
	response_free(&r);
	out = http_get_ok(&g, logs);
	assert_int_equal(json_array_size(json_object_get(out, "lines")), 1);
	json_decref(out);
	free(pool);
}

static void test_runtime_that_cannot_start(void **state)
{
	(void)state;
	json_t *items = map_on("{\"processes\":1,\"runtime\":[\"/nonexistent/strand-runtime\"]}", "rt:anything",
	                       json_pack("[i]", 1), NULL);
	const char *e = error_of(items, 0);
	if (!strstr(e, "runtime /nonexistent/strand-runtime: did not start (exited with code 127") ||
	    !strstr(e, "cannot run /nonexistent/strand-runtime: No such file or directory"))
		fail_msg("not why it did not start: %s", e);
	json_decref(items);
	/* A pool with no runtime says so. */
	items = map_on("{\"processes\":1}", "rt:math:sqrt", json_pack("[i]", 1), NULL);
	assert_string_equal(error_of(items, 0),
	                    "rt:math:sqrt: this pool has no runtime (give the pool one: \"runtime\")");
	json_decref(items);
}

/* A runtime of the pool's own (a command): one that says it is ready and
 * then never answers nor beats fails its task after 10 s of silence. */
static void test_silent_runtime(void **state)
{
	(void)state;
	json_t *items = map_on("{\"processes\":1,\"runtime\":[\"python3\",\"-c\",\"import struct,sys,time;"
	                       "sys.stdout.buffer.write(struct.pack('<cQII',b'S',0,4,0)+b'mute');"
	                       "sys.stdout.flush();time.sleep(600)\"]}",
	                       "rt:anything", json_pack("[i]", 1), NULL);
	const char *e = error_of(items, 0);
	if (!strstr(e, "runtime python3: the runtime stopped answering (no heartbeat for 10 s) (killed by signal 9"))
		fail_msg("not a silent runtime's end: %s", e);
	json_decref(items);
}

/* A runtime of the pool's own whose result is not JSON: the worker sends
 * it as it came, and the gateway fails the task, saying why. */
static void test_a_result_that_is_not_json(void **state)
{
	(void)state;
	json_t *items = map_on("{\"processes\":1,\"runtime\":[\"python3\",\"-c\",\"import struct,sys\\n"
	                       "i,o=sys.stdin.buffer,sys.stdout.buffer\\n"
	                       "o.write(struct.pack('<cQII',b'S',0,3,0)+b'bad');o.flush()\\n"
	                       "while True:\\n"
	                       " h=i.read(17)\\n"
	                       " if len(h)<17: break\\n"
	                       " k,n,a,b=struct.unpack('<cQII',h);i.read(a+b)\\n"
	                       " if k==b'T': o.write(struct.pack('<cQII',b'R',n,0,4)+b'{bad');o.flush()\"]}",
	                       "rt:anything", json_pack("[i, i]", 1, 2), NULL);
	for (size_t i = 0; i < 2; i++)
		if (!strstr(error_of(items, i), "invalid result: not one UTF-8 JSON value"))
			fail_msg("task %zu: not an invalid result's error: %s", i, error_of(items, i));
	json_decref(items);
}

static void test_refusals(void **state)
{
	static const char *const no_commands[] = {"--no-commands", NULL};
	static const char *const python_only[] = {"--no-commands", "--allow-runtime", "python", NULL};
	gateway h;
	response r;

	(void)state;
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"runtime\":3}", NULL);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "field 'runtime' must be"));
	response_free(&r);
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1}", NULL);
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s/map", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	r = http(&g, "POST", path, "{\"function\":\"rt:has space\",\"args\":[1]}", NULL);
	assert_int_equal(r.status, 422);
	response_free(&r);
	/* A context is a runtime's: not for a builtin; and bounded. */
	r = http(&g, "POST", path, "{\"function\":\"echo\",\"context\":1,\"args\":[1]}", NULL);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "field 'context' is given to a runtime: it needs an rt: function");
	response_free(&r);
	size_t big = (8u << 20) + 64; /* past --max-value-bytes' default */
	char *body = malloc(big + 128);
	assert_non_null(body);
	int n = snprintf(body, 128, "{\"function\":\"rt:x\",\"args\":[1],\"context\":\"");
	memset(body + n, 'a', big);
	strcpy(body + n + big, "\"}");
	r = http(&g, "POST", path, body, NULL);
	assert_int_equal(r.status, 413);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "field 'context' is over the"));
	response_free(&r);
	free(body);
	/* Under --no-commands a runtime, which runs any code (os.system too),
	 * is a command: refused unless the operator names it. */
	gateway_start(&h, no_commands);
	r = http(&h, "POST", "/v1/pools", "{\"processes\":1,\"runtime\":[\"sh\",\"-c\",\"id\"]}", NULL);
	assert_int_equal(r.status, 403);
	assert_string_equal(
	        json_string_value(json_object_get(r.json, "detail")),
	        "field 'runtime': runtime 'sh' runs any code it is given, and this gateway runs no commands "
	        "(--no-commands) unless the operator allows it (--allow-runtime sh)");
	response_free(&r);
	r = http(&h, "POST", "/v1/pools", "{\"processes\":1,\"runtime\":\"python\"}", NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "--allow-runtime python"));
	response_free(&r);
	gateway_cleanup(&h);
	gateway_start(&h, python_only);
	r = http(&h, "POST", "/v1/pools", "{\"processes\":1,\"runtime\":\"python\"}", NULL);
	assert_int_equal(r.status, 201);
	assert_string_equal(json_string_value(json_object_get(r.json, "runtime")), "python");
	response_free(&r);
	r = http(&h, "POST", "/v1/pools", "{\"processes\":1,\"runtime\":[\"python3\",\"-c\",\"x\"]}", NULL);
	assert_int_equal(r.status, 403);
	response_free(&r);
	gateway_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_python_functions),
	        cmocka_unit_test(test_exception_carries_type_and_traceback),
	        cmocka_unit_test(test_runtime_death_is_a_lost_attempt),
	        cmocka_unit_test(test_last_words_not_utf8),
	        cmocka_unit_test(test_runtime_dying_mid_run_loses_one_task_only),
	        cmocka_unit_test(test_job_context),
	        cmocka_unit_test(test_an_apply_says_where_output_ends),
	        cmocka_unit_test(test_runtime_that_cannot_start),
	        cmocka_unit_test(test_silent_runtime),
	        cmocka_unit_test(test_a_result_that_is_not_json),
	        cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests_name("runtime", tests, setup, teardown);
}
