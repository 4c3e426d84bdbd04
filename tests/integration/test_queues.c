/*
 * SimpleQueue and Pipe over REST, on a real gateway: FIFO from one writer,
 * four readers sharing a queue fairly with every item delivered to exactly
 * one of them, long polling, a duplex pipe both ways and a simplex one one
 * way, items surviving a gateway SIGKILL, items held under a client's
 * lease, a queue dealing its items to its readers in turn, and bad
 * requests refused.
 */
#include <pthread.h>
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

static char *queue_new(void)
{
	response r = http(&g, "POST", "/v1/queues", NULL, NULL);
	char *id;

	assert_int_equal(r.status, 201);
	assert_non_null(strstr(r.location, "/v1/queues/q-"));
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

static void put(const char *path, json_t *body)
{
	response r = http_json(&g, "POST", path, body);

	if (r.status != 201)
		fail_msg("put %s: %ld %s", path, r.status, r.body);
	response_free(&r);
}

/* Pops from path (a queue's take or a pipe end's recv); returns the items
 * array (new reference). */
static json_t *take(const char *path)
{
	response r = http(&g, "POST", path, NULL, NULL);
	json_t *items;

	if (r.status != 200)
		fail_msg("get %s: %ld %s", path, r.status, r.body);
	items = json_incref(json_object_get(r.json, "items"));
	response_free(&r);
	return items;
}

static void test_fifo_from_one_writer(void **state)
{
	char *q = queue_new();
	char path[160], take_path[160];
	int next = 0;

	(void)state;
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	snprintf(take_path, sizeof(take_path), "/v1/queues/%s/take", q);
	/* Singles and batches, interleaved. */
	for (int i = 0; i < 1000;) {
		if (i % 3 == 0) {
			put(path, json_pack("{s:i}", "item", i));
			i++;
		} else {
			json_t *batch = json_array();
			for (int k = 0; k < 50 && i < 1000; k++)
				json_array_append_new(batch, json_integer(i++));
			put(path, json_pack("{s:o}", "items", batch));
		}
	}
	while (next < 1000) {
		char get[200];
		snprintf(get, sizeof(get), "%s?max=%d", take_path, 1 + next % 97);
		json_t *items = take(get);
		json_t *v;
		size_t k;
		assert_true(json_array_size(items) > 0);
		json_array_foreach (items, k, v)
			assert_int_equal(json_integer_value(v), next++);
		json_decref(items);
	}
	json_t *rest = take(take_path);
	assert_int_equal(json_array_size(rest), 0);
	json_decref(rest);
	free(q);
}

#define READERS 4
#define ITEMS 400

typedef struct reader {
	char path[200];
	int got[ITEMS];
	int n;
	int http_errors;
} reader;

static void *read_loop(void *arg)
{
	reader *r = arg;
	time_t deadline = time(NULL) + 60;

	while (time(NULL) < deadline) {
		response res = http(&g, "POST", r->path, NULL, NULL);
		json_t *items = json_object_get(res.json, "items");
		json_t *v;
		size_t k;
		if (res.status != 200) {
			r->http_errors++;
			response_free(&res);
			break;
		}
		json_array_foreach (items, k, v) {
			int x = (int)json_integer_value(v);
			if (x < 0) { /* the end marker, one per reader */
				response_free(&res);
				return NULL;
			}
			if (r->n < ITEMS)
				r->got[r->n++] = x;
		}
		response_free(&res);
	}
	return NULL;
}

static void test_four_readers_share_fairly(void **state)
{
	char *q = queue_new();
	char path[160];
	reader readers[READERS];
	pthread_t threads[READERS];
	int seen[ITEMS] = {0};

	(void)state;
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	for (int i = 0; i < READERS; i++) {
		memset(&readers[i], 0, sizeof(readers[i]));
		snprintf(readers[i].path, sizeof(readers[i].path), "/v1/queues/%s/take?wait=10", q);
		pthread_create(&threads[i], NULL, read_loop, &readers[i]);
	}
	queue_wait_readers(&g, q, READERS); /* all four waiting before the first item */
	for (int i = 0; i < ITEMS; i++) {
		put(path, json_pack("{s:i}", "item", i));
		if (i % 40 == 0)
			usleep(10000);
	}
	for (int i = 0; i < READERS; i++)
		put(path, json_pack("{s:i}", "item", -1));
	for (int i = 0; i < READERS; i++)
		pthread_join(threads[i], NULL);
	int total = 0;
	for (int i = 0; i < READERS; i++) {
		assert_int_equal(readers[i].http_errors, 0);
		print_message("reader %d got %d items\n", i, readers[i].n);
		/* Fair: waiting readers are served in turn, so nobody starves. */
		assert_true(readers[i].n >= ITEMS / READERS / 2);
		for (int k = 0; k < readers[i].n; k++) {
			int x = readers[i].got[k];
			assert_true(x >= 0 && x < ITEMS);
			assert_int_equal(seen[x], 0); /* to exactly one reader */
			seen[x] = 1;
			/* each reader sees its items in the writer's order */
			if (k > 0)
				assert_true(readers[i].got[k - 1] < x);
		}
		total += readers[i].n;
	}
	assert_int_equal(total, ITEMS);
	free(q);
}

static void test_long_poll(void **state)
{
	char *q = queue_new();
	char path[160], wait_path[200];

	(void)state;
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	snprintf(wait_path, sizeof(wait_path), "/v1/queues/%s/take?wait=1", q);
	/* Nothing comes: an empty answer once the wait is over. */
	json_t *items = take(wait_path);
	assert_int_equal(json_array_size(items), 0);
	json_decref(items);
	/* An item already there comes at once, whatever the wait. */
	put(path, json_pack("{s:s}", "item", "here"));
	snprintf(wait_path, sizeof(wait_path), "/v1/queues/%s/take?wait=30", q);
	items = take(wait_path);
	assert_string_equal(json_string_value(json_array_get(items, 0)), "here");
	json_decref(items);
	free(q);
}

static char *lease_new(void);
static void take_held(const char *path, char *items_out, size_t items_len, char *hold_out, size_t hold_len);

static void test_pipes(void **state)
{
	response r;
	char base[128], path[200];

	(void)state;
	r = http(&g, "POST", "/v1/pipes", "{\"duplex\":true}", NULL);
	assert_int_equal(r.status, 201);
	snprintf(base, sizeof(base), "/v1/pipes/%s/ends", json_string_value(json_object_get(r.json, "id")));
	assert_int_equal(json_array_size(json_object_get(r.json, "ends")), 2);
	response_free(&r);
	/* Both ways, each end reading what the other sent. */
	snprintf(path, sizeof(path), "%s/0/send", base);
	put(path, json_pack("{s:[s,s]}", "items", "a1", "a2"));
	snprintf(path, sizeof(path), "%s/1/send", base);
	put(path, json_pack("{s:{s:i}}", "item", "b", 1));
	snprintf(path, sizeof(path), "%s/1/recv?max=5&wait=5", base);
	json_t *items = take(path);
	assert_int_equal(json_array_size(items), 2);
	assert_string_equal(json_string_value(json_array_get(items, 1)), "a2");
	json_decref(items);
	snprintf(path, sizeof(path), "%s/0/recv?wait=5", base);
	items = take(path);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "b")), 1);
	json_decref(items);
	/* Nothing echoes back to the sender. */
	snprintf(path, sizeof(path), "%s/0/recv", base);
	items = take(path);
	assert_int_equal(json_array_size(items), 0);
	json_decref(items);

	/* Simplex: end 0 sends, end 1 receives, not the other way. */
	r = http(&g, "POST", "/v1/pipes", "{\"duplex\":false}", NULL);
	snprintf(base, sizeof(base), "/v1/pipes/%s/ends", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "%s/0/send", base);
	put(path, json_pack("{s:i}", "item", 42));
	snprintf(path, sizeof(path), "%s/1/recv?wait=5", base);
	items = take(path);
	assert_int_equal(json_integer_value(json_array_get(items, 0)), 42);
	json_decref(items);
	snprintf(path, sizeof(path), "%s/1/send", base);
	r = http(&g, "POST", path, "{\"item\":1}", NULL);
	assert_int_equal(r.status, 409);
	response_free(&r);
	snprintf(path, sizeof(path), "%s/0/recv", base);
	r = http(&g, "POST", path, NULL, NULL);
	assert_int_equal(r.status, 409);
	response_free(&r);

	/* A receiving end takes ahead under a lease as a queue's reader does:
	 * released there, the unused item comes again. */
	char *lease = lease_new(), got[64], hold[48];
	snprintf(path, sizeof(path), "%s/0/send", base);
	put(path, json_pack("{s:[i,i]}", "items", 5, 6));
	snprintf(path, sizeof(path), "%s/1/recv?max=5&lease=%s", base, lease);
	take_held(path, got, sizeof(got), hold, sizeof(hold));
	assert_string_equal(got, "5 6");
	snprintf(path, sizeof(path), "%s/1/holds/%s?used=1", base, hold);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	snprintf(path, sizeof(path), "%s/1/recv?max=5", base);
	items = take(path);
	assert_int_equal(json_array_size(items), 1);
	assert_int_equal(json_integer_value(json_array_get(items, 0)), 6);
	json_decref(items);
	free(lease);
}

static void test_items_survive_a_gateway_kill(void **state)
{
	char *q = queue_new();
	char path[160];

	(void)state;
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	put(path, json_pack("{s:[i,i,i]}", "items", 7, 8, 9));
	snprintf(path, sizeof(path), "/v1/queues/%s/take", q);
	json_t *first = take(path);
	assert_int_equal(json_integer_value(json_array_get(first, 0)), 7);
	json_decref(first);
	gateway_kill(&g);
	gateway_restart(&g);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10", q);
	json_t *items = take(path);
	assert_int_equal(json_array_size(items), 2); /* 7 was taken and acknowledged */
	assert_int_equal(json_integer_value(json_array_get(items, 0)), 8);
	assert_int_equal(json_integer_value(json_array_get(items, 1)), 9);
	json_decref(items);
	free(q);
}

static char *lease_new(void)
{
	response r = http(&g, "POST", "/v1/leases", "{\"lease_s\":60}", NULL);
	char *id;

	assert_int_equal(r.status, 201);
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

/* A take under a lease's hold: its items (as "1 2 3") and the hold. */
static void take_held(const char *path, char *items_out, size_t items_len, char *hold_out, size_t hold_len)
{
	response r = http(&g, "POST", path, NULL, NULL);
	json_t *v;
	size_t k;

	if (r.status != 200)
		fail_msg("take %s: %ld %s", path, r.status, r.body);
	items_out[0] = '\0';
	json_array_foreach (json_object_get(r.json, "items"), k, v) {
		size_t at = strlen(items_out);
		snprintf(items_out + at, items_len - at, "%s%lld", at ? " " : "", (long long)json_integer_value(v));
	}
	snprintf(hold_out, hold_len, "%s", json_string_value(json_object_get(r.json, "hold")) ?: "");
	response_free(&r);
}

static void expect_counts(const char *q, int size, int held)
{
	char path[160];
	response r;

	snprintf(path, sizeof(path), "/v1/queues/%s", q);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	if (json_integer_value(json_object_get(r.json, "size")) != size ||
	    json_integer_value(json_object_get(r.json, "held")) != held)
		fail_msg("queue %s: %s, expected size %d, held %d", q, r.body, size, held);
	response_free(&r);
}

typedef struct waiting_take {
	char path[200];
	char items[64], hold[48];
} waiting_take;

static void *take_in_thread(void *arg)
{
	waiting_take *w = arg;

	take_held(w->path, w->items, sizeof(w->items), w->hold, sizeof(w->hold));
	return NULL;
}

/* Items taken under a client's lease are held, not removed: out of every
 * other take, kept across a gateway kill, gone once the client says it
 * used them, and back at the head, in order, when it gives them back or
 * its lease ends. A reader taking ahead gets one item while another waits. */
static void test_holds(void **state)
{
	char *q = queue_new(), *lease = lease_new(), *other = lease_new();
	char path[300], items[64], hold[48], hold2[48];
	response r;

	(void)state;
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	put(path, json_pack("{s:[i,i,i,i,i,i]}", "items", 1, 2, 3, 4, 5, 6));
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=4&lease=%s", q, lease);
	take_held(path, items, sizeof(items), hold, sizeof(hold));
	assert_string_equal(items, "1 2 3 4");
	assert_true(strncmp(hold, lease, strlen(lease)) == 0 && hold[strlen(lease)] == '.');
	expect_counts(q, 2, 4);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10", q);
	json_t *rest = take(path);
	assert_int_equal(json_array_size(rest), 2); /* 5 and 6: the held are not given twice */
	assert_int_equal(json_integer_value(json_array_get(rest, 0)), 5);
	json_decref(rest);

	/* One used: 2, 3 and 4 are the head again. */
	snprintf(path, sizeof(path), "/v1/queues/%s/holds/%s?used=1", q, hold);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "used")), 1);
	assert_int_equal(json_integer_value(json_object_get(r.json, "returned")), 3);
	response_free(&r);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 404); /* released already */
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=2&lease=%s", q, lease);
	take_held(path, items, sizeof(items), hold, sizeof(hold));
	assert_string_equal(items, "2 3");
	/* Used up, said with the next take. */
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10&lease=%s&used=%s", q, lease, hold);
	take_held(path, items, sizeof(items), hold2, sizeof(hold2));
	assert_string_equal(items, "4");
	expect_counts(q, 0, 1);

	/* Held across a kill: the lease outlives its gateway's restart. */
	gateway_kill(&g);
	gateway_restart(&g);
	expect_counts(q, 0, 1);
	/* Another lease's hold is not this one's to release. */
	snprintf(path, sizeof(path), "/v1/queues/%s/take?lease=%s&used=%s", q, other, hold2);
	r = http(&g, "POST", path, NULL, NULL);
	assert_int_equal(r.status, 400);
	response_free(&r);
	/* The lease ends: 4 is back. */
	snprintf(path, sizeof(path), "/v1/leases/%s", lease);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	expect_counts(q, 1, 0);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10&lease=%s", q, lease);
	r = http(&g, "POST", path, NULL, NULL);
	assert_int_equal(r.status, 404); /* an ended lease takes nothing */
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10&lease=%s", q, other);
	take_held(path, items, sizeof(items), hold, sizeof(hold));
	assert_string_equal(items, "4");

	/* A reader taking ahead waits first, a plain one behind it: three items
	 * come at once, and the first gets one of them, not all. */
	waiting_take ahead = {0}, behind = {0};
	pthread_t t1, t2;
	snprintf(ahead.path, sizeof(ahead.path), "/v1/queues/%s/take?max=10&wait=20&lease=%s&used=%s", q, other, hold);
	snprintf(behind.path, sizeof(behind.path), "/v1/queues/%s/take?max=10&wait=20", q);
	pthread_create(&t1, NULL, take_in_thread, &ahead);
	queue_wait_readers(&g, q, 1);
	pthread_create(&t2, NULL, take_in_thread, &behind);
	queue_wait_readers(&g, q, 2);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	put(path, json_pack("{s:[i,i,i]}", "items", 7, 8, 9));
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	assert_string_equal(ahead.items, "7");
	assert_string_equal(behind.items, "8 9");
	assert_string_equal(behind.hold, ""); /* taken without a lease: removed */
	expect_counts(q, 0, 1);
	free(q);
	free(lease);
	free(other);
}

static void test_bad_requests(void **state)
{
	char *q = queue_new();
	char path[160];
	struct {
		const char *method, *path, *body;
		long status;
	} cases[] = {
	        {"POST", "/items", "{}", 400},
	        {"POST", "/items", "{\"item\":1,\"items\":[2]}", 400},
	        {"POST", "/items", "{\"items\":3}", 400},
	        {"POST", "/items", "{\"itme\":3}", 400},
	        {"POST", "/take?max=0", NULL, 400},
	        {"POST", "/take?wait=-1", NULL, 400},
	        {"POST", "/take?used=l-1.h-2", NULL, 400}, /* a hold without its lease */
	        {"POST", "/take?lease=l%2F..%2Fx", NULL, 400}, /* not an id */
	        {"POST", "/take?lease=l-0000000000000000", NULL, 404}, /* no such lease */
	        {"DELETE", "/holds/l-1.h-2?used=1", NULL, 404},
	        {"DELETE", "/holds/l-1.h-2", NULL, 400}, /* used is required */
	        {"DELETE", "/holds/l-1.h-2?used=-1", NULL, 400},
	        {"PUT", "/items", "{}", 405},
	        /* Taking changes the queue: never a GET (a link, a cookie alone). */
	        {"GET", "/items", NULL, 405},
	        {"GET", "/take", NULL, 405},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "/v1/queues/%s%s", q, cases[i].path);
		response r = http(&g, cases[i].method, path, cases[i].body, NULL);
		if (r.status != cases[i].status)
			fail_msg("%s %s: %ld, expected %ld", cases[i].method, path, r.status, cases[i].status);
		assert_string_equal(r.content_type, "application/problem+json");
		response_free(&r);
	}
	response r = http(&g, "POST", "/v1/queues/q-0000000000000000/take", NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	r = http(&g, "POST", "/v1/pipes/x-0000000000000000/ends/0/send", "{\"item\":1}", NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	/* Deleted: gone, items and all. */
	snprintf(path, sizeof(path), "/v1/queues/%s", q);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);
	free(q);
}

/* GET /v1/queues and GET /v1/pipes list exactly what exists, newest
 * first; a pipe with its directions, a queue with its size. */
static void test_queues_and_pipes_listed(void **state)
{
	(void)state;
	char *a = queue_new(), *b = queue_new(), path[128];
	snprintf(path, sizeof(path), "/v1/queues/%s/items", b);
	put(path, json_pack("{s:[i,i]}", "items", 1, 2));
	response r = http(&g, "POST", "/v1/pipes", "{\"duplex\":true}", NULL);
	assert_int_equal(r.status, 201);
	char *duplex = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	r = http(&g, "POST", "/v1/pipes", "{\"duplex\":false}", NULL);
	assert_int_equal(r.status, 201);
	char *simplex = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);

	json_t *list = http_get_ok(&g, "/v1/queues"), *queues = json_object_get(list, "queues");
	size_t n = json_array_size(queues);
	assert_true(n >= 2);
	/* This test's two, newest first, ahead of those other tests made. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(queues, 0), "id")), b);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(queues, 0), "size")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(queues, 1), "id")), a);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(queues, i), "kind")), "queue");
	json_decref(list);

	list = http_get_ok(&g, "/v1/pipes");
	json_t *pipes = json_object_get(list, "pipes"), *first = json_array_get(pipes, 0),
	       *second = json_array_get(pipes, 1);
	assert_string_equal(json_string_value(json_object_get(first, "id")), simplex);
	assert_false(json_is_true(json_object_get(first, "duplex")));
	assert_int_equal(json_array_size(json_object_get(first, "directions")), 1);
	assert_string_equal(json_string_value(json_object_get(second, "id")), duplex);
	assert_true(json_is_true(json_object_get(second, "duplex")));
	json_t *dirs = json_object_get(second, "directions");
	assert_int_equal(json_array_size(dirs), 2);
	char want[64];
	snprintf(want, sizeof(want), "%s.1", duplex);
	assert_string_equal(json_string_value(json_object_get(json_array_get(dirs, 1), "id")), want);
	json_decref(list);

	r = http(&g, "PUT", "/v1/queues", NULL, NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "use GET or POST on /v1/queues");
	response_free(&r);
	free(a);
	free(b);
	free(duplex);
	free(simplex);
}

/* How many items a take under lease gives (it releases the lease's last
 * hold, *hold, all used, and keeps the new one there). */
static int take_share(const char *q, const char *lease, int wait_s, char hold[48])
{
	char path[240], items[16384];

	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=10000&wait=%d&lease=%s%s%s", q, wait_s, lease,
	         hold[0] ? "&used=" : "", hold);
	take_held(path, items, sizeof(items), hold, 48);
	int n = 0;
	for (const char *c = items; *c; c++)
		n += c == items || c[-1] == ' ';
	return n;
}

/* A queue of kind "turns" deals its items to its readers in turn, as
 * Fiber's SimpleQueuePush: with four readers, 2,400 items give each 600
 * whatever each asks for, a reader whose share is taken gets nothing of
 * the others', and an ended reader's share goes to the rest. */
static void test_turns_deal_each_reader_its_share(void **state)
{
	char *lease[4], hold[4][48] = {"", "", "", ""}, path[160];
	response r = http(&g, "POST", "/v1/queues", "{\"kind\": \"turns\"}", NULL);

	(void)state;
	assert_int_equal(r.status, 201);
	assert_string_equal(json_string_value(json_object_get(r.json, "kind")), "turns");
	char *q = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	/* A reader is whoever asked. */
	for (int i = 0; i < 4; i++) {
		lease[i] = lease_new();
		assert_int_equal(take_share(q, lease[i], 0, hold[i]), 0);
	}
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	for (int i = 0; i < 2400;) {
		json_t *batch = json_array();
		for (int k = 0; k < 100; k++)
			json_array_append_new(batch, json_integer(i++));
		put(path, json_pack("{s:o}", "items", batch));
	}
	assert_int_equal(take_share(q, lease[0], 0, hold[0]), 600);
	assert_int_equal(take_share(q, lease[2], 0, hold[2]), 600);
	/* 1,200 items wait, none of them reader 2's. */
	expect_counts(q, 1200, 1200);
	assert_int_equal(take_share(q, lease[2], 1, hold[2]), 0);
	assert_int_equal(take_share(q, lease[1], 0, hold[1]), 600);
	/* Reader 3 ends: its 600 go to the other three, 200 each. */
	snprintf(path, sizeof(path), "/v1/leases/%s", lease[3]);
	r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	for (int i = 0; i < 3; i++)
		assert_int_equal(take_share(q, lease[i], 0, hold[i]), 200);
	expect_counts(q, 0, 600);

	/* Its kind survives a restart; what was dealt before is anyone's then
	 * (the shares are memory only), so the first to ask takes it all. */
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	put(path, json_pack("{s:[i,i,i]}", "items", 1, 2, 3));
	gateway_kill(&g);
	gateway_restart(&g);
	snprintf(path, sizeof(path), "/v1/queues/%s", q);
	r = http(&g, "GET", path, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(r.json, "kind")), "turns");
	response_free(&r);
	assert_int_equal(take_share(q, lease[1], 0, hold[1]), 3);

	r = http(&g, "POST", "/v1/queues", "{\"kind\": \"push\"}", NULL);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "field 'kind' must be \"queue\" (each item to the reader that asks first) or \"turns\" "
	                    "(items dealt to the readers in turn)");
	response_free(&r);
	for (int i = 0; i < 4; i++)
		free(lease[i]);
	free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fifo_from_one_writer),
	        cmocka_unit_test(test_queues_and_pipes_listed),
	        cmocka_unit_test(test_four_readers_share_fairly),
	        cmocka_unit_test(test_long_poll),
	        cmocka_unit_test(test_pipes),
	        cmocka_unit_test(test_items_survive_a_gateway_kill),
	        cmocka_unit_test(test_holds),
	        cmocka_unit_test(test_turns_deal_each_reader_its_share),
	        cmocka_unit_test(test_bad_requests),
	};
	return cmocka_run_group_tests_name("queues", tests, setup, teardown);
}
