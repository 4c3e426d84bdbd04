/*
 * The dashboard's sign-ins: an id opens its session until it is closed or
 * idle too long, and the table forgets the least recently used when full.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/sessions.h"

static void test_a_session_lives_while_used_and_ends_when_closed(void **state)
{
	char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1], forged[SESSION_ID_LEN + 1];
	sessions *s = NULL;

	(void)state;
	assert_int_equal(sessions_new(1000, &s), CM_OK);
	assert_int_equal(sessions_open(s, 0, a), CM_OK);
	assert_int_equal(sessions_open(s, 0, b), CM_OK);
	assert_int_equal(strlen(a), SESSION_ID_LEN);
	assert_string_not_equal(a, b);
	assert_int_equal(sessions_check(s, a, 999), 1); /* used at 999 */
	assert_int_equal(sessions_check(s, a, 1998), 1); /* idle 999 ms: still on */
	assert_int_equal(sessions_check(s, b, 1000), 0); /* idle 1000 ms: gone */
	assert_int_equal(sessions_check(s, b, 1001), 0);
	/* Ids that are not ones given out open nothing. */
	memcpy(forged, a, sizeof(forged));
	forged[0] = forged[0] == '0' ? '1' : '0';
	assert_int_equal(sessions_check(s, forged, 1999), 0);
	assert_int_equal(sessions_check(s, NULL, 1999), 0);
	assert_int_equal(sessions_check(s, "", 1999), 0);
	/* Closed: the id opens nothing any more. */
	sessions_close(s, a);
	assert_int_equal(sessions_check(s, a, 2000), 0);
	sessions_free(s);
}

static void test_a_full_table_forgets_the_least_recently_used(void **state)
{
	static char ids[SESSIONS_MAX + 1][SESSION_ID_LEN + 1];
	sessions *s = NULL;

	(void)state;
	assert_int_equal(sessions_new(1000000, &s), CM_OK);
	for (int i = 0; i < SESSIONS_MAX; i++)
		assert_int_equal(sessions_open(s, i, ids[i]), CM_OK);
	assert_int_equal(sessions_check(s, ids[0], SESSIONS_MAX), 1); /* 0 is now the newest used */
	assert_int_equal(sessions_open(s, SESSIONS_MAX + 1, ids[SESSIONS_MAX]), CM_OK);
	assert_int_equal(sessions_check(s, ids[1], SESSIONS_MAX + 2), 0); /* the least recently used */
	assert_int_equal(sessions_check(s, ids[0], SESSIONS_MAX + 2), 1);
	assert_int_equal(sessions_check(s, ids[2], SESSIONS_MAX + 2), 1);
	assert_int_equal(sessions_check(s, ids[SESSIONS_MAX], SESSIONS_MAX + 2), 1);
	sessions_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_session_lives_while_used_and_ends_when_closed),
	        cmocka_unit_test(test_a_full_table_forgets_the_least_recently_used),
	};
	return cmocka_run_group_tests_name("sessions", tests, NULL, NULL);
}
