/*
 * The lists (pools, managers, processes, rings, queues, pipes, leases) on a
 * real gateway: paged newest first with a cursor, every item exactly once
 * across pages of any size, filtered by one or more states, each item
 * shown as its own view, and bad queries refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/harness.h"

static gateway g;

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	return 0;
}

/* Most things here are made within a millisecond of each other, some a
 * few apart: the lists order by when each was made, to the millisecond,
 * then in the order the gateway made them. */
static void pause_ms(void)
{
	static int n;
	struct timespec ts = {0, 3 * 1000000};

	if (++n % 3 == 0)
		nanosleep(&ts, NULL);
}

/* Every item of path (a list called name), in pages of limit: their ids in
 * order, as a JSON array (new). Each page holds at most limit; the last
 * says there is no next one. */
static json_t *page_all(const char *path, const char *name, int limit)
{
	json_t *ids = json_array();
	char cursor[128] = "", url[512];

	for (int pages = 0;; pages++) {
		assert_true(pages < 100);
		snprintf(url, sizeof(url), "%s%slimit=%d%s%s", path, strchr(path, '?') ? "&" : "?", limit,
		         cursor[0] ? "&cursor=" : "", cursor);
		json_t *page = http_get_ok(&g, url);
		json_t *items = json_object_get(page, name), *next = json_object_get(page, "next_cursor"), *it;
		size_t i;
		assert_true(json_is_array(items));
		assert_true(json_array_size(items) <= (size_t)limit);
		json_array_foreach (items, i, it)
			json_array_append(ids, json_object_get(it, "id"));
		if (json_is_null(next)) {
			json_decref(page);
			return ids;
		}
		assert_int_equal(json_array_size(items), limit); /* only a full page has a next */
		snprintf(cursor, sizeof(cursor), "%s", json_string_value(next));
		json_decref(page);
	}
}

/* ids (made in this order) newest first, as a JSON array (new). */
static json_t *newest_first(char **ids, int n)
{
	json_t *a = json_array();

	for (int i = n - 1; i >= 0; i--)
		json_array_append_new(a, json_string(ids[i]));
	return a;
}

static void assert_ids(json_t *got, json_t *want, const char *what)
{
	if (!json_equal(got, want)) {
		char *g_text = json_dumps(got, JSON_COMPACT), *w_text = json_dumps(want, JSON_COMPACT);
		fail_msg("%s: got %s, want %s", what, g_text, w_text);
	}
	json_decref(got);
}

static void assert_pages(const char *path, const char *name, json_t *want)
{
	static const int limits[] = {1, 2, 3, 1000};
	char what[256];

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		snprintf(what, sizeof(what), "%s in pages of %d", path, limits[i]);
		assert_ids(page_all(path, name, limits[i]), want, what);
	}
	json_decref(want);
}

static void test_queues_pipes_and_leases_page_newest_first(void **state)
{
	(void)state;
	char *queues[7], *pipes[5], *leases[4];

	for (int i = 0; i < 7; i++, pause_ms())
		queues[i] = http_create(&g, "/v1/queues", NULL);
	for (int i = 0; i < 5; i++, pause_ms())
		pipes[i] = http_create(&g, "/v1/pipes", i % 2 ? "{\"duplex\": true}" : "{\"duplex\": false}");
	for (int i = 0; i < 4; i++, pause_ms())
		leases[i] = http_create(&g, "/v1/leases", "{\"lease_s\": 600}");

	assert_pages("/v1/queues", "queues", newest_first(queues, 7));
	assert_pages("/v1/pipes", "pipes", newest_first(pipes, 5));
	assert_pages("/v1/leases", "leases", newest_first(leases, 4));

	/* A pipe is shown with its directions: two for a duplex one. */
	json_t *page = http_get_ok(&g, "/v1/pipes?limit=2");
	json_t *list = json_object_get(page, "pipes");
	assert_int_equal(json_array_size(json_object_get(json_array_get(list, 0), "directions")), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(list, 1), "directions")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "id")), pipes[3]);
	json_decref(page);

	/* Deleted: gone from the pages, the others as they were. */
	char path[256];
	snprintf(path, sizeof(path), "/v1/queues/%s", queues[3]);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	free(queues[3]);
	memmove(&queues[3], &queues[4], 3 * sizeof(queues[0]));
	assert_pages("/v1/queues", "queues", newest_first(queues, 6));

	/* A cursor whose item is gone still pages on from where it was. */
	page = http_get_ok(&g, "/v1/queues?limit=2");
	char cursor[128];
	snprintf(cursor, sizeof(cursor), "%s", json_string_value(json_object_get(page, "next_cursor")));
	json_decref(page);
	snprintf(path, sizeof(path), "/v1/queues/%s", queues[4]);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/queues?limit=2&cursor=%s", cursor);
	page = http_get_ok(&g, path);
	list = json_object_get(page, "queues");
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")), queues[3]);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "id")), queues[2]);
	json_decref(page);

	for (int i = 0; i < 6; i++)
		free(queues[i]);
	for (int i = 0; i < 5; i++)
		free(pipes[i]);
	for (int i = 0; i < 4; i++)
		free(leases[i]);
}

static void test_processes_and_rings_filter_by_state(void **state)
{
	(void)state;
	char *running[3], *ended[3], *all[6], *rings[2], path[128];
	int n = 0;

	for (int i = 0; i < 3; i++, pause_ms()) {
		all[n++] = running[i] = http_create(&g, "/v1/processes", "{\"command\": [\"sleep\", \"60\"]}");
		pause_ms();
		json_decref(process_run(&g, i == 2 ? "{\"command\": [\"false\"]}" : "{\"command\": [\"true\"]}",
		                        &ended[i]));
		all[n++] = ended[i];
	}
	assert_pages("/v1/processes", "processes", newest_first(all, 6));
	assert_pages("/v1/processes?state=running", "processes", newest_first(running, 3));
	/* "false" exits 1: still exited (failed is a process that could not run) */
	assert_pages("/v1/processes?state=exited,failed", "processes", newest_first(ended, 3));
	assert_pages("/v1/processes?state=failed", "processes", json_array());

	rings[0] = http_create(&g, "/v1/rings", "{\"size\": 2, \"command\": [\"true\"]}");
	pause_ms();
	rings[1] = http_create(&g, "/v1/rings", "{\"size\": 2, \"command\": [\"sleep\", \"60\"]}");
	for (int tries = 0;; tries++) { /* the first ends by itself */
		snprintf(path, sizeof(path), "/v1/rings/%s", rings[0]);
		json_t *r0 = http_get_ok(&g, path);
		int done = strcmp(json_string_value(json_object_get(r0, "state")), "done") == 0;
		json_decref(r0);
		if (done)
			break;
		assert_true(tries < 300);
		usleep(20000);
	}
	assert_pages("/v1/rings", "rings", newest_first(rings, 2));
	assert_pages("/v1/rings?state=running", "rings", newest_first(&rings[1], 1));
	assert_pages("/v1/rings?state=done", "rings", newest_first(&rings[0], 1));

	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/v1/processes/%s", running[i]);
		response r = http(&g, "DELETE", path, NULL, NULL);
		assert_int_equal(r.status, 200);
		response_free(&r);
	}
	snprintf(path, sizeof(path), "/v1/rings/%s", rings[1]);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	assert_pages("/v1/processes?state=running", "processes", json_array());
	for (int i = 0; i < 6; i++)
		free(all[i]);
	free(rings[0]);
	free(rings[1]);
}

static void test_pools_and_managers_apart(void **state)
{
	(void)state;
	char *pools[3], *managers[2], path[96];

	for (int i = 0; i < 3; i++, pause_ms())
		pools[i] = pool_create(&g, 1);
	for (int i = 0; i < 2; i++, pause_ms())
		managers[i] = http_create(&g, "/v1/managers", "{\"type\": \"dict\"}");
	snprintf(path, sizeof(path), "/v1/pools/%s", pools[1]);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);

	assert_pages("/v1/pools", "pools", newest_first(pools, 3));
	assert_pages("/v1/managers", "managers", newest_first(managers, 2));
	char *live[2] = {pools[0], pools[2]};
	assert_pages("/v1/pools?state=active,closed", "pools", newest_first(live, 2));
	assert_pages("/v1/pools?state=terminating,terminated", "pools", newest_first(&pools[1], 1));
	for (int i = 0; i < 3; i++)
		free(pools[i]);
	for (int i = 0; i < 2; i++)
		free(managers[i]);
}

/* The item the list shows is the item's own view (GET of its id): the
 * engine copies a page's items and the HTTP thread writes them, finding a
 * ring's members, a pipe's way back and what a lease holds its own way.
 * Compared again a few times where a worker's start moves a pool on
 * between the two requests. */
static void assert_listed_as_got(const char *list, const char *name, char **ids, int n)
{
	for (int i = 0; i < n; i++) {
		char path[128];
		int same = 0;
		snprintf(path, sizeof(path), "%s/%s", list, ids[i]);
		for (int tries = 0; !same; tries++) {
			json_t *page = http_get_ok(&g, list), *items = json_object_get(page, name), *it, *mine = NULL;
			json_t *got = http_get_ok(&g, path);
			size_t k;
			json_array_foreach (items, k, it)
				if (strcmp(json_string_value(json_object_get(it, "id")), ids[i]) == 0)
					mine = it;
			assert_non_null(mine);
			json_object_del(mine, "expires_in_ms"); /* a lease's: counts down between the two */
			json_object_del(got, "expires_in_ms");
			same = json_equal(mine, got);
			if (!same && tries == 50) {
				char *m = json_dumps(mine, JSON_COMPACT), *o = json_dumps(got, JSON_COMPACT);
				fail_msg("%s in %s: %s, its own view %s", ids[i], list, m, o);
			}
			json_decref(page);
			json_decref(got);
			if (!same)
				usleep(20000);
		}
	}
}

static void test_an_item_listed_is_its_own_view(void **state)
{
	(void)state;
	char body[256], *lease = http_create(&g, "/v1/leases", "{\"lease_s\": 600}"), *pools[2], *managers[1],
	                *procs[2], *rings[1], *queues[1], *pipes[2];

	snprintf(body, sizeof(body), "{\"processes\": 2, \"lease\": \"%s\"}", lease);
	pools[0] = pool_create_spec(&g, body);
	pools[1] = pool_create(&g, 1);
	snprintf(body, sizeof(body), "{\"type\": \"dict\", \"lease\": \"%s\"}", lease);
	managers[0] = http_create(&g, "/v1/managers", body);
	snprintf(body, sizeof(body), "{\"command\": [\"sleep\", \"60\"], \"lease\": \"%s\"}", lease);
	procs[0] = http_create(&g, "/v1/processes", body);
	json_decref(process_run(&g, "{\"command\": [\"false\"]}", &procs[1]));
	rings[0] = http_create(&g, "/v1/rings", "{\"size\": 3, \"command\": [\"sleep\", \"60\"]}");
	queues[0] = http_create(&g, "/v1/queues", NULL);
	pipes[0] = http_create(&g, "/v1/pipes", "{\"duplex\": true}");
	pipes[1] = http_create(&g, "/v1/pipes", "{\"duplex\": false}");
	char path[128];
	snprintf(path, sizeof(path), "/v1/queues/%s/items", queues[0]);
	response r = http(&g, "POST", path, "{\"items\": [1, 2]}", NULL);
	assert_int_equal(r.status, 201);
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/1/send", pipes[0]);
	r = http(&g, "POST", path, "{\"items\": [\"back\"]}", NULL);
	assert_int_equal(r.status, 201);
	response_free(&r);

	assert_listed_as_got("/v1/pools", "pools", pools, 2);
	assert_listed_as_got("/v1/managers", "managers", managers, 1);
	assert_listed_as_got("/v1/processes", "processes", procs, 2);
	assert_listed_as_got("/v1/rings", "rings", rings, 1);
	assert_listed_as_got("/v1/queues", "queues", queues, 1);
	assert_listed_as_got("/v1/pipes", "pipes", pipes, 2);
	assert_listed_as_got("/v1/leases", "leases", &lease, 1);

	/* what each holds, as the list shows it */
	json_t *page = http_get_ok(&g, "/v1/leases?limit=1"), *l = json_array_get(json_object_get(page, "leases"), 0);
	assert_string_equal(json_string_value(json_object_get(l, "id")), lease);
	assert_string_equal(json_string_value(json_array_get(json_object_get(l, "pools"), 0)), pools[0]);
	assert_int_equal(json_array_size(json_object_get(l, "pools")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(l, "managers"), 0)), managers[0]);
	assert_string_equal(json_string_value(json_array_get(json_object_get(l, "processes"), 0)), procs[0]);
	assert_int_equal(json_array_size(json_object_get(l, "processes")), 1);
	json_decref(page);
	page = http_get_ok(&g, "/v1/pipes?limit=2");
	json_t *dirs = json_object_get(json_array_get(json_object_get(page, "pipes"), 1), "directions");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(dirs, 1), "size")), 1);
	json_decref(page);
	page = http_get_ok(&g, "/v1/rings?limit=1");
	json_t *members = json_object_get(json_array_get(json_object_get(page, "rings"), 0), "members");
	assert_int_equal(json_array_size(members), 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(members, i), "state")), "running");
	json_decref(page);

	snprintf(path, sizeof(path), "/v1/leases/%s", lease);
	r = http(&g, "DELETE", path, NULL, NULL); /* ends what it holds */
	assert_int_equal(r.status, 200);
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/rings/%s", rings[0]);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	free(lease);
	free(pools[0]);
	free(pools[1]);
	free(managers[0]);
	free(procs[0]);
	free(procs[1]);
	free(rings[0]);
	free(queues[0]);
	free(pipes[0]);
	free(pipes[1]);
}

/* A pool's jobs are paged as every job is, newest first. */
static void test_a_pools_jobs_paged(void **state)
{
	(void)state;
	char *pool = pool_create(&g, 1), *jobs[5], path[160];

	for (int i = 0; i < 5; i++)
		jobs[i] = job_submit(&g, pool, json_pack("{s:s, s:[iii]}", "function", "noop", "args", 1, 2, 3));
	snprintf(path, sizeof(path), "/v1/pools/%s/jobs", pool);
	assert_pages(path, "jobs", newest_first(jobs, 5));
	snprintf(path, sizeof(path), "/v1/jobs?pool=%s", pool);
	assert_pages(path, "jobs", newest_first(jobs, 5));
	expect_problem(&g, "GET", "/v1/pools/p-nosuchpool/jobs", NULL, 404, "no such pool");
	expect_problem(&g, "GET", "/v1/pools/p-0123456789012345678901234567890123456789abcdef/jobs", NULL, 404,
	               "no such pool");
	expect_problem(&g, "GET", "/v1/jobs?pool=p-0123456789012345678901234567890123456789", NULL, 400,
	               "query 'pool' must be a pool's id");
	snprintf(path, sizeof(path), "/v1/pools/%s/jobs?limit=0", pool);
	expect_problem(&g, "GET", path, NULL, 400, "'limit' must be an integer from 1 to 1000");
	for (int i = 0; i < 5; i++)
		free(jobs[i]);
	free(pool);
}

static void test_bad_queries_refused(void **state)
{
	(void)state;
	expect_problem(&g, "GET", "/v1/pools?state=running", NULL, 400,
	               "query 'state' must be one or more of active, closed, terminating, terminated, failed");
	expect_problem(&g, "GET", "/v1/processes?state=running,", NULL, 400, "query 'state' must be one or more of");
	expect_problem(&g, "GET", "/v1/queues?state=active", NULL, 400, "queues have no state to filter by");
	expect_problem(&g, "GET", "/v1/leases?state=active", NULL, 400, "leases have no state to filter by");
	expect_problem(&g, "GET", "/v1/pools?limit=0", NULL, 400,
	               "query parameter 'limit' must be an integer from 1 to 1000");
	expect_problem(&g, "GET", "/v1/rings?limit=1001", NULL, 400, "'limit' must be an integer from 1 to 1000");
	static const char *const cursors[] = {
	        "12", "x.1", "-5.1", "5.", "5.-1", "5.1x", "5.1%00", "0.1", "5.99999999999999999999", "%205.1"};
	for (size_t i = 0; i < sizeof(cursors) / sizeof(cursors[0]); i++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/queues?cursor=%s", cursors[i]);
		expect_problem(&g, "GET", path, NULL, 400, "query 'cursor' must be a next_cursor this list gave");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_queues_pipes_and_leases_page_newest_first),
	        cmocka_unit_test(test_processes_and_rings_filter_by_state),
	        cmocka_unit_test(test_pools_and_managers_apart),
	        cmocka_unit_test(test_an_item_listed_is_its_own_view),
	        cmocka_unit_test(test_a_pools_jobs_paged),
	        cmocka_unit_test(test_bad_queries_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
