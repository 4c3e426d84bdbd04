/*
 * libstrand's map part bodies: the head's members and a slice of the
 * arguments as exact compact JSON text, the text jansson writes for the
 * same object (integers at their limits, strings with escapes, nested
 * values), and the body's room kept from part to part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/args_body.h"

static void test_slice_written_exactly(void **state)
{
	json_t *head = json_pack("{s:s, s:i}", "function", "noop", "chunksize", 1);
	json_t *args = json_loads("[0, -2, \"a\\\"b\\u00e9\\n\", {\"k\": [1.5, null]}, true, -9223372036854775808, "
	                          "9223372036854775807, [], 7]",
	                          0, NULL);
	body_text t = {0};

	(void)state;
	assert_non_null(args);
	assert_int_equal(args_body(&t, head, args, 1, 7), 0);
	assert_string_equal(t.data, "{\"function\":\"noop\",\"chunksize\":1,\"args\":[-2,\"a\\\"b\xc3\xa9\\n\","
	                            "{\"k\":[1.5,null]},true,-9223372036854775808,9223372036854775807,[]]}");
	assert_int_equal(t.len, strlen(t.data));
	/* The same text jansson writes for the object with the slice. */
	json_t *whole = json_deep_copy(head), *slice = json_array();
	for (size_t i = 1; i < 8; i++)
		json_array_append(slice, json_array_get(args, i));
	json_object_set_new(whole, "args", slice);
	char *dumped = json_dumps(whole, JSON_COMPACT);
	assert_string_equal(t.data, dumped);
	free(dumped);
	json_decref(whole);

	/* The next part goes where the last one was. */
	char *room = t.data;
	json_t *empty = json_object();
	assert_int_equal(args_body(&t, empty, args, 8, 1), 0);
	assert_string_equal(t.data, "{\"args\":[7]}");
	assert_ptr_equal(t.data, room);
	assert_int_equal(args_body(&t, empty, args, 0, 0), 0);
	assert_string_equal(t.data, "{\"args\":[]}");
	json_decref(empty);
	free(t.data);
	json_decref(args);
	json_decref(head);
}

/* Parts larger than the first room: 100,000 integers and strings grow the
 * text as they go, and it reads back as the slice. */
static void test_large_part_reads_back(void **state)
{
	json_t *head = json_pack("{s:I}", "offset", (json_int_t)5);
	json_t *args = json_array();
	body_text t = {0};
	json_error_t err;

	(void)state;
	for (int i = 0; i < 100005; i++)
		json_array_append_new(args,
		                      i % 3 ? json_integer((json_int_t)i * 7919 - 400000) : json_sprintf("s%d", i));
	assert_int_equal(args_body(&t, head, args, 5, 100000), 0);
	json_t *back = json_loadb(t.data, t.len, 0, &err);
	assert_non_null(back);
	assert_int_equal(json_integer_value(json_object_get(back, "offset")), 5);
	json_t *got = json_object_get(back, "args");
	assert_int_equal(json_array_size(got), 100000);
	for (size_t i = 0; i < 100000; i++)
		assert_true(json_equal(json_array_get(got, i), json_array_get(args, i + 5)));
	json_decref(back);
	free(t.data);
	json_decref(args);
	json_decref(head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_slice_written_exactly),
	        cmocka_unit_test(test_large_part_reads_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
