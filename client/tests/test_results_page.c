/*
 * libstrand's results page reader: a page in one of the gateway's shapes
 * (items, columns) is read item by item with the exact values (integers,
 * strings with escapes, nested values, errors); a page written any other
 * way is read by jansson with the same result; what is no results page,
 * or columns that disagree, is refused.
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

/* The same page by columns (shape=columns), its indexes in two runs. */
static const char columns_page[] = "{\"job\":\"j-1\",\"order\":\"input\",\"total\":9,\"values\":["
                                   "null,-42,\"a\\\"]}b\\u00e9\",{\"k\":[1,{\"x\":\"}\"}],\"e\":1.5e3},"
                                   "\"boom \\\"x\\\"\",123456789012345678901"
                                   "],\"indexes\":[[0,2],[2,4]],\"failed\":[4],"
                                   "\"next_cursor\":\"6\",\"complete\":false}";

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
	/* The same page by columns: the same items, read by its shape. */
	assert_int_equal(results_page_read(columns_page, strlen(columns_page), &pg), 0);
	assert_null(pg.values);
	expect_items(&pg);
	results_page_fini(&pg);
}

/* A page by columns in completion order, spaced (so jansson reads it):
 * the same items as read by its shape. */
static void test_columns_read_whole(void **state)
{
	static const char tight[] = "{\"job\":\"j-2\",\"order\":\"completion\",\"total\":9,\"values\":[7,\"no\",9],"
	                            "\"indexes\":[[8,1],[2,2]],\"failed\":[1],\"next_cursor\":\"3\",\"complete\":true}";
	json_t *page = json_loads(tight, 0, NULL);
	char *spaced = json_dumps(page, JSON_INDENT(1));
	results_page pg = {0};

	(void)state;
	for (int whole = 0; whole < 2; whole++) {
		const char *text = whole ? spaced : tight;
		assert_int_equal(results_page_read(text, strlen(text), &pg), 0);
		assert_true(whole ? pg.values != NULL : pg.values == NULL);
		assert_int_equal(pg.n, 3);
		assert_int_equal(pg.items[0].index, 8);
		assert_int_equal(pg.items[1].index, 2);
		assert_int_equal(pg.items[2].index, 3);
		assert_true(pg.items[0].ok && !pg.items[1].ok && pg.items[2].ok);
		json_t *v = results_page_value(&pg, 1);
		assert_string_equal(json_string_value(v), "no");
		json_decref(v);
		v = results_page_value(&pg, 2);
		assert_int_equal(json_integer_value(v), 9);
		json_decref(v);
		assert_string_equal(pg.next_cursor, "3");
		assert_true(pg.complete);
	}
	results_page_fini(&pg);
	free(spaced);
	json_decref(page);
}

/* Columns that disagree are no page, read by their shape or whole: more
 * or fewer indexes than values, an empty run, a failed position past the
 * values, indexes below 0 or past the largest. */
static void test_columns_disagree(void **state)
{
	static const char *const parts[] = {
	        "\"values\":[1,2],\"indexes\":[[0,3]],\"failed\":[]",
	        "\"values\":[1,2],\"indexes\":[[0,1]],\"failed\":[]",
	        "\"values\":[1,2],\"indexes\":[[0,2],[5,0]],\"failed\":[]",
	        "\"values\":[1,2],\"indexes\":[[0,2]],\"failed\":[2]",
	        "\"values\":[1,2],\"indexes\":[[0,2]],\"failed\":[-1]",
	        "\"values\":[1,2],\"indexes\":[[-5,2]],\"failed\":[]",
	        "\"values\":[1,2],\"indexes\":[[9223372036854775807,2]],\"failed\":[]",
	        "\"values\":[1,2],\"indexes\":[[0,2]]",
	};
	results_page pg = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		char tight[256];
		snprintf(tight, sizeof(tight),
		         "{\"job\":\"j\",\"order\":\"input\",\"total\":9,%s,\"next_cursor\":\"2\",\"complete\":false}",
		         parts[i]);
		json_t *page = json_loads(tight, 0, NULL);
		char *spaced = json_dumps(page, JSON_INDENT(1));
		assert_non_null(spaced);
		assert_int_equal(results_page_read(tight, strlen(tight), &pg), -1);
		assert_int_equal(results_page_read(spaced, strlen(spaced), &pg), -1);
		free(spaced);
		json_decref(page);
	}
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
	        cmocka_unit_test(test_gateway_shape),    cmocka_unit_test(test_columns_read_whole),
	        cmocka_unit_test(test_columns_disagree), cmocka_unit_test(test_other_shape_read_whole),
	        cmocka_unit_test(test_not_a_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
