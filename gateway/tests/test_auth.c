/*
 * The pure checks behind the gateway's edges: the token file, Host and
 * Origin, Content-Type, host-path prefixes, UTF-8 and worker results.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/auth.h"
#include "gateway/policy.h"
#include "gateway/result_check.h"
#include "gateway/spec.h"

static void test_token_file_is_made_0600_and_read_back(void **state)
{
	char dir[] = "/tmp/strand-auth-XXXXXX", path[64], token[AUTH_TOKEN_MAX], again[AUTH_TOKEN_MAX];
	char detail[256];
	struct stat sb;
	int created;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/strand.token", dir);
	assert_int_equal(auth_token_load(path, NULL, token, &created, detail, sizeof(detail)), CM_OK);
	assert_int_equal(created, 1);
	assert_int_equal(strlen(token), 64);
	assert_int_equal(strspn(token, "0123456789abcdef"), 64);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(auth_token_load(path, NULL, again, &created, detail, sizeof(detail)), CM_OK);
	assert_int_equal(created, 0);
	assert_string_equal(token, again);

	/* Readable by others: refused, saying how to mend it. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(auth_token_load(path, NULL, again, &created, detail, sizeof(detail)), CM_EINVAL);
	assert_non_null(strstr(detail, "chmod 600"));
	/* STRAND_TOKEN wins, and must be long enough. */
	assert_int_equal(auth_token_load(path, "operator-chosen-token-1", again, &created, detail, sizeof(detail)),
	                 CM_OK);
	assert_string_equal(again, "operator-chosen-token-1");
	assert_int_equal(auth_token_load(path, "short", again, &created, detail, sizeof(detail)), CM_EINVAL);
	assert_int_equal(auth_token_load(path, "has a space in it!!", again, &created, detail, sizeof(detail)),
	                 CM_EINVAL);
	unlink(path);
	rmdir(dir);
}

static void test_token_compare_and_bearer(void **state)
{
	(void)state;
	assert_true(auth_token_equal("abcdefghijklmnop", "abcdefghijklmnop"));
	assert_false(auth_token_equal("abcdefghijklmnop", "abcdefghijklmnoq"));
	assert_false(auth_token_equal("abcdefghijklmnop", "abcdefghijklmno"));
	assert_false(auth_token_equal("abcdefghijklmnop", NULL));
	assert_string_equal(auth_bearer("Bearer xyz"), "xyz");
	assert_string_equal(auth_bearer("bearer  xyz"), "xyz");
	assert_null(auth_bearer("Basic eHl6"));
	assert_null(auth_bearer("Bearer "));
	assert_null(auth_bearer(NULL));
}

static void test_host_and_origin(void **state)
{
	(void)state;
	assert_true(auth_host_allowed("127.0.0.1:8080", ""));
	assert_true(auth_host_allowed("10.1.2.3", ""));
	assert_true(auth_host_allowed("[::1]:8080", ""));
	assert_true(auth_host_allowed("localhost:8080", ""));
	assert_true(auth_host_allowed("LOCALHOST", ""));
	assert_false(auth_host_allowed("attacker.example:8080", ""));
	assert_false(auth_host_allowed("localhost.attacker.example", ""));
	assert_false(auth_host_allowed("127.0.0.1.nip.io:8080", ""));
	assert_false(auth_host_allowed(NULL, ""));
	assert_false(auth_host_allowed("", ""));
	assert_false(auth_host_allowed("localhost:80x", ""));
	assert_false(auth_host_allowed("[::1", ""));
	assert_true(auth_host_allowed("strand.internal:443", "gw.example,strand.internal"));
	assert_true(auth_host_allowed("gw.example", "gw.example,strand.internal"));
	assert_false(auth_host_allowed("strand.intern", "gw.example,strand.internal"));

	assert_true(auth_origin_same("http://127.0.0.1:8080", "127.0.0.1:8080"));
	assert_true(auth_origin_same("https://gw.example", "gw.example"));
	assert_false(auth_origin_same("http://127.0.0.1:8081", "127.0.0.1:8080"));
	assert_false(auth_origin_same("null", "127.0.0.1:8080"));
	assert_false(auth_origin_same("http://attacker.example", "127.0.0.1:8080"));

	assert_true(auth_content_type_is("application/json", "application/json"));
	assert_true(auth_content_type_is("application/json; charset=utf-8", "application/json"));
	assert_false(auth_content_type_is("text/plain", "application/json"));
	assert_false(auth_content_type_is("application/jsonp", "application/json"));
	assert_false(auth_content_type_is(NULL, "application/json"));
	assert_true(auth_content_type_is("application/zip", "application/zip"));
	assert_false(auth_content_type_is("application/zipper", "application/zip"));
}

static void test_host_path_prefixes(void **state)
{
	(void)state;
	assert_true(policy_path_allowed("/srv/data", "/srv/data"));
	assert_true(policy_path_allowed("/srv/data/x/y", "/srv/data"));
	assert_true(policy_path_allowed("/srv//data/./x", "/srv/data/"));
	assert_true(policy_path_allowed("/var/tmp/a", "/srv/data:/var/tmp"));
	assert_false(policy_path_allowed("/srv/database", "/srv/data"));
	assert_false(policy_path_allowed("/srv/data/../../etc", "/srv/data"));
	assert_false(policy_path_allowed("/../srv/data", "/srv/data"));
	assert_false(policy_path_allowed("/etc", ""));
	assert_false(policy_path_allowed("relative/path", "/"));
	assert_true(policy_path_allowed("/anything", "/"));
}

/* Images and named volumes a container pool may use: the operator's globs,
 * by default --image alone and no named volume; emptyDir always. */
static void test_images_and_named_volumes(void **state)
{
	static gw_config cfg;
	static pool_spec run;
	char detail[512];

	(void)state;
	snprintf(cfg.image, sizeof(cfg.image), "strand-worker:1");
	snprintf(run.backend, sizeof(run.backend), "docker");
	snprintf(run.image, sizeof(run.image), "strand-worker:1");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_OK);
	snprintf(run.image, sizeof(run.image), "strand-worker:2");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_EPERM);
	assert_non_null(strstr(detail, "image 'strand-worker:2' is not one the operator allowed (--allow-images"));
	snprintf(run.backend, sizeof(run.backend), "local"); /* no image runs there */
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_OK);
	snprintf(run.backend, sizeof(run.backend), "kubernetes");
	snprintf(cfg.allow_images, sizeof(cfg.allow_images), "other:*,strand-worker:*");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_OK);
	assert_false(policy_image_allowed(&cfg, "strand-worker-evil")); /* the glob's ':' */
	assert_true(policy_image_allowed(&cfg, "other:x"));

	run.nvolumes = 2;
	snprintf(run.volumes[0], sizeof(run.volumes[0]), "emptyDir:/scratch");
	snprintf(run.volumes[1], sizeof(run.volumes[1]), "data-7:/data:ro");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_EPERM);
	assert_non_null(strstr(detail, "field 'volumes[1]': named volume 'data-7' is not one the operator allowed"));
	snprintf(cfg.allow_volumes, sizeof(cfg.allow_volumes), "scratch,data-*");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_OK);
	snprintf(run.volumes[1], sizeof(run.volumes[1]), "strand-data:/data");
	assert_int_equal(policy_check_run(&cfg, &run, detail, sizeof(detail)), CM_EPERM);
}

static void test_utf8(void **state)
{
	char s[] = "ok \xc3\xa9 \xff bad \xe2\x82";

	(void)state;
	assert_true(cm_utf8_valid("h\xc3\xa9llo \xf0\x9f\x98\x80", 11));
	assert_false(cm_utf8_valid("\xc0\xaf", 2)); /* overlong "/" */
	assert_false(cm_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
	assert_false(cm_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	assert_false(cm_utf8_valid("a\0b", 3));
	assert_false(cm_utf8_valid("\xe2\x82", 2)); /* cut */
	cm_utf8_sanitize(s);
	assert_string_equal(s, "ok \xc3\xa9 ? bad ??");
}

static void test_results_are_json_and_errors_utf8(void **state)
{
	char why[200];

	(void)state;
	assert_true(result_check(1, "{\"a\":[1,2]}", 11, why, sizeof(why)));
	assert_true(result_check(1, "null", 4, why, sizeof(why)));
	assert_true(result_check(1, "", 0, why, sizeof(why)));
	assert_false(result_check(1, "1], {\"index\": 7", 15, why, sizeof(why)));
	assert_non_null(strstr(why, "invalid result: "));
	assert_false(result_check(1, "\"\\u0000\"", 8, why, sizeof(why)));
	assert_false(result_check(1, "\"\xff\"", 3, why, sizeof(why)));
	assert_false(result_check(1, "1 2", 3, why, sizeof(why)));
	assert_string_equal(why, "invalid result: not one UTF-8 JSON value (text after it at byte 2)");
	assert_true(result_check(1, " [1, {\"a\": \"\xc3\xa9\"}]\n", 18, why, sizeof(why)));
	assert_false(result_check(1, "[1,]", 4, why, sizeof(why)));
	assert_string_equal(why, "invalid result: not one UTF-8 JSON value (an unexpected character at byte 3)");
	assert_false(result_check(1, "nul", 3, why, sizeof(why)));
	assert_false(result_check(1, "\"a\0b\"", 5, why, sizeof(why)));
	assert_true(result_check(0, "plain error text", 16, why, sizeof(why)));
	assert_false(result_check(0, "bad \xff", 5, why, sizeof(why)));
	assert_string_equal(why, "invalid result: the error message is not UTF-8 text");
	/* Over the value cap, whatever made it. */
	spec_set_value_max(10);
	assert_true(result_check(1, "[1,2,3,45]", 10, why, sizeof(why)));
	assert_false(result_check(1, "[1,2,3,456]", 11, why, sizeof(why)));
	assert_string_equal(why, "result of 11 bytes is over the 10 byte cap (--max-value-bytes)");
	/* Past what travels inline, under the cap: by reference. */
	spec_set_value_max(SPEC_VALUE_DEFAULT);
	assert_int_equal(spec_value_max(), SPEC_INLINE_MAX);
	spec_say_too_big(why, sizeof(why), "argument 2");
	assert_string_equal(why, "argument 2 is over the 8388608 bytes a value may be inline: upload it (PUT "
	                         "/v1/values/{sha256}, up to 1073741824 bytes: --max-value-bytes) and pass "
	                         "{\"$value\": \"SHA256\"}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_token_file_is_made_0600_and_read_back),
	        cmocka_unit_test(test_token_compare_and_bearer),
	        cmocka_unit_test(test_host_and_origin),
	        cmocka_unit_test(test_host_path_prefixes),
	        cmocka_unit_test(test_images_and_named_volumes),
	        cmocka_unit_test(test_utf8),
	        cmocka_unit_test(test_results_are_json_and_errors_utf8),
	};
	return cmocka_run_group_tests_name("auth", tests, NULL, NULL);
}
