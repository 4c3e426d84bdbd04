/*
 * A full disk under the database: new submissions fail with 503
 * problem+json, what was stored stays readable and intact, and once space
 * is back the gateway takes work again without a restart. The disk is a
 * real tmpfs of a few MiB, filled up; mounting needs root, so elsewhere the
 * test skips and says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/harness.h"

static json_t *strings(int n)
{
	json_t *a = json_array();
	char s[128];

	for (int i = 0; i < n; i++) {
		snprintf(s, sizeof(s), "%06d-%0100d", i, i);
		json_array_append_new(a, json_string(s));
	}
	return a;
}

static void fill(const char *path)
{
	char block[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	memset(block, 'x', sizeof(block));
	while (write(fd, block, sizeof(block)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	/* The last partial blocks too. */
	while (write(fd, block, 512) > 0)
		;
	close(fd);
}

static char mnt[] = "/tmp/strand-full-XXXXXX";
static int mounted;

/* Unmounts whatever happened in the test. */
static int teardown(void **state)
{
	(void)state;
	if (mounted && umount2(mnt, MNT_DETACH) == 0)
		mounted = 0;
	rmdir(mnt);
	return 0;
}

static void test_full_disk_gives_503_and_loses_nothing(void **state)
{
	char db[128], filler[128], dbarg[140];
	const char *args[] = {"--db", dbarg, NULL};
	gateway g;
	char path[128];
	response r;

	(void)state;
	assert_non_null(mkdtemp(mnt));
	if (geteuid() != 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=6m") != 0) {
		print_message("skipped: mounting a small tmpfs needs root (%s)\n", strerror(errno));
		skip();
	}
	mounted = 1;
	snprintf(db, sizeof(db), "%s/strand.db", mnt);
	snprintf(dbarg, sizeof(dbarg), "%s", db);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	gateway_start(&g, args);
	char *pool = pool_create(&g, 1);

	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "function", "echo", "args", strings(100)));
	assert_int_equal(r.status, 202);
	char first[32];
	snprintf(first, sizeof(first), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	json_decref(job_results(&g, first, "input", 1000));

	fill(filler);
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "function", "echo", "args", strings(20000)));
	assert_int_equal(r.status, 503);
	assert_string_equal(r.content_type, "application/problem+json");
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "detail")), "could not commit"));
	response_free(&r);

	/* What was stored is still served, whole. */
	json_t *items = job_results(&g, first, "input", 1000);
	assert_int_equal(json_array_size(items), 100);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(items, 99), "value")), "000099-"));
	json_decref(items);

	/* Space again: work is taken and runs, no restart needed. */
	assert_int_equal(unlink(filler), 0);
	r = http_json(&g, "POST", path, json_pack("{s:s, s:o}", "function", "echo", "args", strings(2000)));
	assert_int_equal(r.status, 202);
	char second[32];
	snprintf(second, sizeof(second), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	items = job_results(&g, second, "input", 5000);
	assert_int_equal(json_array_size(items), 2000);
	assert_true(json_is_true(json_object_get(json_array_get(items, 1999), "ok")));
	json_decref(items);

	/* And the file passes the integrity check of a restart. */
	assert_int_equal(gateway_stop(&g), 0);
	gateway_restart(&g);
	items = job_results(&g, first, "input", 1000);
	assert_int_equal(json_array_size(items), 100);
	json_decref(items);
	gateway_cleanup(&g);
	free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_full_disk_gives_503_and_loses_nothing, teardown),
	};
	return cmocka_run_group_tests_name("store_full", tests, NULL, NULL);
}
