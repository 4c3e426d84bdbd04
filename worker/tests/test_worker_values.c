/* The worker's cache of values (worker/values.c): trimmed to its cap, the
 * least recently used first, but never a value used in the last minute
 * (another worker on the host may be about to open it) nor the one just
 * fetched; files that are not values are left alone. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "worker/values.h"

/* A value's file of 1,000 bytes in dir, named by the digit d (64 of it),
 * last used age_s seconds ago. */
static void value_file(const char *dir, char d, int age_s, char name[CM_SHA256_HEX + 1])
{
	char path[256], bytes[1000] = {0};
	struct timespec when[2];

	memset(name, d, CM_SHA256_HEX);
	name[CM_SHA256_HEX] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, sizeof(bytes)), (ssize_t)sizeof(bytes));
	close(fd);
	clock_gettime(CLOCK_REALTIME, &when[0]);
	when[0].tv_sec -= age_s;
	when[1] = when[0];
	assert_int_equal(utimensat(AT_FDCWD, path, when, 0), 0);
}

static int present(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void test_trim_keeps_what_was_just_used(void **state)
{
	char dir[] = "/tmp/strand-test-values-XXXXXX", old1[65], old2[65], recent[65], fetched[65], other[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	value_file(dir, 'a', 600, old1); /* the oldest */
	value_file(dir, 'b', 300, old2);
	value_file(dir, 'c', 5, recent); /* used a moment ago, by another worker */
	value_file(dir, 'd', 0, fetched);
	snprintf(other, sizeof(other), "%s/notes.txt", dir); /* not a value: never counted nor removed */
	FILE *f = fopen(other, "w");
	assert_non_null(f);
	fputs("kept", f);
	fclose(f);

	/* Room for three: the oldest goes. */
	worker_values_trim(dir, 3000, fetched);
	assert_false(present(dir, old1));
	assert_true(present(dir, old2) && present(dir, recent) && present(dir, fetched));
	/* Room for one: the next oldest goes; the recent one stays past cap. */
	worker_values_trim(dir, 1000, fetched);
	assert_false(present(dir, old2));
	assert_true(present(dir, recent) && present(dir, fetched));
	assert_int_equal(access(other, F_OK), 0);
	/* Nothing kept by name: still none used within the minute goes. */
	worker_values_trim(dir, 0, "");
	assert_true(present(dir, recent) && present(dir, fetched));

	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, recent);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", dir, fetched);
	unlink(path);
	unlink(other);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_trim_keeps_what_was_just_used),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
