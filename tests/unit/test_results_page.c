/*
 * libstrand's results page reader: a page in the gateway's shape is read
 * item by item with the exact values (integers, strings with escapes,
 * nested values, errors); a page in any other shape is read by jansson with
 * the same result; what is no results page is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/results_page.h"

static const char gateway_page[] = "{\"job\":\"j-1\",\"order\":\"input\",\"total\":9,\"items\":["
                                   "{\"index\":0,\"ok\":true,\"value\":null},"
                                   "{\"index\":1,\"ok\":true,\"value\":-42},"
                                   "{\"index\":2,\"ok\":true,\"value\":\"a\\\"]}b\\u00e9\"},"
                                   "{\"index\":3,\"ok\":true,\"value\":{\"k\":[1,{\"x\":\"}\"}],\"e\":1.5e3}},"
                                   "{\"index\":4,\"ok\":false,\"error\":\"boom \\\"x\\\"\"},"
                                   "{\"index\":5,\"ok\":true,\"value\":123456789012345678901}"
                                   "],\"next_cursor\":\"6\",\"complete\":false}";

/* The page read into pg, its items checked against the gateway page's. */
static void expect_items(const results_page *pg)
{
	json_t *v;

	assert_int_equal(pg->n, 6);
	for (size_t i = 0; i < pg->n; i++)
		assert_int_equal(pg->items[i].index, (long long)i);
	assert_string_equal(pg->next_cursor, "6");
	assert_false(pg->complete);
	v = results_page_value(pg, 0);
	assert_true(json_is_null(v));
	json_decref(v);
	v = results_page_value(pg, 1);
	assert_int_equal(json_integer_value(v), -42);
	json_decref(v);
	v = results_page_value(pg, 2);
	assert_string_equal(json_string_value(v), "a\"]}b\xc3\xa9");
	json_decref(v);
	v = results_page_value(pg, 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(v, "k"), 1), "x")), "}");
	assert_true(json_real_value(json_object_get(v, "e")) == 1500.0);
	json_decref(v);
	assert_false(pg->items[4].ok);
	v = results_page_value(pg, 4);
	assert_string_equal(json_string_value(v), "boom \"x\"");
	json_decref(v);
	/* Past 64 bits: not an integer jansson takes; the value is NULL, not
	 * a wrong number. */
	assert_true(pg->items[5].ok);
	assert_null(results_page_value(pg, 5));
}

static void test_gateway_shape(void **state)
{
	results_page pg = {0};

	(void)state;
	assert_int_equal(results_page_read(gateway_page, strlen(gateway_page), &pg), 0);
	assert_null(pg.values); /* read by its shape */
	expect_items(&pg);
	/* The next page goes where the last one was: the same room, the
	 * values of the new page (jansson's values of a page read whole are
	 * let go). */
	page_item *room = pg.items;
	size_t cap = pg.cap;
	char whole[] = "{\"complete\":true,\"next_cursor\":\"9\",\"items\":[{\"index\":8,\"ok\":true,\"value\":1}]}";
	assert_int_equal(results_page_read(whole, strlen(whole), &pg), 0);
	assert_non_null(pg.values);
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.items[0].index, 8);
	assert_true(pg.complete);
	assert_int_equal(results_page_read(gateway_page, strlen(gateway_page), &pg), 0);
	assert_null(pg.values);
	assert_ptr_equal(pg.items, room);
	assert_int_equal(pg.cap, cap);
	expect_items(&pg);
	results_page_fini(&pg);
}

static void test_other_shape_read_whole(void **state)
{
	results_page pg = {0};
	json_t *page;
	char *spaced;

	(void)state;
	/* A page with whitespace and its keys in another order. */
	page = json_loads("{\"complete\": true, \"items\": [ {\"ok\": true, \"index\": 7, \"value\": [1, 2]} ],"
	                  " \"next_cursor\": \"8\"}",
	                  0, NULL);
	spaced = json_dumps(page, JSON_INDENT(2));
	assert_int_equal(results_page_read(spaced, strlen(spaced), &pg), 0);
	assert_non_null(pg.values); /* read whole */
	assert_int_equal(pg.n, 1);
	assert_int_equal(pg.items[0].index, 7);
	assert_true(pg.complete);
	assert_string_equal(pg.next_cursor, "8");
	json_t *v = results_page_value(&pg, 0);
	assert_int_equal(json_integer_value(json_array_get(v, 1)), 2);
	json_decref(v);
	results_page_fini(&pg);
	free(spaced);
	json_decref(page);
}

static void test_not_a_page(void **state)
{
	static const char *const bad[] = {"",
	                                  "[]",
	                                  "{\"items\":{}}",
	                                  "{\"items\":[]}",
	                                  "not json",
	                                  "{\"job\":\"j\",\"order\":\"input\",\"total\":1,\"items\":[{\"index\":0,"};
	results_page pg = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(results_page_read(bad[i], strlen(bad[i]), &pg), -1);
	results_page_fini(&pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_gateway_shape),
	        cmocka_unit_test(test_other_shape_read_whole),
	        cmocka_unit_test(test_not_a_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
