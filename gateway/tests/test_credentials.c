/*
 * The hub's table of who may speak: a worker's secret opens only its own
 * entry, and what the table keeps (a hash) opens nothing.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/credentials.h"

static void test_a_secret_opens_its_own_worker_only(void **state)
{
	char secret[CREDENTIALS_SECRET_LEN + 1], hash[CREDENTIALS_HASH_LEN + 1];
	char other[CREDENTIALS_SECRET_LEN + 1], other_hash[CREDENTIALS_HASH_LEN + 1];
	char expect[CM_SHA256_HEX + 1], pool[20] = "", code[65] = "x";
	credentials *c = NULL;
	cm_sha256 h;

	(void)state;
	assert_int_equal(credentials_new(&c), CM_OK);
	credentials_new_secret(secret, hash);
	credentials_new_secret(other, other_hash);
	assert_int_equal(strlen(secret), CREDENTIALS_SECRET_LEN);
	assert_string_not_equal(secret, other);
	/* What is kept is the secret's SHA-256, not the secret. */
	cm_sha256_init(&h);
	cm_sha256_update(&h, secret, strlen(secret));
	cm_sha256_hex(&h, expect);
	assert_string_equal(hash, expect);
	assert_int_equal(credentials_add(c, "w-1", "p-1", "", hash), CM_OK);
	assert_int_equal(credentials_add(c, "w-2", "p-2", expect, other_hash), CM_OK);
	/* Only a hash is taken: a secret given in its place is refused. */
	assert_int_equal(credentials_add(c, "w-3", "p-3", "", "not a hash"), CM_EINVAL);

	assert_int_equal(credentials_check(c, "w-1", 3, secret, strlen(secret), pool, code), 1);
	assert_string_equal(pool, "p-1");
	assert_string_equal(code, "");
	assert_int_equal(credentials_check(c, "w-2", 3, other, strlen(other), pool, code), 1);
	assert_string_equal(pool, "p-2");
	assert_string_equal(code, expect);
	/* Another worker's secret, the stored hash itself, a cut secret, an
	 * unknown worker: none opens anything. */
	assert_int_equal(credentials_check(c, "w-1", 3, other, strlen(other), NULL, NULL), 0);
	assert_int_equal(credentials_check(c, "w-1", 3, hash, strlen(hash), NULL, NULL), 0);
	assert_int_equal(credentials_check(c, "w-1", 3, secret, strlen(secret) - 1, NULL, NULL), 0);
	assert_int_equal(credentials_check(c, "w-9", 3, secret, strlen(secret), NULL, NULL), 0);
	credentials_remove(c, "w-1");
	assert_int_equal(credentials_check(c, "w-1", 3, secret, strlen(secret), NULL, NULL), 0);
	credentials_clear(c);
	assert_int_equal(credentials_check(c, "w-2", 3, other, strlen(other), NULL, NULL), 0);
	credentials_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_secret_opens_its_own_worker_only),
	};
	return cmocka_run_group_tests_name("credentials", tests, NULL, NULL);
}
