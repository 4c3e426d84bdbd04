/*
 * Every documented error status of the REST API, answered as RFC 9457
 * application/problem+json with a detail that names what was wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/harness.h"

static gateway g;
static char *pool;

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, NULL);
	pool = pool_create(&g, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	free(pool);
	return 0;
}

/* Asserts a problem response with the status and a detail containing part. */
static void expect(const char *method, const char *path, const char *body, const char *header, long status,
                   const char *part)
{
	response r = http(&g, method, path, body, header);
	const char *detail;

	if (r.status != status)
		fail_msg("%s %s: status %ld, expected %ld: %s", method, path, r.status, status, r.body);
	assert_string_equal(r.content_type, "application/problem+json");
	assert_int_equal(json_integer_value(json_object_get(r.json, "status")), status);
	assert_non_null(json_string_value(json_object_get(r.json, "type")));
	assert_non_null(json_string_value(json_object_get(r.json, "title")));
	detail = json_string_value(json_object_get(r.json, "detail"));
	assert_non_null(detail);
	if (part && !strstr(detail, part))
		fail_msg("%s %s: detail '%s' lacks '%s'", method, path, detail, part);
	response_free(&r);
}

static char *pool_path(const char *suffix)
{
	static char path[160];
	snprintf(path, sizeof(path), "/v1/pools/%s%s", pool, suffix);
	return path;
}

static void test_400_malformed(void **state)
{
	(void)state;
	expect("POST", "/v1/pools", "{\"processes\":", NULL, 400, "not valid JSON");
	expect("POST", "/v1/pools", "[1,2]", NULL, 400, "JSON object");
	expect("POST", "/v1/pools", "{\"processes\":\"two\"}", NULL, 400, "'processes'");
	expect("POST", "/v1/pools", "{\"processes\":0}", NULL, 400, "'processes'");
	expect("POST", "/v1/pools", "{\"proceses\":2}", NULL, 400, "unknown field 'proceses'");
	expect("POST", "/v1/pools", "{\"resources\":{\"cpu\":-1}}", NULL, 400, "'resources.cpu'");
	expect("POST", "/v1/pools", "{\"resources\":{\"memory_mb\":1.5}}", NULL, 400, "'resources.memory_mb'");
	expect("POST", "/v1/pools", "{\"resources\":{\"gpus\":1}}", NULL, 400, "'resources.gpus'");
	expect("POST", "/v1/pools", "{\"max_attempts\":0}", NULL, 400, "'max_attempts'");
	expect("POST", pool_path("/map"), "{\"function\":\"echo\"}", NULL, 400, "'args'");
	expect("POST", pool_path("/map"), "{\"args\":[1]}", NULL, 400, "'function'");
	expect("POST", pool_path("/map"), "{\"function\":\"echo\",\"args\":[1],\"chunksize\":0}", NULL, 400,
	       "'chunksize'");
	expect("POST", pool_path("/map"), "{\"function\":\"echo\",\"command\":[\"x\"],\"args\":[]}", NULL, 400,
	       "not both");
	expect("POST", pool_path("/map"), "{\"command\":[1],\"args\":[]}", NULL, 400, "'command[0]'");
	expect("POST", pool_path("/apply"), "{\"function\":\"echo\"}", NULL, 400, "'arg'");
	expect("POST", pool_path("/apply?wait=abc"), "{\"function\":\"echo\",\"arg\":1}", NULL, 400, "'wait'");
	char key[200] = "Idempotency-Key: ";
	memset(key + strlen(key), 'k', 150);
	expect("POST", pool_path("/map"), "{\"function\":\"echo\",\"args\":[1]}", key, 400, "Idempotency-Key");
}

static void test_400_bad_query(void **state)
{
	response r = http(&g, "POST", pool_path("/map"), "{\"function\":\"echo\",\"args\":[1]}", NULL);
	char path[160];
	const char *job = json_string_value(json_object_get(r.json, "id"));

	(void)state;
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?limit=0", job);
	expect("GET", path, NULL, NULL, 400, "'limit'");
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?order=random", job);
	expect("GET", path, NULL, NULL, 400, "'order'");
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?wait=100000", job);
	expect("GET", path, NULL, NULL, 400, "'wait'");
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?cursor=-4", job);
	expect("GET", path, NULL, NULL, 400, "'cursor'");
	response_free(&r);
}

static void test_404_unknown(void **state)
{
	(void)state;
	expect("GET", "/v1/pools/p-0000000000000000", NULL, NULL, 404, "no such pool");
	expect("DELETE", "/v1/pools/p-0000000000000000", NULL, NULL, 404, "no such pool");
	expect("POST", "/v1/pools/p-0000000000000000/map", "{\"function\":\"echo\",\"args\":[1]}", NULL, 404,
	       "no such pool");
	expect("POST", "/v1/pools/p-0000000000000000/close", "", NULL, 404, "no such pool");
	expect("GET", "/v1/jobs/j-0000000000000000", NULL, NULL, 404, "no such job");
	expect("GET", "/v1/jobs/j-0000000000000000/results", NULL, NULL, 404, "no such job");
	expect("GET", "/v1/nothing", NULL, NULL, 404, NULL);
	expect("POST", pool_path("/explode"), "{}", NULL, 404, "no such pool action");
	expect("PUT", "/v1/pools", "{}", NULL, 405, NULL);
}

static void test_409_closed_pool(void **state)
{
	response r;

	(void)state;
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1}", NULL);
	char path[160];
	snprintf(path, sizeof(path), "/v1/pools/%s/close", json_string_value(json_object_get(r.json, "id")));
	response c = http(&g, "POST", path, "", NULL);
	assert_int_equal(c.status, 200);
	assert_string_equal(json_string_value(json_object_get(c.json, "state")), "closed");
	response_free(&c);
	snprintf(path, sizeof(path), "/v1/pools/%s/map", json_string_value(json_object_get(r.json, "id")));
	expect("POST", path, "{\"function\":\"echo\",\"args\":[1]}", NULL, 409, "closed");
	response_free(&r);
}

static void test_413_body_over_cap(void **state)
{
	size_t n = (64u << 20) + 1024;
	char *body = malloc(n + 1);

	(void)state;
	memset(body, ' ', n);
	memcpy(body, "{\"function\":\"echo\",\"args\":[", 27);
	body[n - 2] = ']';
	body[n - 1] = '}';
	body[n] = '\0';
	expect("POST", pool_path("/map"), body, NULL, 413, "byte cap");
	free(body);
	/* The gateway is fine afterwards. */
	response r = http(&g, "GET", "/healthz", NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
}

static void test_422_unknown_backend_or_function(void **state)
{
	(void)state;
	expect("POST", "/v1/pools", "{\"backend\":\"mesos\"}", NULL, 422, "unknown backend 'mesos'");
	expect("POST", "/v1/pools", "{\"backend\":\"kubernetes\"}", NULL, 422,
	       "backend 'kubernetes' is not configured in this gateway");
	expect("POST", "/v1/pools", "{\"backend\":\"slurm\"}", NULL, 422,
	       "backend 'slurm' is not configured in this gateway");
	expect("POST", "/v1/processes", "{\"command\":[\"true\"],\"backend\":\"slurm\"}", NULL, 422,
	       "backend 'slurm' is not configured in this gateway");
	expect("POST", pool_path("/map"), "{\"function\":\"rm -rf\",\"args\":[1]}", NULL, 422, "unknown function");
	expect("POST", pool_path("/map"), "{\"function\":\"../evil.so:f\",\"args\":[1]}", NULL, 422, "LIB.so:SYMBOL");
	expect("POST", pool_path("/map"), "{\"function\":\"lib.so:1abc\",\"args\":[1]}", NULL, 422, "LIB.so:SYMBOL");
	expect("POST", pool_path("/apply"), "{\"function\":\"builtin:nope\",\"arg\":1}", NULL, 422, "unknown function");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_400_malformed),     cmocka_unit_test(test_400_bad_query),
	        cmocka_unit_test(test_404_unknown),       cmocka_unit_test(test_409_closed_pool),
	        cmocka_unit_test(test_413_body_over_cap), cmocka_unit_test(test_422_unknown_backend_or_function),
	};
	return cmocka_run_group_tests_name("rest_errors", tests, setup, teardown);
}
