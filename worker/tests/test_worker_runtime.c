/* The worker's side of the runtime protocol (worker/runtime.c) against a
 * runtime of the test's own (context_runtime.py beside it): tasks sent in
 * runs, answered in order; job contexts sent once and again only after the
 * runtime dropped them (it keeps the last 32); a runtime that dies on a
 * task losing that task only, the tasks after it going to a new runtime
 * with their contexts sent again. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "worker/runtime.h"

#define MAX_TASKS 64

typedef struct outcomes {
	size_t n;
	worker_runtime_outcome how[MAX_TASKS];
	char *text[MAX_TASKS];
} outcomes;

static int keep(void *ctx, size_t i, worker_runtime_outcome how, cm_buf *out)
{
	outcomes *o = ctx;

	assert_int_equal(i, o->n); /* in order, each once */
	o->how[i] = how;
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
	outcomes_fini(&o);
	worker_runtime_free(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_contexts_and_a_death),
	};
	return cmocka_run_group_tests_name("worker_runtime", tests, NULL, NULL);
}
