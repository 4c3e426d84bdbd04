/*
 * Values uploaded as their bytes (/v1/values): stored once under their
 * SHA-256 and read back exact, refused whole past a cap (nothing half
 * stored), streamed through the gateway without its memory growing with
 * them, and used by tasks as their arguments: {"$value": "SHA256"}, over
 * a tcp:// hub and a tls+tcp:// one.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include "common/sha256.h"
#include "tests/support/harness.h"

/* len bytes that do not compress and differ by seed. */
static char *noise(size_t len, uint64_t seed)
{
	char *b = malloc(len);
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	assert_non_null(b);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (char)(x >> 24);
	}
	return b;
}

static void sha256_of(const void *data, size_t len, char hex[CM_SHA256_HEX + 1])
{
	cm_sha256 h;

	cm_sha256_init(&h);
	cm_sha256_update(&h, data, len);
	cm_sha256_hex(&h, hex);
}

static response put_value(const gateway *g, const char *name, const void *data, size_t len)
{
	char path[128];
	const char *headers[] = {"Content-Type: application/octet-stream", g->auth, NULL};

	snprintf(path, sizeof(path), "/v1/values/%s", name);
	return http_bytes(g, "PUT", path, data, len, headers);
}

static response get_value(const gateway *g, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/values/%s", name);
	return http(g, "GET", path, NULL, NULL);
}

static void assert_problem(response *r, long status, const char *want)
{
	const char *detail = json_string_value(json_object_get(r->json, "detail"));

	if (r->status != status)
		fail_msg("expected %ld, got %ld: %s", status, r->status, r->body);
	assert_string_equal(r->content_type, "application/problem+json");
	if (!detail || !strstr(detail, want))
		fail_msg("detail '%s' does not say '%s'", detail ? detail : "(none)", want);
}

/* The files in the gateway's value folder, names joined by spaces. */
static void value_files(const gateway *g, char *out, size_t len)
{
	char dir[400];
	DIR *d;
	struct dirent *e;
	size_t at = 0;

	snprintf(dir, sizeof(dir), "%s/strand-values", g->dir);
	out[0] = '\0';
	assert_non_null(d = opendir(dir));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			at += (size_t)snprintf(out + at, len - at, "%s%s", at ? " " : "", e->d_name);
	closedir(d);
}

/* A 64 MiB value each way, exact; stored once; removed. */
static void test_a_value_round_trip(void **state)
{
	enum { LEN = 64 << 20 };
	char name[CM_SHA256_HEX + 1], files[512];
	char *bytes = noise(LEN, 1);
	gateway g;
	response r;

	(void)state;
	gateway_start(&g, NULL);
	json_t *info = http_get_ok(&g, "/v1/values");
	assert_int_equal(json_integer_value(json_object_get(info, "max_bytes")), 1 << 30);
	assert_int_equal(json_integer_value(json_object_get(info, "inline_max")), 8 << 20);
	assert_int_equal(json_integer_value(json_object_get(info, "total")), 0);
	json_decref(info);

	sha256_of(bytes, LEN, name);
	r = put_value(&g, name, bytes, LEN);
	assert_int_equal(r.status, 201);
	assert_string_equal(json_string_value(json_object_get(r.json, "sha256")), name);
	assert_int_equal(json_integer_value(json_object_get(r.json, "size")), LEN);
	response_free(&r);
	/* Stored already: answered without its body being kept again; HEAD
	 * says so before a body is sent. */
	r = put_value(&g, name, bytes, LEN);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "size")), LEN);
	response_free(&r);
	char head[512], answer[2048];
	snprintf(head, sizeof(head),
	         "HEAD /v1/values/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nConnection: close\r\n\r\n", name, g.auth);
	assert_int_equal(http_raw(&g, head, answer, sizeof(answer)), 200);
	assert_non_null(strcasestr(answer, "Content-Length: 67108864\r\n"));
	value_files(&g, files, sizeof(files));
	assert_string_equal(files, name);

	r = get_value(&g, name);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/octet-stream");
	assert_int_equal(r.len, LEN);
	assert_memory_equal(r.body, bytes, LEN);
	response_free(&r);
	info = http_get_ok(&g, "/v1/values");
	assert_int_equal(json_integer_value(json_object_get(info, "total")), LEN);
	json_decref(info);

	char path[128];
	snprintf(path, sizeof(path), "/v1/values/%s", name);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_true(json_is_true(json_object_get(r.json, "deleted")));
	response_free(&r);
	r = get_value(&g, name);
	assert_problem(&r, 404, "no such value");
	response_free(&r);
	assert_int_equal(http_raw(&g, head, answer, sizeof(answer)), 404);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_problem(&r, 404, "no such value");
	response_free(&r);
	info = http_get_ok(&g, "/v1/values");
	assert_int_equal(json_integer_value(json_object_get(info, "total")), 0);
	json_decref(info);
	free(bytes);
	gateway_cleanup(&g);
}

/* Past a cap, under a wrong name, or not a name at all: refused, saying
 * why, and nothing is left of it. */
static void test_refused_values_leave_nothing(void **state)
{
	static const char *const args[] = {"--max-value-bytes", "1000", "--max-values-total", "1500", NULL};
	char name[CM_SHA256_HEX + 1], other[CM_SHA256_HEX + 1], files[512];
	char *a = noise(1001, 2), *b = noise(900, 3);
	gateway g;
	response r;

	(void)state;
	gateway_start(&g, args);
	sha256_of(a, 1001, name);
	r = put_value(&g, name, a, 1001);
	assert_problem(&r, 413, "the value's 1001 bytes are over the gateway's 1000 byte cap (--max-value-bytes)");
	response_free(&r);
	r = put_value(&g, "latest", a, 10);
	assert_problem(&r, 400, "64 lowercase hex digits");
	response_free(&r);
	sha256_of(a, 900, name);
	r = put_value(&g, name, b, 900);
	assert_problem(&r, 400, "not the ");
	response_free(&r);
	value_files(&g, files, sizeof(files));
	assert_string_equal(files, "");

	/* The total: a second 900 bytes would make 1,800. */
	r = put_value(&g, name, a, 900);
	assert_int_equal(r.status, 201);
	response_free(&r);
	sha256_of(b, 900, other);
	r = put_value(&g, other, b, 900);
	assert_problem(&r, 429, "(--max-values-total)");
	response_free(&r);
	value_files(&g, files, sizeof(files));
	assert_string_equal(files, name);
	free(a);
	free(b);
	gateway_cleanup(&g);
}

/* A 128 MiB value in and out: the gateway's peak memory grows by far less
 * than the value (it is streamed through fixed buffers). */
static void test_memory_does_not_grow_with_a_value(void **state)
{
	enum { LEN = 128 << 20 };
	char name[CM_SHA256_HEX + 1];
	char *bytes = noise(LEN, 4);
	gateway g;
	response r;

	(void)state;
	gateway_start(&g, NULL);
	sha256_of(bytes, LEN, name);
	long before = proc_status_number(g.pid, "VmHWM:");
	r = put_value(&g, name, bytes, LEN);
	assert_int_equal(r.status, 201);
	response_free(&r);
	r = get_value(&g, name);
	assert_int_equal(r.len, LEN);
	assert_memory_equal(r.body, bytes, LEN);
	response_free(&r);
	long after = proc_status_number(g.pid, "VmHWM:");
	printf("gateway peak memory: %ld KiB before, %ld KiB after a 128 MiB value each way\n", before, after);
	assert_true(after - before < 32 * 1024);
	free(bytes);
	gateway_cleanup(&g);
}

/* A task whose argument names a value gets the value: a builtin its JSON
 * (the small one), a command the 20 MiB one on stdin; one that names a
 * value the gateway does not hold fails, saying so; the rest of the job
 * runs. A result past 8 MiB, a command's or a builtin's, is stored as a
 * value and named. */
static void tasks_get_the_values_they_name(const char *const *args)
{
	enum { BIG = 20 << 20 };
	static const char small[] = "[1,2,3]";
	char small_name[CM_SHA256_HEX + 1], big_name[CM_SHA256_HEX + 1], body[512], missing[CM_SHA256_HEX + 1];
	char *big = malloc(BIG + 2);
	gateway g;
	response r;

	gateway_start(&g, args);
	big[0] = '"';
	memset(big + 1, 'v', BIG);
	big[BIG + 1] = '"';
	sha256_of(small, strlen(small), small_name);
	sha256_of(big, BIG + 2, big_name);
	memset(missing, 'a', CM_SHA256_HEX);
	missing[CM_SHA256_HEX] = '\0';
	r = put_value(&g, small_name, small, strlen(small));
	assert_int_equal(r.status, 201);
	response_free(&r);
	r = put_value(&g, big_name, big, BIG + 2);
	assert_int_equal(r.status, 201);
	response_free(&r);
	char *pool = pool_create(&g, 1);

	snprintf(body, sizeof(body),
	         "{\"function\": \"echo\", \"args\": [{\"$value\": \"%s\"}, 5, {\"$value\": \"%s\"}]}", small_name,
	         missing);
	char *job = job_submit(&g, pool, json_loads(body, 0, NULL));
	json_t *items = job_results(&g, job, "input", 10);
	assert_int_equal(json_array_size(items), 3);
	json_t *want = json_pack("[iii]", 1, 2, 3);
	assert_true(json_equal(json_object_get(json_array_get(items, 0), "value"), want));
	json_decref(want);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 1), "value")), 5);
	assert_true(json_is_false(json_object_get(json_array_get(items, 2), "ok")));
	const char *error = json_string_value(json_object_get(json_array_get(items, 2), "error"));
	assert_non_null(error);
	if (!strstr(error, "the gateway holds no such value (it was never uploaded, or was deleted)"))
		fail_msg("error: %s", error);
	json_decref(items);
	free(job);

	snprintf(body, sizeof(body), "{\"command\": [\"wc\", \"-c\"], \"args\": [{\"$value\": \"%s\"}]}", big_name);
	job = job_submit(&g, pool, json_loads(body, 0, NULL));
	items = job_results(&g, job, "input", 10);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "value")), BIG + 2);
	json_decref(items);
	free(job);

	/* Results past what a pull carries (8 MiB) come back as values: a
	 * command's stdout, and a builtin's; the same bytes, the same name. */
	snprintf(body, sizeof(body), "{\"command\": [\"cat\"], \"args\": [{\"$value\": \"%s\"}, {\"$value\": \"%s\"}]}",
	         big_name, small_name);
	job = job_submit(&g, pool, json_loads(body, 0, NULL));
	items = job_results(&g, job, "input", 10);
	want = json_pack("{s:s}", "$value", big_name);
	assert_true(json_equal(json_object_get(json_array_get(items, 0), "value"), want));
	json_decref(want);
	want = json_pack("[iii]", 1, 2, 3);
	assert_true(json_equal(json_object_get(json_array_get(items, 1), "value"), want));
	json_decref(want);
	json_decref(items);
	free(job);
	snprintf(body, sizeof(body), "{\"function\": \"echo\", \"args\": [{\"$value\": \"%s\"}]}", big_name);
	job = job_submit(&g, pool, json_loads(body, 0, NULL));
	items = job_results(&g, job, "input", 10);
	want = json_pack("{s:s}", "$value", big_name);
	assert_true(json_equal(json_object_get(json_array_get(items, 0), "value"), want));
	json_decref(want);
	json_decref(items);
	free(job);
	/* Bytes the gateway never held: stored by the worker, exact. */
	snprintf(body, sizeof(body), "{\"command\": [\"tr\", \"v\", \"w\"], \"args\": [{\"$value\": \"%s\"}]}",
	         big_name);
	job = job_submit(&g, pool, json_loads(body, 0, NULL));
	items = job_results(&g, job, "input", 10);
	const char *made =
	        json_string_value(json_object_get(json_object_get(json_array_get(items, 0), "value"), "$value"));
	assert_non_null(made);
	char path[128];
	snprintf(path, sizeof(path), "/v1/values/%s", made);
	json_decref(items);
	free(job);
	memset(big + 1, 'w', BIG);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, BIG + 2);
	assert_memory_equal(r.body, big, BIG + 2);
	response_free(&r);
	free(pool);
	free(big);
	gateway_cleanup(&g);
}

static void test_tasks_get_the_values_they_name(void **state)
{
	(void)state;
	tasks_get_the_values_they_name(NULL);
}

/* The same through a tls+tcp:// hub: frames of a MiB, each many TLS
 * records, both ways (pieces of values fetched and stored). */
static void test_values_through_a_tls_hub(void **state)
{
	(void)state;
	with_tls_args(tasks_get_the_values_they_name);
}

/* An inline argument past 8 MiB is refused with the way around it. */
static void test_inline_values_point_to_uploads(void **state)
{
	enum { LEN = 9 << 20 };
	char path[128];
	gateway g;

	(void)state;
	gateway_start(&g, NULL);
	char *pool = pool_create(&g, 1);
	char *arg = malloc(LEN + 3);
	arg[0] = '"';
	memset(arg + 1, 'x', LEN);
	arg[LEN + 1] = '"';
	arg[LEN + 2] = '\0';
	json_t *body =
	        json_pack("{s:s, s:[o]}", "function", "echo", "args", json_loadb(arg, LEN + 2, JSON_DECODE_ANY, NULL));
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	response r = http_json(&g, "POST", path, body);
	assert_problem(
	        &r, 413,
	        "argument 0 is over the 8388608 bytes a value may be inline: upload it (PUT /v1/values/{sha256}, "
	        "up to 1073741824 bytes: --max-value-bytes) and pass {\"$value\": \"SHA256\"}");
	response_free(&r);
	free(arg);
	free(pool);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_value_round_trip),
	        cmocka_unit_test(test_refused_values_leave_nothing),
	        cmocka_unit_test(test_memory_does_not_grow_with_a_value),
	        cmocka_unit_test(test_inline_values_point_to_uploads),
	        cmocka_unit_test(test_tasks_get_the_values_they_name),
	        cmocka_unit_test(test_values_through_a_tls_hub),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
