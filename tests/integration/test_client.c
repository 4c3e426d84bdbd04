/*
 * libstrand against a real gateway, each multiprocessing shape once: Pool
 * (map + imap, map into an array, apply, apply_async and its get, close +
 * join), job cancel, Process (start, join, terminate), SimpleQueue (put,
 * get), Pipe (send, recv) and AsyncManager (call, get), and a client's hold
 * on what it makes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client.h"
#include "tests/support/harness.h"

static gateway g;
static strand_client *c;

static int setup(void **state)
{
	(void)state;
	gateway_start(&g, NULL);
	c = strand_client_new(g.base);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	strand_client_free(c);
	gateway_cleanup(&g);
	return 0;
}

static int sum_values(void *ctx, json_int_t index, int ok, json_t *value)
{
	(void)index;
	*(json_int_t *)ctx += ok ? json_integer_value(value) : 1000000;
	return 0;
}

static void test_pool(void **state)
{
	char pool[32], job[32];
	json_t *args = json_pack("[i,i,i,i]", 1, 2, 3, 4), *r = NULL;
	json_int_t sum = 0;

	(void)state;
	assert_int_equal(strand_pool_create(c, 2, NULL, pool), 0);
	assert_int_equal(strand_map(c, pool, "echo", args, 1, job), 0);
	assert_int_equal(strand_imap(c, job, 0, 100, sum_values, &sum), 0);
	assert_int_equal(sum, 10);
	json_t *x = json_pack("{s:i}", "x", 5), *bad = json_string("bad"), *ms = json_integer(50);
	assert_int_equal(strand_apply(c, pool, "echo", x, 30, &r), 0);
	assert_int_equal(json_integer_value(json_object_get(r, "x")), 5);
	json_decref(r);
	assert_int_equal(strand_apply(c, pool, "fail", bad, 30, &r), -1);
	assert_non_null(strstr(strand_client_error(c), "bad"));
	assert_int_equal(strand_apply_async(c, pool, "sleep", ms, job), 0);
	json_decref(x);
	json_decref(bad);
	json_decref(ms);
	sum = 0;
	assert_int_equal(strand_imap(c, job, 1, 10, sum_values, &sum), 0);
	assert_int_equal(sum, 50);
	assert_int_equal(strand_pool_close(c, pool), 0);
	assert_int_equal(strand_pool_join(c, pool, 30), 0);
	json_decref(args);
}

typedef struct in_order {
	json_int_t next; /* the index expected next */
	int wrong;
} in_order;

static int check_in_order(void *ctx, json_int_t index, int ok, json_t *value)
{
	in_order *o = ctx;

	o->wrong += index != o->next || !ok || json_integer_value(value) != index * 3;
	o->next++;
	return 0;
}

/* A map larger than one request goes in parts (100,000 arguments each):
 * strand_map returns once all are in, and each index comes once, in order,
 * with its own argument's result. */
static void test_large_map_in_parts(void **state)
{
	const int n = 250001;
	char pool[32], job[32], path[64];
	json_t *args = json_array(), *view = NULL;
	in_order seen = {0};

	(void)state;
	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_integer((json_int_t)i * 3));
	assert_int_equal(strand_pool_create(c, 2, NULL, pool), 0);
	assert_int_equal(strand_map(c, pool, "echo", args, 1, job), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	assert_int_equal(strand_request(c, "GET", path, NULL, &view), 200);
	assert_int_equal(json_integer_value(json_object_get(view, "total")), n);
	assert_string_not_equal(json_string_value(json_object_get(view, "state")), "submitting");
	json_decref(view);
	assert_int_equal(strand_imap(c, job, 0, 100000, check_in_order, &seen), 0);
	assert_int_equal(seen.next, n);
	assert_int_equal(seen.wrong, 0);
	assert_int_equal(strand_pool_terminate(c, pool), 0);
	json_decref(args);
}

static int count_ok(void *ctx, json_int_t index, int ok, json_t *value)
{
	(void)index;
	(void)value;
	((int *)ctx)[ok != 0]++;
	return 0;
}

/* A part whose body would be over the gateway's cap (64 MiB) is refused
 * 413 and goes again as halves: 80 arguments of 900 KB each. */
static void test_part_over_the_body_cap_halved(void **state)
{
	const int n = 80;
	const size_t len = 900000;
	char pool[32], job[32];
	char *text = malloc(len + 1);
	json_t *args = json_array();
	int counts[2] = {0, 0}; /* failed, ok */

	(void)state;
	memset(text, 'x', len);
	text[len] = '\0';
	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_string(text));
	free(text);
	assert_int_equal(strand_pool_create(c, 2, NULL, pool), 0);
	assert_int_equal(strand_map(c, pool, "noop", args, 1, job), 0);
	json_decref(args);
	assert_int_equal(strand_imap(c, job, 1, 1000, count_ok, counts), 0);
	assert_int_equal(counts[1], n);
	assert_int_equal(counts[0], 0);
	assert_int_equal(strand_pool_terminate(c, pool), 0);
}

static void test_process(void **state)
{
	char *const ok[] = {"sh", "-c", "exit 4", NULL};
	char *const slow[] = {"sleep", "60", NULL};
	char id[32];
	int code = 0;

	(void)state;
	assert_int_equal(strand_process_start(c, ok, NULL, NULL, NULL, id), 0);
	assert_int_equal(strand_process_join(c, id, 30, &code), 0);
	assert_int_equal(code, 4);
	json_t *arg = json_integer(1000);
	assert_int_equal(strand_process_start(c, NULL, "pi", arg, NULL, id), 0);
	json_decref(arg);
	assert_int_equal(strand_process_join(c, id, 30, &code), 0);
	assert_int_equal(code, 0);
	assert_int_equal(strand_process_start(c, slow, NULL, NULL, NULL, id), 0);
	assert_int_equal(strand_process_join(c, id, 0, &code), -1); /* still running */
	assert_int_equal(strand_process_terminate(c, id), 0);
	assert_int_equal(strand_process_join(c, id, 5, &code), 0);
	assert_int_equal(code, 143);
}

static void test_queue_and_manager(void **state)
{
	char q[32], m[32], call[32];
	json_t *item = NULL, *r = NULL;

	(void)state;
	assert_int_equal(strand_queue_create(c, q), 0);
	json_t *v = json_pack("{s:s}", "k", "v");
	assert_int_equal(strand_queue_put(c, q, v), 0);
	json_decref(v);
	assert_int_equal(strand_queue_get(c, q, 5, &item), 0);
	assert_string_equal(json_string_value(json_object_get(item, "k")), "v");
	json_decref(item);
	assert_int_equal(strand_queue_get(c, q, 0, &item), -1); /* empty */

	assert_int_equal(strand_manager_create(c, "counter", NULL, m), 0);
	json_t *a = json_pack("[i]", 7);
	assert_int_equal(strand_manager_call(c, m, "add", a, call), 0);
	json_decref(a);
	assert_int_equal(strand_manager_get(c, m, call, 30, &r), 0);
	assert_int_equal(json_integer_value(r), 7);
	json_decref(r);
	assert_int_equal(strand_manager_call(c, m, "nosuch", NULL, call), 0);
	assert_int_equal(strand_manager_get(c, m, call, 30, &r), -1);
	assert_non_null(strstr(strand_client_error(c), "no method"));
	/* The same in one request each. */
	a = json_pack("[i]", 5);
	assert_int_equal(strand_manager_call_wait(c, m, "add", a, 30, &r), 0);
	json_decref(a);
	assert_int_equal(json_integer_value(r), 12);
	json_decref(r);
	assert_int_equal(strand_manager_call_wait(c, m, "nosuch", NULL, 30, &r), -1);
	assert_non_null(strstr(strand_client_error(c), "no method"));
	assert_int_equal(strand_manager_shutdown(c, m), 0);
	char s[32];
	assert_int_equal(strand_manager_create(c, "sleeper", NULL, s), 0);
	a = json_pack("[i]", 2500);
	assert_int_equal(strand_manager_call_wait(c, s, "sleep", a, 1, &r), -1);
	json_decref(a);
	assert_non_null(strstr(strand_client_error(c), ": no result after 1 s (it goes on)"));
	assert_int_equal(strand_manager_shutdown(c, s), 0);
}

/* map() into an array, in input order; the first failure by index is the
 * error; chunksize 0 is multiprocessing's: four chunks per worker. */
static void test_map_values(void **state)
{
	char pool[32], job[32], path[64];
	json_t *args = json_array(), *values = NULL, *view = NULL;

	(void)state;
	assert_int_equal(strand_pool_create(c, 2, NULL, pool), 0);
	for (int i = 0; i < 50; i++)
		json_array_append_new(args, json_integer(i * 3));
	assert_int_equal(strand_map_values(c, pool, "echo", args, 0, &values), 0);
	assert_int_equal(json_array_size(values), 50);
	for (int i = 0; i < 50; i++)
		assert_int_equal(json_integer_value(json_array_get(values, (size_t)i)), i * 3);
	json_decref(values);
	/* 50 arguments, 2 workers: chunks of ceil(50 / 8) = 7. */
	assert_int_equal(strand_map(c, pool, "echo", args, 0, job), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	assert_int_equal(strand_request(c, "GET", path, NULL, &view), 200);
	assert_int_equal(json_integer_value(json_object_get(view, "chunksize")), 7);
	json_decref(view);
	json_decref(args);

	args = json_pack("[s,s,s]", "first", "second", "third");
	values = NULL;
	assert_int_equal(strand_map_values(c, pool, "fail", args, 1, &values), -1);
	assert_null(values);
	assert_string_equal(strand_client_error(c), "task 0 failed: first");
	json_decref(args);
	assert_int_equal(strand_pool_terminate(c, pool), 0);
}

/* Values: 12 MiB put as bytes, named by their SHA-256 (twice: one value),
 * read by a command as its argument, whose 12 MiB result comes back as a
 * value too; got back exact, and gone once deleted. */
static void test_values(void **state)
{
	enum { BIG = 12 << 20 };
	char pool[32], name[65], again[65];
	char *big = malloc(BIG), *got = NULL;
	size_t len = 0;
	json_t *result = NULL;

	(void)state;
	for (size_t i = 0; i < BIG; i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(strand_value_put(c, big, BIG, name), 0);
	assert_int_equal(strand_value_put(c, big, BIG, again), 0);
	assert_string_equal(name, again);
	assert_int_equal(strlen(name), 64);
	json_t *spec = json_pack("{s:[s,s,s]}", "command", "tr", "a-z", "b-za");
	assert_int_equal(strand_pool_create(c, 1, NULL, pool), 0);
	json_t *args = json_pack("[o]", strand_value_ref(name));
	char job[32];
	assert_int_equal(strand_map_with(c, pool, spec, args, job), 0);
	assert_int_equal(strand_async_get(c, job, 60, &result), 0);
	const char *made = json_string_value(json_object_get(result, "$value"));
	assert_non_null(made);
	assert_int_equal(strand_value_get(c, made, &got, &len), 0);
	assert_int_equal(len, BIG);
	for (size_t i = 0; i < BIG; i++)
		if (got[i] != (char)('a' + (i + 1) % 26))
			fail_msg("byte %zu is %c", i, got[i]);
	free(got);
	assert_int_equal(strand_value_delete(c, made), 0);
	assert_int_equal(strand_value_get(c, made, &got, &len), -1);
	assert_null(got);
	assert_non_null(strstr(strand_client_error(c), "HTTP 404"));
	assert_int_equal(strand_value_get(c, "../etc", &got, &len), -1);
	assert_string_equal(strand_client_error(c), "'../etc' is not a value's name (64 lowercase hex digits)");
	json_decref(result);
	json_decref(args);
	json_decref(spec);
	free(big);
	assert_int_equal(strand_pool_terminate(c, pool), 0);
}

/* AsyncResult.get(timeout), and a job cancelled while it runs. */
static void test_async_get_and_cancel(void **state)
{
	char pool[32], job[32], path[64];
	json_t *arg = json_pack("{s:i}", "y", 9), *slow = json_integer(3000), *bad = json_string("no good");
	json_t *r = NULL, *view = NULL;

	(void)state;
	assert_int_equal(strand_pool_create(c, 1, NULL, pool), 0);
	assert_int_equal(strand_apply_async(c, pool, "echo", arg, job), 0);
	assert_int_equal(strand_async_get(c, job, 30, &r), 0);
	assert_int_equal(json_integer_value(json_object_get(r, "y")), 9);
	json_decref(r);
	assert_int_equal(strand_apply_async(c, pool, "fail", bad, job), 0);
	assert_int_equal(strand_async_get(c, job, 30, &r), -1);
	assert_string_equal(strand_client_error(c), "no good");
	/* A result not there in time; then the job is cancelled. */
	assert_int_equal(strand_apply_async(c, pool, "sleep", slow, job), 0);
	assert_int_equal(strand_async_get(c, job, 1, &r), -1);
	assert_non_null(strstr(strand_client_error(c), "no result within 1 s"));
	assert_int_equal(strand_job_cancel(c, job), 0);
	assert_int_equal(strand_async_get(c, job, 30, &r), -1);
	assert_string_equal(strand_client_error(c), "cancelled");
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	assert_int_equal(strand_request(c, "GET", path, NULL, &view), 200);
	assert_string_equal(json_string_value(json_object_get(view, "state")), "cancelled");
	json_decref(view);
	assert_int_equal(strand_job_cancel(c, job), 0); /* ended: removed */
	assert_int_equal(strand_request(c, "GET", path, NULL, &view), 404);
	json_decref(view);
	json_decref(arg);
	json_decref(slow);
	json_decref(bad);
	assert_int_equal(strand_pool_terminate(c, pool), 0);
}

/* Pipe: a duplex pipe's ends each receive what the other sent; a simplex
 * pipe's end 1 cannot send. */
static void test_pipes(void **state)
{
	char duplex[32], simplex[32];
	json_t *ping = json_string("ping"), *pong = json_pack("[i]", 2), *got = NULL;

	(void)state;
	assert_int_equal(strand_pipe_create(c, 1, duplex), 0);
	assert_int_equal(strand_pipe_send(c, duplex, 0, ping), 0);
	assert_int_equal(strand_pipe_send(c, duplex, 1, pong), 0);
	assert_int_equal(strand_pipe_recv(c, duplex, 1, 5, &got), 0);
	assert_string_equal(json_string_value(got), "ping");
	json_decref(got);
	assert_int_equal(strand_pipe_recv(c, duplex, 0, 5, &got), 0);
	assert_true(json_equal(got, pong));
	json_decref(got);
	got = NULL;
	assert_int_equal(strand_pipe_recv(c, duplex, 0, 0, &got), -1);
	assert_null(got);
	assert_non_null(strstr(strand_client_error(c), "nothing within 0 s"));
	assert_int_equal(strand_pipe_create(c, 0, simplex), 0);
	assert_int_equal(strand_pipe_send(c, simplex, 1, ping), -1);
	assert_int_equal(strand_pipe_send(c, simplex, 0, ping), 0);
	assert_int_equal(strand_pipe_recv(c, simplex, 1, 5, &got), 0);
	assert_string_equal(json_string_value(got), "ping");
	json_decref(got);
	json_decref(ping);
	json_decref(pong);
}

/* An apply on a fresh client, through gateway h: echo of 7. */
static void apply_on(gateway *h)
{
	strand_client *k = strand_client_new(h->base);
	char pool[32];
	json_t *arg = json_integer(7), *r = NULL;

	assert_non_null(k);
	assert_int_equal(strand_pool_create(k, 1, NULL, pool), 0);
	assert_int_equal(strand_apply(k, pool, "echo", arg, 30, &r), 0);
	assert_int_equal(json_integer_value(r), 7);
	json_decref(r);
	/* The gateway closes a connection idle past --http-idle (1 s here, 2
	 * s with TLS's longer start): the next request finds its connection
	 * closed and goes again on a new one. */
	sleep(3);
	assert_int_equal(strand_apply(k, pool, "echo", arg, 30, &r), 0);
	assert_int_equal(json_integer_value(r), 7);
	json_decref(r);
	/* So does a body larger than the socket takes at once: 8 MB of
	 * arguments, found closed while they go out. */
	json_t *big = json_array(), *values = NULL;
	char *text = malloc(100001);
	memset(text, 'x', 100000);
	text[100000] = '\0';
	for (int i = 0; i < 80; i++)
		json_array_append_new(big, json_string(text));
	free(text);
	sleep(3);
	assert_int_equal(strand_map_values(k, pool, "echo", big, 0, &values), 0);
	assert_true(json_equal(values, big));
	json_decref(values);
	json_decref(big);
	assert_int_equal(strand_pool_terminate(k, pool), 0);
	json_decref(arg);
	strand_client_free(k);
}

/* A path (a pool id from the caller) that would end the request's line or
 * start a header of its own is refused before anything is sent. */
static void test_nothing_that_ends_a_line_goes_into_a_request(void **state)
{
	const char *paths[] = {"/v1/pools/p-1\r\nX-Injected: 1", "/v1/pools/p 1", "/v1/pools/\x7f", "v1/pools"};
	json_t *reply = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(strand_request(c, "GET", paths[i], NULL, &reply), 0);
		assert_null(reply);
		assert_non_null(
		        strstr(strand_client_error(c), "a method, path or header that cannot go into a request"));
	}
	assert_int_equal(strand_request(c, "GET", "/v1/pools", NULL, &reply), 200);
	json_decref(reply);
}

static void test_connection_closed_while_idle(void **state)
{
	const char *args[] = {"--http-idle", "1", NULL};
	gateway h;

	(void)state;
	gateway_start(&h, args);
	apply_on(&h);
	gateway_cleanup(&h);
}

/* An https:// gateway is reached through libcurl, trusting the CA that
 * $STRAND_CA_FILE names (a throwaway self-signed certificate here). */
static void test_https_gateway(void **state)
{
	char cert[300], key[300];
	const char *args[] = {"--tls-cert", cert,          "--tls-key", key, "--hub-server-name",
	                      "localhost",  "--http-idle", "2",         NULL};
	gateway h;

	(void)state;
	tls_cert_make(g.dir, cert, key);
	gateway_start(&h, args);
	assert_int_equal(strncmp(h.base, "https://", 8), 0);
	setenv("STRAND_CA_FILE", cert, 1);
	apply_on(&h);
	unsetenv("STRAND_CA_FILE");
	/* Without the CA, the gateway's certificate is not trusted. */
	strand_client *k = strand_client_new(h.base);
	json_t *reply = NULL;
	assert_int_equal(strand_request(k, "GET", "/v1/pools", NULL, &reply), 0);
	assert_null(reply);
	assert_non_null(strstr(strand_client_error(k), "SSL"));
	strand_client_free(k);
	gateway_cleanup(&h);
}

/* Whether path's "state" (a pool's, a manager's, a process's) becomes
 * one of states (space-separated) within 20 s. */
static int becomes(const char *path, const char *states)
{
	for (int i = 0; i < 200; i++) {
		json_t *o = http_get_ok(&g, path);
		const char *s = json_string_value(json_object_get(o, "state"));
		int found = s && strstr(states, s);
		json_decref(o);
		if (found)
			return 1;
		usleep(100000);
	}
	return 0;
}

/* strand_client_hold: what a client makes ends with it, at
 * strand_client_free or, killed, a lease later; what another client makes,
 * or a spec naming no lease of this one, stays. */
static void test_a_held_client_ends_what_it_made(void **state)
{
	char pool[32], manager[32], proc[32], kept[32], queue[32], pipe_id[32], kept_queue[32], path[96];
	char *const sleeper[] = {"sleep", "60", NULL};
	int fds[2];

	(void)state;
	setenv("STRAND_TOKEN_FILE", g.token_file, 1); /* another test's gateway set its own */
	strand_client *h = strand_client_new(g.base);
	if (strand_client_hold(h, 2) != 0)
		fail_msg("hold: %s", strand_client_error(h));
	assert_int_equal(strand_client_hold(h, 2), -1);
	assert_int_equal(strand_pool_create(h, 1, NULL, pool), 0);
	assert_int_equal(strand_manager_create(h, "dict", NULL, manager), 0);
	assert_int_equal(strand_process_start(h, sleeper, NULL, NULL, NULL, proc), 0);
	assert_int_equal(strand_queue_create(h, queue), 0);
	assert_int_equal(strand_pipe_create(h, 1, pipe_id), 0);
	assert_int_equal(strand_pool_create(c, 1, NULL, kept), 0);
	assert_int_equal(strand_queue_create(c, kept_queue), 0);
	sleep(3); /* longer than the lease: renewed meanwhile */
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	json_t *o = http_get_ok(&g, path);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "active");
	json_decref(o);
	strand_client_free(h);
	assert_true(becomes(path, "terminating terminated"));
	snprintf(path, sizeof(path), "/v1/managers/%s", manager);
	assert_true(becomes(path, "terminating terminated"));
	snprintf(path, sizeof(path), "/v1/processes/%s", proc);
	assert_true(becomes(path, "exited failed"));
	snprintf(path, sizeof(path), "/v1/pools/%s", kept);
	o = http_get_ok(&g, path);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "active");
	json_decref(o);
	/* its queue and pipe deleted; the other client's queue there */
	snprintf(path, sizeof(path), "/v1/queues/%s", queue);
	expect_problem(&g, "GET", path, NULL, 404, "no such queue");
	snprintf(path, sizeof(path), "/v1/pipes/%s", pipe_id);
	expect_problem(&g, "GET", path, NULL, 404, "no such pipe");
	snprintf(path, sizeof(path), "/v1/queues/%s", kept_queue);
	json_decref(http_get_ok(&g, path));

	/* Killed outright: the lease runs out. */
	assert_int_equal(pipe(fds), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		strand_client *k = strand_client_new(g.base);
		char p[32];
		if (strand_client_hold(k, 1) != 0 || strand_pool_create(k, 1, NULL, p) != 0)
			_exit(1);
		if (write(fds[1], p, 32) != 32)
			_exit(1);
		kill(getpid(), SIGKILL);
	}
	char killed[32] = "";
	assert_int_equal(read(fds[0], killed, 32), 32);
	waitpid(child, NULL, 0);
	close(fds[0]);
	close(fds[1]);
	snprintf(path, sizeof(path), "/v1/pools/%s", killed);
	assert_true(becomes(path, "terminating terminated"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pool),
	        cmocka_unit_test(test_large_map_in_parts),
	        cmocka_unit_test(test_part_over_the_body_cap_halved),
	        cmocka_unit_test(test_process),
	        cmocka_unit_test(test_queue_and_manager),
	        cmocka_unit_test(test_map_values),
	        cmocka_unit_test(test_values),
	        cmocka_unit_test(test_async_get_and_cancel),
	        cmocka_unit_test(test_pipes),
	        cmocka_unit_test(test_nothing_that_ends_a_line_goes_into_a_request),
	        cmocka_unit_test(test_connection_closed_while_idle),
	        cmocka_unit_test(test_https_gateway),
	        cmocka_unit_test(test_a_held_client_ends_what_it_made),
	};
	return cmocka_run_group_tests_name("client", tests, setup, teardown);
}
