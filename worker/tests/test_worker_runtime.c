/* The worker's side of the runtime protocol (worker/runtime.c) against a
 * runtime of the test's own (context_runtime.py beside it): tasks sent in
 * runs, answered in order; job contexts sent once and again only after the
 * runtime dropped them (it keeps the last 32); a runtime that dies on a
 * task losing that task only, the tasks after it going to a new runtime
 * with their contexts sent again; a task of several inputs that partly
 * failed; a runtime started ahead, and waited for before the worker dials. */
#define _GNU_SOURCE
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

#include "worker/runtime.h"

#define MAX_TASKS 64

typedef struct outcomes {
	size_t n;
	worker_runtime_outcome how[MAX_TASKS];
	uint32_t failed_inputs[MAX_TASKS];
	char *text[MAX_TASKS];
} outcomes;

static int keep(void *ctx, size_t i, worker_runtime_outcome how, uint32_t failed_inputs, cm_buf *out)
{
	outcomes *o = ctx;

	assert_int_equal(i, o->n); /* in order, each once */
	o->how[i] = how;
	o->failed_inputs[i] = failed_inputs;
	o->text[i] = strndup(out->data ? out->data : "", out->len);
	o->n++;
	cm_buf_fini(out);
	return CM_OK;
}

static void outcomes_fini(outcomes *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->text[i]);
	memset(o, 0, sizeof(*o));
}

/* A task of context key (0: none) whose text is "c<key>". */
static worker_runtime_task task_of(uint64_t key, const char *arg, char texts[][16])
{
	snprintf(texts[key], 16, "\"c%llu\"", (unsigned long long)key);
	return (worker_runtime_task){.function = "echo",
	                             .arg = arg,
	                             .arg_len = strlen(arg),
	                             .context_key = key,
	                             .context = key ? texts[key] : NULL,
	                             .context_len = key ? strlen(texts[key]) : 0};
}

static void test_contexts_and_a_death(void **state)
{
	static char texts[64][16];
	char argv_json[512], args[MAX_TASKS][8];
	worker_runtime_task tasks[MAX_TASKS];
	outcomes o = {0};

	(void)state;
	snprintf(argv_json, sizeof(argv_json), "[\"python3\", \"%s/context_runtime.py\"]", STRAND_FIXTURES);
	worker_runtime *rt = worker_runtime_new(argv_json);
	assert_non_null(rt);

	/* 40 jobs' contexts, one task each, sent in one run. */
	for (int k = 1; k <= 40; k++) {
		snprintf(args[k], sizeof(args[k]), "%d", k * 10);
		tasks[k - 1] = task_of((uint64_t)k, args[k], texts);
	}
	assert_int_equal(worker_runtime_run_many(rt, tasks, 40, keep, &o), CM_OK);
	assert_int_equal(o.n, 40);
	assert_int_equal(worker_runtime_lost_code(rt), -1); /* no runtime ended */
	for (int k = 1; k <= 40; k++) {
		char want[64];
		snprintf(want, sizeof(want), "[\"c%d\", %d, 1]", k, k * 10);
		assert_int_equal(o.how[k - 1], RT_OK);
		assert_string_equal(o.text[k - 1], want);
	}
	outcomes_fini(&o);

	/* Context 1 fell out of the runtime's last 32: sent again; 40 is held:
	 * not sent again; then none; then a task that ends the runtime, and one
	 * after it that goes to a new runtime, its context sent there. */
	tasks[0] = task_of(1, "1", texts);
	tasks[1] = task_of(40, "2", texts);
	tasks[2] = task_of(0, "3", texts);
	tasks[3] = task_of(1, "4", texts);
	tasks[4] = task_of(5, "\"die\"", texts);
	tasks[5] = task_of(40, "6", texts);
	tasks[6] = task_of(0, "7", texts);
	assert_int_equal(worker_runtime_run_many(rt, tasks, 7, keep, &o), CM_OK);
	assert_int_equal(o.n, 7);
	static const char *const want[] = {"[\"c1\", 1, 2]",  "[\"c40\", 2, 1]", "[null, 3, 0]", "[\"c1\", 4, 2]", NULL,
	                                   "[\"c40\", 6, 1]", "[null, 7, 0]"};
	for (size_t i = 0; i < 7; i++) {
		if (i == 4)
			continue;
		assert_int_equal(o.how[i], RT_OK);
		assert_string_equal(o.text[i], want[i]);
	}
	assert_int_equal(o.how[4], RT_LOST);
	if (!strstr(o.text[4], "runtime python3: the runtime exited (exited with code 7; it is started again for the "
	                       "next task); its last words:\ndying on purpose"))
		fail_msg("not the runtime's end: %s", o.text[4]);
	assert_int_equal(worker_runtime_lost_code(rt), 7); /* os._exit(7)'s: a Process's exit code */
	outcomes_fini(&o);
	/* The next call's runtime ended under none of its tasks. */
	tasks[0] = task_of(0, "8", texts);
	assert_int_equal(worker_runtime_run_many(rt, tasks, 1, keep, &o), CM_OK);
	assert_int_equal(o.how[0], RT_OK);
	assert_int_equal(worker_runtime_lost_code(rt), -1);
	outcomes_fini(&o);
	worker_runtime_free(rt);
}

/* A task of several inputs some of which failed alone ('P'): an error
 * with their count, its text as the runtime wrote it; a count that is not
 * one fails the task, saying so; the tasks after it run as any. */
static void test_partly_failed(void **state)
{
	static char texts[4][16];
	worker_runtime_task tasks[4];
	outcomes o = {0};
	char argv_json[512];

	(void)state;
	snprintf(argv_json, sizeof(argv_json), "[\"python3\", \"%s/context_runtime.py\"]", STRAND_FIXTURES);
	worker_runtime *rt = worker_runtime_new(argv_json);
	assert_non_null(rt);
	tasks[0] = task_of(0, "{\"partly\": 3}", texts);
	tasks[1] = task_of(0, "{\"partly\": \"x\"}", texts);
	tasks[2] = task_of(0, "{\"partly\": 0}", texts);
	tasks[3] = task_of(0, "4", texts);
	assert_int_equal(worker_runtime_run_many(rt, tasks, 4, keep, &o), CM_OK);
	assert_int_equal(o.n, 4);
	assert_int_equal(o.how[0], RT_ERROR);
	assert_int_equal(o.failed_inputs[0], 3);
	assert_string_equal(o.text[0], "{\"failed\": 3}");
	for (size_t i = 1; i < 3; i++) {
		assert_int_equal(o.how[i], RT_ERROR);
		assert_int_equal(o.failed_inputs[i], 0);
		assert_string_equal(o.text[i], "the runtime's count of failed inputs is not a number");
	}
	assert_int_equal(o.how[3], RT_OK);
	assert_int_equal(o.failed_inputs[3], 0);
	assert_string_equal(o.text[3], "[null, 4, 0]");
	outcomes_fini(&o);
	worker_runtime_free(rt);
}

/* The pid a runtime started ahead wrote to path, once it did (0: none in
 * 5 s). */
static long pid_written(const char *path)
{
	for (int i = 0; i < 500; i++) {
		FILE *fp = fopen(path, "r");
		long pid = 0;
		if (fp) {
			int got = fscanf(fp, "%ld", &pid);
			fclose(fp);
			if (got == 1 && pid > 0)
				return pid;
		}
		usleep(10000);
	}
	return 0;
}

/* One task asking the runtime its pid (context_runtime.py's "pid"). */
static long task_pid(worker_runtime *rt, worker_runtime_outcome *how)
{
	static char texts[1][16];
	worker_runtime_task t = task_of(0, "\"pid\"", texts);
	outcomes o = {0};
	long pid = 0;

	assert_int_equal(worker_runtime_run_many(rt, &t, 1, keep, &o), CM_OK);
	assert_int_equal(o.n, 1);
	*how = o.how[0];
	if (sscanf(o.text[0], "[null, %ld, 0]", &pid) != 1)
		fail_msg("not a pid's answer: %s", o.text[0]);
	outcomes_fini(&o);
	return pid;
}

/* A runtime started ahead of its first task (the worker's warm start)
 * loads before any task comes, and the first task runs in it; one that
 * died before its first task is started anew for it, the task not lost. */
static void test_started_ahead(void **state)
{
	char dir[] = "/tmp/strand-test-rt-XXXXXX", path[64], argv_json[512], why[128];
	worker_runtime_outcome how;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pid", dir);
	/* sh writes its pid, then becomes the runtime: the same process. */
	snprintf(argv_json, sizeof(argv_json),
	         "[\"sh\", \"-c\", \"echo $$ > %s.new && mv %s.new %s && exec python3 %s/context_runtime.py\"]", path,
	         path, path, STRAND_FIXTURES);
	worker_runtime *rt = worker_runtime_new(argv_json);
	assert_non_null(rt);

	assert_int_equal(worker_runtime_start(rt, why, sizeof(why)), CM_OK);
	assert_true(worker_runtime_running(rt));
	long ahead = pid_written(path);
	assert_true(ahead > 0); /* it started with no task sent */
	assert_int_equal(worker_runtime_start(rt, why, sizeof(why)), CM_OK); /* once: still the same */
	assert_int_equal(task_pid(rt, &how), ahead);
	assert_int_equal(how, RT_OK);
	worker_runtime_free(rt);

	/* Started ahead, then killed before any task: the task gets a new one. */
	unlink(path);
	rt = worker_runtime_new(argv_json);
	assert_non_null(rt);
	assert_int_equal(worker_runtime_start(rt, why, sizeof(why)), CM_OK);
	ahead = pid_written(path);
	assert_true(ahead > 0);
	assert_int_equal(kill((pid_t)ahead, SIGKILL), 0);
	unlink(path);
	long pid = task_pid(rt, &how);
	assert_int_equal(how, RT_OK);
	assert_true(pid > 0 && pid != ahead);
	assert_int_equal(pid, pid_written(path));
	worker_runtime_free(rt);
	unlink(path);
	rmdir(dir);
}

/* The worker waits for a runtime started ahead before it asks for work:
 * not there while the runtime still loads, there once its ready frame came
 * (its first task then runs in it); one that ended before it was ready is
 * left to the first task, which starts it anew. */
static void test_awaited_start(void **state)
{
	char dir[] = "/tmp/strand-test-rt-XXXXXX", go[64], path[64], argv_json[640], why[128];
	worker_runtime_outcome how;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(path, sizeof(path), "%s/pid", dir);
	/* It loads until the test makes the file go. */
	snprintf(argv_json, sizeof(argv_json),
	         "[\"sh\", \"-c\", \"echo $$ > %s; while [ ! -e %s ]; do sleep 0.01; done; "
	         "exec python3 %s/context_runtime.py\"]",
	         path, go, STRAND_FIXTURES);
	worker_runtime *rt = worker_runtime_new(argv_json);
	assert_non_null(rt);
	assert_int_equal(worker_runtime_await_start(rt, 10), CM_OK); /* none started: nothing to wait for */
	assert_int_equal(worker_runtime_start(rt, why, sizeof(why)), CM_OK);
	long ahead = pid_written(path);
	assert_true(ahead > 0);
	assert_int_equal(worker_runtime_await_start(rt, 50), CM_ETIMEDOUT);
	FILE *fp = fopen(go, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(worker_runtime_await_start(rt, 30000), CM_OK);
	assert_int_equal(worker_runtime_await_start(rt, 0), CM_OK); /* ready stays ready */
	assert_int_equal(task_pid(rt, &how), ahead);
	assert_int_equal(how, RT_OK);
	worker_runtime_free(rt);

	/* Ended before its ready frame: the first task starts another. */
	unlink(go);
	unlink(path);
	snprintf(argv_json, sizeof(argv_json),
	         "[\"sh\", \"-c\", \"echo $$ > %s; [ -e %s ] || exit 3; exec python3 %s/context_runtime.py\"]", path,
	         go, STRAND_FIXTURES);
	rt = worker_runtime_new(argv_json);
	assert_non_null(rt);
	assert_int_equal(worker_runtime_start(rt, why, sizeof(why)), CM_OK);
	ahead = pid_written(path);
	assert_int_equal(worker_runtime_await_start(rt, 30000), CM_EUNAVAIL);
	fp = fopen(go, "w");
	assert_non_null(fp);
	fclose(fp);
	unlink(path);
	long pid = task_pid(rt, &how);
	assert_int_equal(how, RT_OK);
	assert_true(pid > 0 && pid != ahead);
	worker_runtime_free(rt);
	unlink(go);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_contexts_and_a_death),
	        cmocka_unit_test(test_started_ahead),
	        cmocka_unit_test(test_awaited_start),
	        cmocka_unit_test(test_partly_failed),
	};
	return cmocka_run_group_tests_name("worker_runtime", tests, NULL, NULL);
}
