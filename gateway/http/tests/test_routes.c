/*
 * The route table against gateway/http/openapi.json: every route and method the
 * gateway routes is documented and nothing else is (the integration test
 * tests/integration/openapi.sh then checks the server answers as the
 * table says). And the matching of URLs to templates, and a 405's words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gateway/http/route_table.h"

static void every_route_is_documented_and_nothing_else(void **state)
{
	static const char *const methods[] = {"get", "post", "put", "patch", "delete"};
	json_error_t jerr;
	json_t *doc = json_load_file(STRAND_OPENAPI, 0, &jerr);
	json_t *paths = json_object_get(doc, "paths");

	(void)state;
	if (!doc)
		fail_msg("%s: %s", STRAND_OPENAPI, jerr.text);
	assert_int_equal(json_object_size(paths), route_count);
	for (size_t i = 0; i < route_count; i++) {
		json_t *p = json_object_get(paths, route_table[i].path);
		if (!p)
			fail_msg("%s is not in the document", route_table[i].path);
		for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			char upper[8];
			size_t k;
			for (k = 0; methods[m][k]; k++)
				upper[k] = (char)(methods[m][k] - 'a' + 'A');
			upper[k] = '\0';
			if (route_allows(i, upper) != (json_object_get(p, methods[m]) != NULL))
				fail_msg("%s %s: the table and the document differ", upper, route_table[i].path);
		}
	}
	json_decref(doc); /* as many paths as routes, each route among them: the same set */
}

static void urls_match_their_templates(void **state)
{
	(void)state;
	assert_string_equal(route_table[route_find("/v1/pools/p-1/map")].path, "/v1/pools/{id}/map");
	assert_string_equal(route_table[route_find("/v1/pools/p-1?x=1")].path, "/v1/pools/{id}");
	assert_string_equal(route_table[route_find("/v1/pipes/x-1/ends/0/recv?wait=3")].path,
	                    "/v1/pipes/{id}/ends/{end}/recv");
	assert_string_equal(route_table[route_find("/v1/managers/m-1/calls/j-2")].path,
	                    "/v1/managers/{id}/calls/{call}");
	assert_string_equal(route_table[route_find("/")].path, "/");
	assert_int_equal(route_find("/v1/pools/"), route_count); /* an empty segment names nothing */
	assert_int_equal(route_find("/v1/pools/p-1/map/more"), route_count);
	assert_int_equal(route_find("/v1/nothing"), route_count);
	assert_int_equal(route_find(""), route_count);
}

static void a_405_says_what_the_route_takes(void **state)
{
	char detail[160], allow[64];
	size_t pool = route_find("/v1/pools/p-1"), health = route_find("/healthz");

	(void)state;
	assert_true(route_allows(pool, "PATCH"));
	assert_false(route_allows(pool, "POST"));
	assert_false(route_allows(pool, "PAT"));
	assert_true(route_allows(health, "HEAD"));
	route_usage(pool, detail, sizeof(detail), allow, sizeof(allow));
	assert_string_equal(detail, "use GET, PATCH or DELETE on /v1/pools/{id}");
	assert_string_equal(allow, "GET, PATCH, DELETE");
	route_usage(health, detail, sizeof(detail), allow, sizeof(allow));
	assert_string_equal(detail, "use GET on /healthz");
	assert_string_equal(allow, "GET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(every_route_is_documented_and_nothing_else),
	        cmocka_unit_test(urls_match_their_templates),
	        cmocka_unit_test(a_405_says_what_the_route_takes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
