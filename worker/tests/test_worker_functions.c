/* The worker's task functions, run in-process: builtins, the example plugin
 * loaded with dlopen, and exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "worker/worker.h"

static int run(worker_fns *fns, const char *fn, const char *arg, char *const *cmd, size_t ncmd, unsigned timeout_ms,
               cm_buf *out)
{
	int ok = -1;

	cm_buf_init(out);
	assert_int_equal(worker_fns_run(fns, fn, arg, strlen(arg), cmd, ncmd, timeout_ms, 42, out, &ok), CM_OK);
	return ok;
}

static void test_builtins(void **state)
{
	worker_fns *fns = worker_fns_new(NULL);
	cm_buf out;

	(void)state;
	assert_int_equal(run(fns, "echo", "{\"a\":[1,2]}", NULL, 0, 0, &out), 1);
	assert_string_equal(out.data, "{\"a\":[1,2]}");
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "builtin:noop", "1", NULL, 0, 0, &out), 1);
	assert_string_equal(out.data, "null");
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "sleep", "3", NULL, 0, 0, &out), 1);
	assert_string_equal(out.data, "3");
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "pi", "100000", NULL, 0, 0, &out), 1);
	long hits = atol(out.data);
	assert_true(hits > 77000 && hits < 80000); /* pi/4 of 100000 */
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "fail", "\"why not\"", NULL, 0, 0, &out), 0);
	assert_string_equal(out.data, "why not");
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "sleep", "-5", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "milliseconds"));
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "pi", "{", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "not JSON"));
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "nonesuch", "1", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "unknown function"));
	cm_buf_fini(&out);
	worker_fns_free(fns);
}

static void test_plugin(void **state)
{
	worker_fns *fns = worker_fns_new("/nonexistent:" STRAND_LIB_DIR);
	worker_fns *none = worker_fns_new(NULL);
	cm_buf out;

	(void)state;
	assert_int_equal(run(fns, "pi.so:pi_hits", "100000", NULL, 0, 0, &out), 1);
	assert_true(atol(out.data) > 77000 && atol(out.data) < 80000);
	cm_buf_fini(&out);
	/* cached the second time; same answer shape */
	assert_int_equal(run(fns, "pi.so:pi_hits", "10", NULL, 0, 0, &out), 1);
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "pi.so:pi_hits", "\"x\"", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "sample count"));
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "pi.so:missing", "1", NULL, 0, 0, &out), 0);
	assert_string_equal(out.data, "plugin pi.so defines no function missing");
	cm_buf_fini(&out);
	/* A symbol of one of its dependencies is not one of its functions:
	 * libc's system, reached through the plugin, would run any command. */
	assert_int_equal(run(fns, "pi.so:system", "\"touch /tmp/strand-pwned\"", NULL, 0, 0, &out), 0);
	assert_string_equal(out.data, "plugin pi.so defines no function system");
	cm_buf_fini(&out);
	assert_int_equal(access("/tmp/strand-pwned", F_OK), -1);
	assert_int_equal(run(fns, "gone.so:f", "1", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "not found"));
	cm_buf_fini(&out);
	assert_int_equal(run(none, "pi.so:pi_hits", "1", NULL, 0, 0, &out), 0);
	assert_non_null(strstr(out.data, "no plugin path"));
	cm_buf_fini(&out);
	worker_fns_free(fns);
	worker_fns_free(none);
}

static void test_exec(void **state)
{
	worker_fns *fns = worker_fns_new(NULL);
	char *doubler[] = {"sh", "-c", "read x; echo $((x * 2))"};
	char *failing[] = {"sh", "-c", "echo broken >&2; exit 4"};
	char *text[] = {"echo", "hello"};
	char *slow[] = {"sleep", "5"};
	char *big[] = {"sh", "-c", "cat > /dev/null; head -c 9000000 /dev/zero"}; /* past RESULT_MAX, 8 MiB */
	cm_buf out;

	(void)state;
	assert_int_equal(run(fns, "exec", "21", doubler, 3, 0, &out), 1);
	assert_string_equal(out.data, "42\n");
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "exec", "1", failing, 3, 0, &out), 0);
	assert_non_null(strstr(out.data, "status 4: broken"));
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "exec", "1", text, 2, 0, &out), 0);
	assert_non_null(strstr(out.data, "no JSON"));
	cm_buf_fini(&out);
	assert_int_equal(run(fns, "exec", "1", slow, 2, 100, &out), 0);
	assert_non_null(strstr(out.data, "timed out"));
	cm_buf_fini(&out);
	/* Past what a pull carries: a Process's result cannot be; a task's is
	 * in a file the worker stores as a value, holding every byte. */
	assert_int_equal(run(fns, "exec", "1", big, 3, 0, &out), 0);
	assert_non_null(strstr(out.data, "a result over 8388608 bytes cannot be a Process's"));
	cm_buf_fini(&out);
	worker_fn f;
	int ok = -1;
	struct stat st;
	worker_fn_resolve("exec", &f);
	cm_buf_init(&out);
	assert_int_equal(cm_buf_puts(&out, "before"), CM_OK);
	assert_int_equal(worker_fns_call(fns, &f, "1", 1, big, 3, 0, 42, &out, &ok), CM_OK);
	assert_int_equal(ok, WORKER_RESULT_FILE);
	assert_int_equal(strncmp(out.data, "before", 6), 0);
	assert_int_equal(stat(out.data + 6, &st), 0);
	assert_int_equal(st.st_size, 9000000);
	assert_int_equal(unlink(out.data + 6), 0);
	cm_buf_fini(&out);
	worker_fns_free(fns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_builtins),
	        cmocka_unit_test(test_plugin),
	        cmocka_unit_test(test_exec),
	};
	return cmocka_run_group_tests_name("worker_functions", tests, NULL, NULL);
}
