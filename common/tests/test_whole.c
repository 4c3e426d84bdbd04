/* cm_whole: a whole number in its range, and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/common.h"

static void test_whole_numbers_taken(void **state)
{
	static const struct {
		const char *text;
		int64_t want;
	} cases[] = {{"0", 0}, {"42", 42}, {"+7", 7}, {"-3", -3}, {"007", 7}, {"9223372036854775807", INT64_MAX}};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = -99;
		assert_int_equal(cm_whole(cases[i].text, INT64_MIN, INT64_MAX, &v), CM_OK);
		assert_true(v == cases[i].want);
	}
}

static void test_anything_else_refused_untouched(void **state)
{
	static const char *const bad[] = {"",    " 5",   "5 ",  "\t5",  "4abc", "two", "1e3", "0x10", "--5",
	                                  "+",   "-",    "5.0", "1,000", "9223372036854775808"};
	int64_t v = 17;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cm_whole(bad[i], INT64_MIN, INT64_MAX, &v), CM_EINVAL);
		assert_true(v == 17);
	}
	assert_int_equal(cm_whole(NULL, 0, 1, &v), CM_EINVAL);
	/* The range, both ends included. */
	assert_int_equal(cm_whole("1", 1, 4096, &v), CM_OK);
	assert_int_equal(cm_whole("4096", 1, 4096, &v), CM_OK);
	assert_int_equal(cm_whole("0", 1, 4096, &v), CM_EINVAL);
	assert_int_equal(cm_whole("4097", 1, 4096, &v), CM_EINVAL);
	assert_true(v == 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_whole_numbers_taken),
	        cmocka_unit_test(test_anything_else_refused_untouched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
