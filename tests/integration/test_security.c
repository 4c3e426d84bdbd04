/*
 * Only the operator gets in: the API token, the checks against cross-site
 * use (Host, Origin, Content-Type), the dashboard's cookie, the operator's
 * policy, and a clear problem+json answer to every malformed request. Each
 * attack is tried for real against a gateway on loopback, and what it must
 * not have done (a process started, a pool created) is checked too.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
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

/* The answer is problem+json with this status, and its detail holds want. */
static void assert_problem(response *r, long status, const char *want)
{
	const char *detail = json_string_value(json_object_get(r->json, "detail"));

	if (r->status != status)
		fail_msg("expected %ld, got %ld: %s", status, r->status, r->body);
	assert_string_equal(r->content_type, "application/problem+json");
	assert_int_equal(json_integer_value(json_object_get(r->json, "status")), status);
	if (want && (!detail || !strstr(detail, want)))
		fail_msg("detail '%s' does not say '%s'", detail ? detail : "(none)", want);
}

static size_t count_of(const char *path, const char *key)
{
	response r = http(&g, "GET", path, NULL, NULL);
	size_t n;

	assert_int_equal(r.status, 200);
	n = json_array_size(json_object_get(r.json, key));
	response_free(&r);
	return n;
}

static void test_every_v1_request_needs_the_token(void **state)
{
	const char *json[] = {"Content-Type: application/json", NULL};
	const char *wrong[] = {"Content-Type: application/json", "Authorization: Bearer 0123456789abcdef0123", NULL};
	struct stat sb;
	response r;

	(void)state;
	/* The token file: made at start, next to the database, the owner's only. */
	assert_int_equal(stat(g.token_file, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, 65); /* 64 hex digits and a newline */
	assert_int_equal(stat(g.db, &sb), 0);
	assert_int_equal(sb.st_mode & 077, 0);

	r = http_as(&g, "POST", "/v1/processes", "{\"command\":[\"touch\",\"/tmp/strand-pwned\"]}", json);
	assert_problem(&r, 401, "authentication required");
	assert_string_equal(r.www_authenticate, "Bearer realm=\"strand\"");
	response_free(&r);
	r = http_as(&g, "GET", "/v1/pools", NULL, wrong);
	assert_problem(&r, 401, "not this gateway's");
	response_free(&r);
	r = http_as(&g, "GET", "/v1/jobs/j-0000000000000000/results", NULL, NULL);
	assert_problem(&r, 401, NULL);
	response_free(&r);
	r = http_as(&g, "POST", "/v1/jobs/j-0000000000000000/cancel", NULL, NULL);
	assert_problem(&r, 401, NULL);
	response_free(&r);
	r = http_as(&g, "GET", "/v1/history", NULL, NULL);
	assert_problem(&r, 401, NULL);
	response_free(&r);
	/* Nothing ran. */
	assert_int_equal(count_of("/v1/processes", "processes"), 0);

	/* /healthz stays open, GET only. */
	r = http_as(&g, "GET", "/healthz", NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	r = http_as(&g, "POST", "/healthz", "{}", json);
	assert_problem(&r, 405, "GET");
	response_free(&r);
}

static void test_cross_site_requests_are_refused(void **state)
{
	char auth[400], evil_host[] = "Host: strand.attacker.example:80";
	const char *text_plain[] = {"Content-Type: text/plain", auth, NULL};
	const char *foreign_origin[] = {"Content-Type: application/json", auth, "Origin: http://attacker.example",
	                                NULL};
	const char *rebound[] = {"Content-Type: application/json", auth, evil_host, NULL};
	const char *form_csrf[] = {"Content-Type: text/plain", "Origin: http://attacker.example", NULL};
	response r;

	(void)state;
	snprintf(auth, sizeof(auth), "%s", g.auth);
	/* A form post from another site: no token, a foreign Origin, text/plain. */
	r = http_as(&g, "POST", "/v1/processes", "{\"command\":[\"id\"]}", form_csrf);
	assert_true(r.status == 401 || r.status == 403);
	response_free(&r);
	/* Even holding the token, each of the three gets no further. */
	r = http_as(&g, "POST", "/v1/processes", "{\"command\":[\"id\"]}", text_plain);
	assert_problem(&r, 415, "application/json");
	response_free(&r);
	r = http_as(&g, "POST", "/v1/processes", "{\"command\":[\"id\"]}", foreign_origin);
	assert_problem(&r, 403, "cross-origin");
	response_free(&r);
	r = http_as(&g, "GET", "/v1/pools", NULL, rebound);
	assert_problem(&r, 421, "strand.attacker.example");
	response_free(&r);
	assert_int_equal(count_of("/v1/processes", "processes"), 0);

	/* Its own names pass: an IP literal, localhost, and its own Origin. */
	char same_origin[128];
	snprintf(same_origin, sizeof(same_origin), "Origin: http://localhost:%d", g.http_port);
	char local_host[64];
	snprintf(local_host, sizeof(local_host), "Host: localhost:%d", g.http_port);
	const char *own[] = {"Content-Type: application/json", auth, same_origin, local_host, NULL};
	r = http_as(&g, "POST", "/v1/queues", NULL, own);
	assert_int_equal(r.status, 201);
	response_free(&r);
}

/* The dashboard's cookie holds a session id, never the token: HttpOnly,
 * SameSite=Strict, named after this gateway's port; a change made with it
 * needs this gateway's Origin, and signing out revokes it. */
static void test_dashboard_cookie_is_httponly_strict_and_needs_origin(void **state)
{
	char token[320], body[400], cookie[800], origin[96], name[40], id[80] = "";
	const char *json[] = {"Content-Type: application/json", NULL};
	response r;

	(void)state;
	snprintf(token, sizeof(token), "%s", g.auth + strlen("Authorization: Bearer "));
	r = http_as(&g, "POST", "/v1/session", "{\"token\":\"0123456789abcdef-wrong\"}", json);
	assert_problem(&r, 401, NULL);
	assert_string_equal(r.set_cookie, "");
	response_free(&r);
	/* Reached without a token, so its body is capped small. */
	char *big = malloc(64 * 1024);
	memset(big, ' ', 64 * 1024 - 1);
	big[0] = '[';
	big[64 * 1024 - 2] = ']';
	big[64 * 1024 - 1] = '\0';
	r = http_as(&g, "POST", "/v1/session", big, json);
	assert_problem(&r, 413, "4096 byte cap");
	response_free(&r);
	free(big);

	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", token);
	r = http_as(&g, "POST", "/v1/session", body, json);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.set_cookie, "HttpOnly"));
	assert_non_null(strstr(r.set_cookie, "SameSite=Strict"));
	assert_non_null(strstr(r.set_cookie, "Path=/"));
	snprintf(name, sizeof(name), "strand_session_%d=", g.http_port);
	assert_int_equal(strncmp(r.set_cookie, name, strlen(name)), 0);
	assert_int_equal(sscanf(r.set_cookie + strlen(name), "%79[0-9a-f]", id), 1);
	assert_int_equal(strlen(id), 64);
	assert_null(strstr(r.set_cookie, token));
	response_free(&r);

	/* The token itself in a cookie opens nothing, nor does the session id
	 * under another port's name. */
	snprintf(cookie, sizeof(cookie), "Cookie: strand_token=%s; strand_session_%d=%s", token, g.http_port, token);
	const char *held[] = {cookie, NULL};
	r = http_as(&g, "GET", "/v1/pools", NULL, held);
	assert_problem(&r, 401, NULL);
	response_free(&r);
	snprintf(cookie, sizeof(cookie), "Cookie: strand_session_%d=%s", g.http_port + 1, id);
	r = http_as(&g, "GET", "/v1/pools", NULL, held);
	assert_problem(&r, 401, NULL);
	response_free(&r);

	snprintf(cookie, sizeof(cookie), "Cookie: %s%s", name, id);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%d", g.http_port);
	const char *read[] = {cookie, NULL};
	const char *change_no_origin[] = {"Content-Type: application/json", cookie, NULL};
	const char *change_own_origin[] = {"Content-Type: application/json", cookie, origin, NULL};
	const char *change_foreign[] = {"Content-Type: application/json", cookie, "Origin: http://127.0.0.2:1", NULL};
	r = http_as(&g, "GET", "/v1/pools", NULL, read);
	assert_int_equal(r.status, 200);
	response_free(&r);
	r = http_as(&g, "POST", "/v1/queues", NULL, change_no_origin);
	assert_problem(&r, 403, "Origin");
	response_free(&r);
	r = http_as(&g, "POST", "/v1/queues", NULL, change_foreign);
	assert_problem(&r, 403, "cross-origin");
	response_free(&r);
	r = http_as(&g, "POST", "/v1/queues", NULL, change_own_origin);
	assert_int_equal(r.status, 201);
	char *queue = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	/* Taking items changes the queue: a POST, with the Origin. */
	char take[128];
	snprintf(take, sizeof(take), "/v1/queues/%s/take", queue);
	r = http_as(&g, "GET", take, NULL, read);
	assert_problem(&r, 405, "use POST");
	response_free(&r);
	r = http_as(&g, "POST", take, NULL, change_no_origin);
	assert_problem(&r, 403, "Origin");
	response_free(&r);
	r = http_as(&g, "POST", take, NULL, change_own_origin);
	assert_int_equal(r.status, 200);
	response_free(&r);
	free(queue);
	r = http_as(&g, "GET", "/v1/session", NULL, read);
	assert_true(json_is_true(json_object_get(r.json, "signed_in")));
	response_free(&r);
	/* Signing out clears the cookie and revokes the session. */
	r = http_as(&g, "DELETE", "/v1/session", NULL, change_own_origin);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.set_cookie, "Max-Age=0"));
	response_free(&r);
	r = http_as(&g, "GET", "/v1/pools", NULL, read);
	assert_problem(&r, 401, NULL);
	response_free(&r);
	r = http_as(&g, "GET", "/v1/session", NULL, read);
	assert_true(json_is_false(json_object_get(r.json, "signed_in")));
	response_free(&r);
}

static void test_malformed_requests_all_get_problem_json(void **state)
{
	char path[4200], body[2048], req[1024];
	response r;

	(void)state;
	r = http(&g, "GET", "/v1/pools/%ff", NULL, NULL);
	assert_problem(&r, 400, "UTF-8");
	response_free(&r);
	/* %00 is not the end of the id. */
	char *pool = pool_create(&g, 1);
	snprintf(path, sizeof(path), "/v1/pools/%s%%00x", pool);
	r = http(&g, "GET", path, NULL, NULL);
	assert_problem(&r, 404, "no such pool");
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "instance")), "%00x"));
	response_free(&r);
	/* A long URL. */
	memset(path, 'a', sizeof(path) - 1);
	memcpy(path, "/v1/pools/", 10);
	path[3000] = '\0';
	r = http(&g, "GET", path, NULL, NULL);
	assert_problem(&r, 414, NULL);
	response_free(&r);
	/* An unknown field whose long non-ASCII name is cut in the detail. */
	size_t n = (size_t)snprintf(body, sizeof(body), "{\"");
	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "\xc3\xa9");
	snprintf(body + n, sizeof(body) - n, "\": 1}");
	r = http(&g, "POST", "/v1/pools", body, NULL);
	assert_problem(&r, 400, "field");
	response_free(&r);
	/* Undocumented: a client cannot name what a pool's workers dlopen. */
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"manager\":\"/tmp/evil.so:x\"}", NULL);
	assert_problem(&r, 400, "manager");
	response_free(&r);
	/* A manager's call URL naming a job that is not its call. */
	response m = http(&g, "POST", "/v1/managers", "{\"type\":\"counter\"}", NULL);
	assert_int_equal(m.status, 201);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:[i]}", "function", "echo", "args", 1));
	snprintf(path, sizeof(path), "/v1/managers/%s/calls/%s", json_string_value(json_object_get(m.json, "id")), job);
	r = http(&g, "GET", path, NULL, NULL);
	assert_problem(&r, 404, "no such call");
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/managers/%s", json_string_value(json_object_get(m.json, "id")));
	response_free(&m);
	r = http(&g, "DELETE", path, NULL, NULL);
	response_free(&r);
	/* Two Content-Length headers that disagree: request smuggling. */
	snprintf(req, sizeof(req),
	         "POST /v1/queues HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nContent-Type: application/json\r\n"
	         "Content-Length: 2\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{}",
	         g.auth);
	char out[4096];
	int status = http_raw(&g, req, out, sizeof(out));
	assert_int_equal(status, 400);
	/* A transfer coding libmicrohttpd does not decode: 501, not silence. */
	snprintf(req, sizeof(req),
	         "POST /v1/queues HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nContent-Type: application/json\r\n"
	         "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
	         g.auth);
	status = http_raw(&g, req, out, sizeof(out));
	assert_int_equal(status, 501);
	assert_non_null(strstr(out, "application/problem+json"));
	assert_non_null(strstr(out, "Transfer-Encoding 'gzip, chunked' is not supported"));
	/* Bytes that are not HTTP (here a TLS ClientHello's first bytes) and
	 * binary garbage: 400 as problem+json, not libmicrohttpd's HTML. */
	const char *not_http[] = {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "\x01\xff\xfe garbage\r\n\r\n"};
	for (int i = 0; i < 2; i++) {
		status = http_raw(&g, not_http[i], out, sizeof(out));
		assert_int_equal(status, 400);
		assert_non_null(strstr(out, "application/problem+json"));
		assert_non_null(strstr(out, "the request is not HTTP"));
	}
	/* A 100 KB URL: 414 as problem+json too. */
	char *huge = malloc(100 * 1024 + 1);
	memset(huge, 'a', 100 * 1024);
	memcpy(huge, "/v1/pools/", 10);
	huge[100 * 1024] = '\0';
	r = http(&g, "GET", huge, NULL, NULL);
	assert_problem(&r, 414, "the URL is over 2048 bytes");
	response_free(&r);
	free(huge);
	free(job);
	free(pool);
}

static void test_operator_policy(void **state)
{
	size_t pools = count_of("/v1/pools", "pools");
	response r;

	(void)state;
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"volumes\":[\"/:/host\"]}", NULL);
	assert_problem(&r, 403, "--allow-host-paths");
	response_free(&r);
	r = http(&g, "POST", "/v1/processes", "{\"command\":[\"true\"],\"volumes\":[\"/etc:/x:ro\"]}", NULL);
	assert_problem(&r, 403, "volumes[0]");
	response_free(&r);
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"root\":true}", NULL);
	assert_problem(&r, 403, "--allow-root-containers");
	response_free(&r);
	/* A named volume may hold another pool's data or the gateway's own:
	 * only those the operator names (--allow-volumes). */
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"volumes\":[\"cache:/cache\"]}", NULL);
	assert_problem(&r, 403, "named volume 'cache' is not one the operator allowed (--allow-volumes)");
	response_free(&r);
	/* An image other than the gateway's own (--allow-images). */
	r = http(&g, "POST", "/v1/pools", "{\"processes\":1,\"backend\":\"docker\",\"image\":\"evil:1\"}", NULL);
	assert_problem(&r, 403, "image 'evil:1' is not one the operator allowed (--allow-images");
	response_free(&r);
	assert_int_equal(count_of("/v1/pools", "pools"), pools);
}

/* A POST whose answer must be status; the new thing's id when made (free
 * it), else NULL. A refusal must be problem+json whose detail holds why. */
static char *post_expect(gateway *h, const char *path, const char *body, long status, const char *why)
{
	response r = http(h, "POST", path, body, NULL);
	char *id = NULL;

	if (r.status != status)
		fail_msg("POST %s %s: %ld %s, not %ld", path, body ? body : "", r.status, r.body, status);
	if (status >= 400)
		assert_problem(&r, status, why);
	else if (json_is_string(json_object_get(r.json, "id")))
		id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

/* Every quota refuses the one past it with 429 naming its flag, gives room
 * back when things go, and counts queue bytes again after a restart. */
static void test_quotas(void **state)
{
	static const char *const args[] = {"--max-pools",
	                                   "2",
	                                   "--max-workers",
	                                   "3",
	                                   "--max-managers",
	                                   "1",
	                                   "--max-processes",
	                                   "1",
	                                   "--max-queues",
	                                   "2",
	                                   "--max-pipes",
	                                   "1",
	                                   "--max-queue-bytes",
	                                   "100",
	                                   "--max-leases",
	                                   "1",
	                                   NULL};
	char path[128], item[128];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	char *a = post_expect(&h, "/v1/pools", "{\"processes\":2}", 201, NULL);
	free(post_expect(&h, "/v1/pools", "{\"processes\":2}", 429, "at most 3 workers"));
	free(post_expect(&h, "/v1/pools", "{\"autoscale\":{\"min\":0,\"max\":2}}", 429, "--max-workers"));
	char *b = post_expect(&h, "/v1/pools", "{\"processes\":1}", 201, NULL);
	free(post_expect(&h, "/v1/pools", "{\"processes\":1}", 429, "at most 2 pools at once (--max-pools)"));
	/* Growing counts, shrinking never does. */
	snprintf(path, sizeof(path), "/v1/pools/%s", a);
	r = http(&h, "PATCH", path, "{\"processes\":3}", NULL);
	assert_problem(&r, 429, "--max-workers");
	response_free(&r);
	r = http(&h, "PATCH", path, "{\"processes\":1}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	char *m = post_expect(&h, "/v1/managers", "{\"type\":\"dict\"}", 201, NULL);
	free(post_expect(&h, "/v1/managers", "{\"type\":\"dict\"}", 429, "(--max-managers)"));

	char *pr = post_expect(&h, "/v1/processes", "{\"command\":[\"sleep\",\"30\"]}", 201, NULL);
	free(post_expect(&h, "/v1/processes", "{\"command\":[\"true\"]}", 429, "(--max-processes)"));
	free(post_expect(&h, "/v1/rings", "{\"size\":2,\"command\":[\"true\"]}", 429, "(--max-processes)"));
	snprintf(path, sizeof(path), "/v1/processes/%s?wait=30", pr);
	r = http(&h, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	free(post_expect(&h, "/v1/processes", "{\"command\":[\"true\"]}", 201, NULL)); /* room again */

	char *q = post_expect(&h, "/v1/queues", NULL, 201, NULL);
	char *q2 = post_expect(&h, "/v1/queues", NULL, 201, NULL);
	free(post_expect(&h, "/v1/queues", NULL, 429, "at most 2 queues at once (--max-queues)"));
	free(post_expect(&h, "/v1/pipes", "{\"duplex\":true}", 201, NULL));
	free(post_expect(&h, "/v1/pipes", "{\"duplex\":false}", 429, "at most 1 pipes at once (--max-pipes)"));
	snprintf(path, sizeof(path), "/v1/queues/%s", q2);
	r = http(&h, "DELETE", path, NULL, NULL);
	response_free(&r);
	free(post_expect(&h, "/v1/queues", NULL, 201, NULL)); /* room again */

	/* Items of 42 bytes (a string of 40 and its quotes): two fit in 100. */
	snprintf(item, sizeof(item), "{\"item\":\"%040d\"}", 7);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	post_expect(&h, path, item, 201, NULL);
	post_expect(&h, path, item, 201, NULL);
	free(post_expect(&h, path, item, 429, "at most 100 bytes of items in its queues and pipes"));
	snprintf(path, sizeof(path), "/v1/queues/%s/take", q);
	post_expect(&h, path, NULL, 200, NULL);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	post_expect(&h, path, item, 201, NULL); /* a taken item gives its bytes back */
	/* ... counted again from the store after a restart. */
	assert_int_equal(gateway_stop(&h), 0);
	gateway_restart(&h);
	free(post_expect(&h, path, item, 429, "(--max-queue-bytes)"));

	free(post_expect(&h, "/v1/leases", NULL, 201, NULL));
	free(post_expect(&h, "/v1/leases", NULL, 429, "at most 1 client leases at once (--max-leases)"));
	free(a);
	free(b);
	free(m);
	free(pr);
	free(q);
	free(q2);
	gateway_cleanup(&h);
}

/* A JSON string of n 'v's, quoted: n + 2 bytes. */
static char *big_string(size_t n)
{
	char *s = malloc(n + 3);

	assert_non_null(s);
	s[0] = '"';
	memset(s + 1, 'v', n);
	s[n + 1] = '"';
	s[n + 2] = '\0';
	return s;
}

/* One cap (--max-value-bytes, 2,000,000 here) for every value: a value
 * under it goes through whole (past the old 1 MiB cap), and past it an
 * argument, a queue item, a manager call and a process's argument get 413
 * naming it, and a result fails its task saying so, whatever made it. */
static void test_one_cap_for_every_value(void **state)
{
	static const char *const args[] = {"--max-value-bytes", "2000000", NULL};
	char path[128], body[256];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	char *pool = pool_create(&h, 1);
	char *under = big_string(1500000), *over = big_string(2000000);
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=30", pool);
	json_t *apply = json_pack("{s:s, s:o}", "function", "echo", "arg", json_loads(under, JSON_DECODE_ANY, NULL));
	r = http_json(&h, "POST", path, apply);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_string_length(json_object_get(r.json, "value")), 1500000);
	response_free(&r);
	apply = json_pack("{s:s, s:o}", "function", "echo", "arg", json_loads(over, JSON_DECODE_ANY, NULL));
	r = http_json(&h, "POST", path, apply);
	assert_problem(&r, 413, "argument 0 is over the 2000000 byte cap (--max-value-bytes)");
	response_free(&r);

	char *q = post_expect(&h, "/v1/queues", NULL, 201, NULL);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	r = http_json(&h, "POST", path, json_pack("{s:o}", "item", json_loads(over, JSON_DECODE_ANY, NULL)));
	assert_problem(&r, 413, "item 0 is over the 2000000 byte cap (--max-value-bytes)");
	response_free(&r);

	char *m = post_expect(&h, "/v1/managers", "{\"type\":\"dict\"}", 201, NULL);
	snprintf(path, sizeof(path), "/v1/managers/%s/calls", m);
	r = http_json(
	        &h, "POST", path,
	        json_pack("{s:s, s:[s,o]}", "method", "set", "args", "k", json_loads(over, JSON_DECODE_ANY, NULL)));
	assert_problem(&r, 413, "the call (its arguments) is over the 2000000 byte cap (--max-value-bytes)");
	response_free(&r);

	r = http_json(&h, "POST", "/v1/processes",
	              json_pack("{s:s, s:o}", "function", "echo", "arg", json_loads(under, JSON_DECODE_ANY, NULL)));
	assert_problem(&r, 413, "field 'arg' is over the 1048576 byte cap of a process's argument");
	response_free(&r);

	/* A command's result of 2,000,002 bytes: its task fails, saying why. */
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=30", pool);
	snprintf(body, sizeof(body),
	         "{\"command\":[\"sh\",\"-c\",\"printf '\\\"'; head -c 2000000 /dev/zero | tr '\\\\0' v; "
	         "printf '\\\"'\"],\"arg\":1}");
	r = http(&h, "POST", path, body, NULL);
	assert_int_equal(r.status, 200);
	assert_true(json_is_false(json_object_get(r.json, "ok")));
	assert_string_equal(json_string_value(json_object_get(r.json, "error")),
	                    "result of 2000002 bytes is over the 2000000 byte cap (--max-value-bytes)");
	response_free(&r);
	free(under);
	free(over);
	free(pool);
	free(q);
	free(m);
	gateway_cleanup(&h);
}

static int idle_connection(const gateway *gw, const char *from);
static int read_answer(int fd, json_t **body);

/* Bytes of request bodies the gateway holds now, from its metrics. */
static long long body_bytes_held(const gateway *gw)
{
	response r = http(gw, "GET", "/metrics", NULL, NULL);
	const char *line = r.body ? strstr(r.body, "\nstrand_http_body_bytes_held ") : NULL;
	long long held = line ? atoll(line + strlen("\nstrand_http_body_bytes_held ")) : -1;

	response_free(&r);
	return held;
}

/* Request bodies held at once are bounded (--max-inflight-bytes, 100,000
 * here): while one client sends a body of 90,000 bytes, another's of
 * 20,000 gets 503 with Retry-After, and goes through once the first is
 * done. Bounded: loopback, one raw connection, 10 s at most. */
static void test_bodies_held_at_once_are_bounded(void **state)
{
	static const char *const args[] = {"--max-inflight-bytes", "100000", NULL};
	char head[512], path[128];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	char *q = post_expect(&h, "/v1/queues", NULL, 201, NULL);
	snprintf(path, sizeof(path), "/v1/queues/%s/items", q);
	char *first = big_string(90000 - 11), *second = big_string(20000);
	int fd = idle_connection(&h, "127.0.0.1");
	int n = snprintf(head, sizeof(head),
	                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nContent-Type: application/json\r\n"
	                 "Content-Length: 90000\r\nConnection: close\r\n\r\n{\"item\":",
	                 path, h.auth);
	assert_int_equal(write(fd, head, (size_t)n), n);
	/* The other client starts once the first's room is held: before, it
	 * could be the one holding room, and the first the one refused. */
	int64_t until = cm_now_ms() + 10000;
	long long held;
	while ((held = body_bytes_held(&h)) != 90000 && cm_now_ms() < until)
		usleep(10000);
	assert_int_equal(held, 90000);
	json_t *item = json_pack("{s:o}", "item", json_loads(second, JSON_DECODE_ANY, NULL));
	r = http_json(&h, "POST", path, json_incref(item));
	assert_problem(&r, 503, "(--max-inflight-bytes)");
	response_free(&r);
	size_t rest = strlen(first) + 1;
	first[rest - 1] = '}';
	assert_int_equal(write(fd, first, rest), (ssize_t)rest);
	json_t *answer = NULL;
	assert_int_equal(read_answer(fd, &answer), 201);
	json_decref(answer);
	r = http_json(&h, "POST", path, item);
	assert_int_equal(r.status, 201);
	response_free(&r);
	/* And every byte of room is given back. */
	until = cm_now_ms() + 10000;
	while ((held = body_bytes_held(&h)) != 0 && cm_now_ms() < until)
		usleep(10000);
	assert_int_equal(held, 0);
	free(first);
	free(second);
	free(q);
	gateway_cleanup(&h);
}

static void test_operator_policy_flags(void **state)
{
	/* The allowed host path exists, and the pool's own uid reaches it, so
	 * its worker starts: had its start failed, the pool would fail before
	 * the restart below for that reason instead. */
	char allowed[] = "/tmp/strand-policy-XXXXXX", allow[64], body[256];
	assert_non_null(mkdtemp(allowed));
	assert_int_equal(chmod(allowed, 0755), 0);
	snprintf(body, sizeof(body), "%s/x", allowed);
	assert_int_equal(mkdir(body, 0755), 0);
	snprintf(allow, sizeof(allow), "%s:/var/tmp", allowed);
	const char *const args[] = {"--allow-host-paths", allow, "--no-commands", "--allow-root-containers", NULL};
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	snprintf(body, sizeof(body), "{\"processes\":1,\"root\":true,\"volumes\":[\"%s/x:/x\"]}", allowed);
	r = http(&h, "POST", "/v1/pools", body, NULL);
	assert_int_equal(r.status, 201);
	char *pool = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	/* Prefixes are whole path steps, after "..": no way out. */
	char escape[96];
	snprintf(escape, sizeof(escape), "%s/../../etc", allowed);
	snprintf(body, sizeof(body), "{\"processes\":1,\"volumes\":[\"%s:/x\"]}", escape);
	r = http(&h, "POST", "/v1/pools", body, NULL);
	assert_problem(&r, 403, escape);
	response_free(&r);
	snprintf(body, sizeof(body), "{\"processes\":1,\"volumes\":[\"%sbase:/x\"]}", allowed);
	r = http(&h, "POST", "/v1/pools", body, NULL);
	assert_problem(&r, 403, NULL);
	response_free(&r);
	/* --no-commands: neither command tasks nor command processes. */
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&h, "POST", path, "{\"command\":[\"cat\"],\"args\":[1]}", NULL);
	assert_problem(&r, 403, "--no-commands");
	response_free(&r);
	r = http(&h, "POST", "/v1/processes", "{\"command\":[\"true\"]}", NULL);
	assert_problem(&r, 403, "--no-commands");
	response_free(&r);
	r = http(&h, "POST", "/v1/rings", "{\"size\":2,\"command\":[\"true\"]}", NULL);
	assert_problem(&r, 403, "--no-commands");
	response_free(&r);
	/* Functions still run. */
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"args\":[1]}", NULL);
	assert_int_equal(r.status, 202);
	response_free(&r);
	/* Restarted under a stricter policy, the pool (root, a host path) starts
	 * no worker: it fails, saying why. */
	static const char *const strict[] = {"--no-commands", NULL};
	assert_int_equal(gateway_stop(&h), 0);
	h.extra_args = strict;
	gateway_restart(&h);
	json_t *p = pool_get(&h, pool);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(p, "reason")), "policy forbids it now"));
	assert_non_null(strstr(json_string_value(json_object_get(p, "reason")), "--allow-host-paths"));
	json_decref(p);
	free(pool);
	gateway_cleanup(&h);
	snprintf(body, sizeof(body), "%s/x", allowed);
	assert_int_equal(rmdir(body), 0);
	assert_int_equal(rmdir(allowed), 0);
}

static void test_no_auth_only_on_loopback(void **state)
{
	static const char *const args[] = {"--no-auth", NULL};
	gateway h;
	response r;

	(void)state;
	char *all = gateway_output("--no-auth --http 0.0.0.0:1");
	assert_non_null(strstr(all, "--no-auth is refused unless --http is a loopback address"));
	assert_non_null(strstr(all, "exit=1"));
	free(all);

	gateway_start(&h, args);
	r = http_as(&h, "GET", "/v1/pools", NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	gateway_cleanup(&h);
}

static void test_result_pages_stop_at_16_mib(void **state)
{
	/* 40 results of 512 KiB each: 20 MiB, over one page. */
	json_t *args = json_array();
	char *big = malloc(512 * 1024 + 1);
	char path[160];
	int64_t seen = 0;

	(void)state;
	memset(big, 'z', 512 * 1024);
	big[512 * 1024] = '\0';
	for (int i = 0; i < 40; i++)
		json_array_append_new(args, json_string(big));
	free(big);
	char *pool = pool_create(&g, 2);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "echo", "args", args));
	json_decref(job_results(&g, job, "input", 1000)); /* all there */
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?limit=1000", job);
	response r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_true(r.len <= (16u << 20));
	seen = (int64_t)json_array_size(json_object_get(r.json, "items"));
	assert_true(seen > 0 && seen < 40);
	assert_false(json_is_true(json_object_get(r.json, "complete")));
	assert_int_equal(atoll(json_string_value(json_object_get(r.json, "next_cursor"))), seen);
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/jobs/%s/results?limit=1000&cursor=%lld", job, (long long)seen);
	r = http(&g, "GET", path, NULL, NULL);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 40 - seen);
	assert_true(json_is_true(json_object_get(r.json, "complete")));
	response_free(&r);
	free(job);
	free(pool);
}

/* A TCP connection to port on 127.0.0.1 from source address from
 * (another loopback address: another client). */
static int connect_from(const char *from, int port)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, from, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((uint16_t)port);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
	return fd;
}

/* A connection to the gateway's HTTP port from from, sending nothing. */
static int idle_connection(const gateway *gw, const char *from)
{
	return connect_from(from, gw->http_port);
}

/* Whether the server closed fd (end of stream or reset). */
static int closed_by_server(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Sends what to the gateway's hub as a stranger would; whether the hub
 * then closed the connection (within 10 s). */
static int stranger_on_hub(const gateway *gw, const char *what)
{
	struct timeval wait = {.tv_sec = 10};
	int fd = connect_from("127.0.0.1", gw->hub_port);
	char buf[256];
	ssize_t n;

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait)), 0);
	assert_int_equal(send(fd, what, strlen(what), MSG_NOSIGNAL), (ssize_t)strlen(what));
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) /* a TLS alert, maybe */
		;
	close(fd);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static int count_closed(const int *fds, int n)
{
	int closed = 0;

	for (int i = 0; i < n; i++)
		closed += closed_by_server(fds[i]);
	return closed;
}

/* 1,000 idle connections from one client: it gets its share and no more,
 * the others are served meanwhile, and idle connections are closed. Bounded:
 * loopback only, a fixed count, closed at the end. */
static void test_idle_connection_flood(void **state)
{
	static const char *const args[] = {"--http-idle", "2", "--http-per-client", "100", NULL};
	enum { FLOOD = 1000 };
	int fds[FLOOD];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	char *pool = pool_create(&h, 1);
	pool_wait_connected(&h, pool, 1);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = idle_connection(&h, "127.0.0.2");
	/* Past its share, the flooding client's connections are closed at once. */
	int closed = 0;
	for (int i = 0; i < 100 && (closed = count_closed(fds, FLOOD)) < FLOOD - 100; i++)
		usleep(20000);
	assert_int_equal(closed, FLOOD - 100);

	/* Another client is served meanwhile. */
	double t0 = cm_now_s();
	r = http_as(&h, "GET", "/healthz", NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	double t1 = cm_now_s();
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=10", pool);
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"arg\":7}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "value")), 7);
	response_free(&r);
	print_message("with %d idle connections open: /healthz %.1f ms, apply %.1f ms\n", FLOOD - closed,
	              1000 * (t1 - t0), 1000 * (cm_now_s() - t1));

	/* Idle ones are closed after --http-idle. */
	for (int i = 0; i < 400 && (closed = count_closed(fds, FLOOD)) < FLOOD; i++)
		usleep(20000);
	assert_int_equal(closed, FLOOD);
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	free(pool);
	gateway_cleanup(&h);
}

/* Strangers of one address (connections to the hub that name no worker)
 * hold at most --hub-per-address of the hub's slots: past that, the
 * address's connections are closed at once, the log says why, and the
 * workers of another address still connect and work. Bounded: loopback
 * only, 40 sockets. */
static void test_hub_strangers_held_per_address(void **state)
{
	static const char *const args[] = {"--hub-per-address", "16", NULL};
	enum { STRANGERS = 40, HELD = 16 };
	int fds[STRANGERS], closed = 0;
	char path[96];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, args);
	for (int i = 0; i < STRANGERS; i++)
		fds[i] = connect_from("127.0.0.2", h.hub_port);
	for (int i = 0; i < 500 && (closed = count_closed(fds, STRANGERS)) < STRANGERS - HELD; i++)
		usleep(20000);
	assert_int_equal(closed, STRANGERS - HELD);
	assert_true(gateway_log_count(&h, "hub: 127.0.0.2 holds 16 connections that have named no worker yet; "
	                                  "refusing one more (--hub-per-address)") >= 1);

	/* Workers from 127.0.0.1 connect beside them, and work. */
	char *pool = pool_create(&h, 2);
	pool_wait_connected(&h, pool, 2);
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=10", pool);
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"arg\":7}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "value")), 7);
	response_free(&r);
	for (int i = 0; i < STRANGERS; i++)
		close(fds[i]);
	free(pool);
	gateway_cleanup(&h);
}

/* 256 clients of one address trickle a byte a second, half into their
 * headers and half into a body: libmicrohttpd's idle timeout, restarted by
 * every byte, never ends them, but the deadlines for a whole request's
 * headers (3 s here) and its body (3 s + 2,000 bytes at 1,000 a second) do,
 * and a client of another address is served meanwhile. Bounded: loopback
 * only, 256 sockets, 30 rounds at most. */
static void test_trickling_clients_are_cut_off(void **state)
{
	static const char *const args[] = {"--http-header-s", "3", "--http-min-rate", "1000", NULL};
	enum { TRICKLE = 256 };
	int fds[TRICKLE], served = 0, closed = 0, round;
	char head[600];
	gateway h;

	(void)state;
	gateway_start(&h, args);
	int n = snprintf(head, sizeof(head),
	                 "POST /v1/queues HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nContent-Type: application/json\r\n"
	                 "Content-Length: 2000\r\n\r\n",
	                 h.auth);
	for (int i = 0; i < TRICKLE; i++) {
		fds[i] = idle_connection(&h, "127.0.0.2");
		if (i % 2)
			assert_int_equal(write(fds[i], head, (size_t)n), n);
		else
			assert_int_equal(write(fds[i], "GET /healthz HTTP/1.1\r\nX-Slow: ", 32), 32);
	}
	for (round = 0; round < 30 && closed < TRICKLE; round++) {
		for (int i = 0; i < TRICKLE; i++)
			if (!closed_by_server(fds[i]))
				send(fds[i], i % 2 ? " " : "x", 1, MSG_NOSIGNAL);
		response r = http_as(&h, "GET", "/healthz", NULL, NULL);
		served += r.status == 200;
		response_free(&r);
		sleep(1);
		closed = count_closed(fds, TRICKLE);
	}
	print_message("%d trickling connections cut off within %d s; another client served %d times of %d\n", closed,
	              round, served, round);
	assert_int_equal(closed, TRICKLE);
	assert_int_equal(served, round);
	for (int i = 0; i < TRICKLE; i++)
		close(fds[i]);
	gateway_cleanup(&h);
}

/* Sends a GET with the token from client address from and returns the
 * socket; the answer is read later (read_answer). */
static int start_request(const gateway *gw, const char *from, const char *method, const char *path)
{
	char req[1024];
	int fd = idle_connection(gw, from);
	struct timeval tv = {.tv_sec = 60};
	int n = snprintf(req, sizeof(req),
	                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	                 method, path, gw->auth);

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(write(fd, req, (size_t)n), n);
	return fd;
}

/* Reads the answer on fd to its end; returns its status, *body its JSON. */
static int read_answer(int fd, json_t **body)
{
	char buf[8192];
	size_t got = 0;
	ssize_t n;
	int status = 0;

	while (got + 1 < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got - 1)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	const char *start = strstr(buf, "\r\n\r\n");
	*body = start ? json_loads(start + 4, 0, NULL) : NULL;
	return status;
}

/* Long polls park their connection instead of holding a thread: hundreds of
 * queue reads, joins and result waits at once leave the gateway's thread
 * count where it was, the API answers meanwhile, and every poll gets its
 * answer: each queued item goes to exactly one reader. Bounded: loopback,
 * fixed counts, each socket read with a timeout. */
static void test_long_polls_hold_no_thread(void **state)
{
	static const char *const args[] = {"--http-per-client", "2000", NULL};
	enum { READERS_N = 400, JOINS = 100, WAITS = 100, IDLE = 400 };
	int readers[READERS_N], joins[JOINS], waits[WAITS], idle[IDLE];
	struct rlimit fds;
	char path[160], queue[32], proc[32], job[32];
	gateway h;
	response r;

	(void)state;
	getrlimit(RLIMIT_NOFILE, &fds); /* this test holds 1,000 sockets */
	fds.rlim_cur = fds.rlim_max;
	setrlimit(RLIMIT_NOFILE, &fds);
	gateway_start(&h, args);
	char *pool = pool_create(&h, 2); /* one sleeps through the test, one applies */
	pool_wait_connected(&h, pool, 2);
	r = http(&h, "POST", "/v1/queues", "{}", NULL);
	assert_int_equal(r.status, 201);
	snprintf(queue, sizeof(queue), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	r = http(&h, "POST", "/v1/processes", "{\"command\":[\"sleep\",\"60\"]}", NULL);
	assert_int_equal(r.status, 201);
	snprintf(proc, sizeof(proc), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&h, "POST", path, "{\"function\":\"sleep\",\"args\":[60000]}", NULL);
	assert_int_equal(r.status, 202);
	snprintf(job, sizeof(job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	int before = (int)proc_status_number(h.pid, "Threads:");

	for (int i = 0; i < READERS_N; i++) {
		snprintf(path, sizeof(path), "/v1/queues/%s/take?wait=60", queue);
		readers[i] = start_request(&h, "127.0.0.3", "POST", path);
	}
	for (int i = 0; i < JOINS; i++) {
		snprintf(path, sizeof(path), "/v1/processes/%s?wait=60", proc);
		joins[i] = start_request(&h, "127.0.0.3", "GET", path);
	}
	for (int i = 0; i < WAITS; i++) {
		snprintf(path, sizeof(path), "/v1/jobs/%s/results?wait=60", job);
		waits[i] = start_request(&h, "127.0.0.3", "GET", path);
	}
	/* Every reader is in line before anything is put. */
	queue_wait_readers(&h, queue, READERS_N);
	int during = (int)proc_status_number(h.pid, "Threads:");
	print_message("gateway threads: %d before, %d with %d long polls waiting\n", before, during,
	              READERS_N + JOINS + WAITS);
	assert_true(during <= before + 2);

	/* With idle connections on top, 1,000 are open: the API answers. */
	for (int i = 0; i < IDLE; i++)
		idle[i] = idle_connection(&h, "127.0.0.4");
	double t0 = cm_now_s();
	r = http_as(&h, "GET", "/healthz", NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	double t1 = cm_now_s();
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=30", pool);
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"arg\":5}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "value")), 5);
	response_free(&r);
	print_message("with 1,000 connections open: /healthz %.1f ms, apply %.1f ms\n", 1000 * (t1 - t0),
	              1000 * (cm_now_s() - t1));
	for (int i = 0; i < IDLE; i++)
		close(idle[i]);

	/* One put serves every reader, one item each, in line. */
	json_t *items = json_array();
	for (int i = 0; i < READERS_N; i++)
		json_array_append_new(items, json_integer(i));
	snprintf(path, sizeof(path), "/v1/queues/%s/items", queue);
	r = http_json(&h, "POST", path, json_pack("{s:o}", "items", items));
	assert_int_equal(r.status, 201);
	response_free(&r);
	unsigned char seen[READERS_N] = {0};
	for (int i = 0; i < READERS_N; i++) {
		json_t *body = NULL;
		assert_int_equal(read_answer(readers[i], &body), 200);
		json_t *its = json_object_get(body, "items");
		assert_int_equal(json_array_size(its), 1);
		json_int_t v = json_integer_value(json_array_get(its, 0));
		assert_true(v >= 0 && v < READERS_N && !seen[v]);
		seen[v] = 1;
		json_decref(body);
	}

	/* Ending the process answers every join with its end. */
	snprintf(path, sizeof(path), "/v1/processes/%s", proc);
	r = http(&h, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	for (int i = 0; i < JOINS; i++) {
		json_t *body = NULL;
		assert_int_equal(read_answer(joins[i], &body), 200);
		assert_string_not_equal(json_string_value(json_object_get(body, "state")), "running");
		assert_string_equal(json_string_value(json_object_get(body, "id")), proc);
		json_decref(body);
	}
	/* Deleting the pool ends its job: every result wait answers. */
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	r = http(&h, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	for (int i = 0; i < WAITS; i++) {
		json_t *body = NULL;
		assert_int_equal(read_answer(waits[i], &body), 200);
		assert_string_equal(json_string_value(json_object_get(body, "job")), job);
		assert_int_equal(json_array_size(json_object_get(body, "items")), 1);
		assert_true(json_is_false(json_object_get(json_array_get(json_object_get(body, "items"), 0), "ok")));
		json_decref(body);
	}
	free(pool);
	gateway_cleanup(&h);
}

/* Stopping the gateway answers every parked poll before it exits: a queue
 * reader gets 503, a result wait its page as it stands (or 503 if it came
 * in as the stop began). */
static void test_long_polls_answer_when_the_gateway_stops(void **state)
{
	enum { N = 20 };
	int readers[N], waits[N];
	char path[160], queue[32], job[32];
	gateway h;
	response r;

	(void)state;
	gateway_start(&h, NULL);
	char *pool = pool_create(&h, 1);
	pool_wait_connected(&h, pool, 1);
	r = http(&h, "POST", "/v1/queues", "{}", NULL);
	snprintf(queue, sizeof(queue), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	r = http(&h, "POST", path, "{\"function\":\"sleep\",\"args\":[60000]}", NULL);
	assert_int_equal(r.status, 202);
	snprintf(job, sizeof(job), "%s", json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/v1/queues/%s/take?wait=60", queue);
		readers[i] = start_request(&h, "127.0.0.5", "POST", path);
		snprintf(path, sizeof(path), "/v1/jobs/%s/results?wait=60", job);
		waits[i] = start_request(&h, "127.0.0.5", "GET", path);
	}
	queue_wait_readers(&h, queue, N);
	int status = gateway_stop(&h);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < N; i++) {
		json_t *body = NULL;
		assert_int_equal(read_answer(readers[i], &body), 503);
		json_decref(body);
		/* A result wait parked in time gets its page; one the gateway had
		 * not read before the stop began gets 503 (nothing says which, as
		 * waiting_readers does for the queue). Never no answer. */
		int got = read_answer(waits[i], &body);
		if (got == 200) {
			assert_string_equal(json_string_value(json_object_get(body, "job")), job);
			assert_int_equal(json_array_size(json_object_get(body, "items")), 0);
		} else {
			assert_int_equal(got, 503);
			assert_non_null(strstr(json_string_value(json_object_get(body, "detail")), "shutting down"));
		}
		json_decref(body);
	}
	free(pool);
	gateway_cleanup(&h);
}

/* Every request sent before a stop is answered, whether the gateway had
 * read it, accepted its connection, or only the kernel had it queued: a
 * read its answer, a write its answer or 503 from the quiesced engine.
 * Never a closed connection with no word. Bounded: 200 requests. */
static void test_requests_sent_before_a_stop_are_answered(void **state)
{
	enum { N = 200 };
	int fds[N];
	gateway h;

	(void)state;
	gateway_start(&h, NULL);
	for (int i = 0; i < N; i++)
		fds[i] = start_request(&h, "127.0.0.6", i % 2 ? "POST" : "GET", i % 2 ? "/v1/queues" : "/v1/pools");
	int status = gateway_stop(&h);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < N; i++) {
		json_t *body = NULL;
		int got = read_answer(fds[i], &body);
		if (got != 503)
			assert_int_equal(got, i % 2 ? 201 : 200);
		json_decref(body);
	}
	gateway_cleanup(&h);
}

/* TLS with the operator's certificate (a throwaway self-signed one here):
 * HTTPS for the API and the dashboard's sign-in, and a tls+tcp:// hub its
 * workers reach after checking the certificate by name ("localhost").
 * Plain HTTP on that port gets nowhere. */
static void test_https(void **state)
{
	char cert[300], key[300], same_origin[96];
	const char *args[] = {"--tls-cert", cert, "--tls-key", key, "--hub-server-name", "localhost", NULL};
	gateway h;
	response r;

	(void)state;
	tls_cert_make(g.dir, cert, key);
	gateway_start(&h, args);
	assert_int_equal(strncmp(h.base, "https://", 8), 0);
	/* The worker runs the task only if it reached the TLS hub. */
	char *pool = pool_create(&h, 1);
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=10", pool);
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"arg\":[1,2]}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "value")), 2);
	response_free(&r);
	/* Both ends of the hub's connection send at once: small answers,
	 * each waited for (with nng's TLS, which wrote a frame's prefix and
	 * body as two records, Nagle's algorithm held the second 40 ms for the
	 * other end's delayed ACK). */
	pid_t worker;
	int nodelay;
	assert_true((worker = process_named_under(h.pid, "strand-worker")) > 0);
	assert_int_equal(tcp_nodelay_count(h.pid, h.hub_port, &nodelay), 1);
	assert_int_equal(nodelay, 1);
	assert_int_equal(tcp_nodelay_count(worker, h.hub_port, &nodelay), 1);
	assert_int_equal(nodelay, 1);
	/* The dashboard's cookie is Secure here, and works with the https Origin. */
	char body[400];
	const char *json[] = {"Content-Type: application/json", NULL};
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", h.auth + strlen("Authorization: Bearer "));
	r = http_as(&h, "POST", "/v1/session", body, json);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.set_cookie, "; Secure"));
	response_free(&r);
	snprintf(same_origin, sizeof(same_origin), "Origin: https://127.0.0.1:%d", h.http_port);
	const char *own[] = {"Content-Type: application/json", h.auth, same_origin, NULL};
	r = http_as(&h, "POST", "/v1/queues", NULL, own);
	assert_int_equal(r.status, 201);
	response_free(&r);
	/* Plain HTTP to the HTTPS port: no answer a client could take. */
	gateway plain = h;
	snprintf(plain.base, sizeof(plain.base), "http://127.0.0.1:%d", h.http_port);
	plain.ca_file[0] = '\0';
	r = http(&plain, "GET", "/v1/pools", NULL, NULL);
	assert_int_not_equal(r.status, 200);
	response_free(&r);
	/* Plain bytes to the TLS hub: that connection ends, the gateway says
	 * why, and its worker's connection goes on. */
	assert_int_equal(stranger_on_hub(&h, "GET / HTTP/1.0\r\n\r\n"), 1);
	assert_int_equal(gateway_log_count(&h, "hub: TLS handshake: "), 1);
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=10", pool);
	r = http(&h, "POST", path, "{\"function\":\"echo\",\"arg\":3}", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "value")), 3);
	response_free(&r);
	/* Stopped, the gateway tells its worker so over the TLS hub as over
	 * TCP: it ends by itself, not by a signal. */
	int status = gateway_stop(&h);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(path, sizeof(path), "of pool %s stopped (code 0)", pool);
	assert_int_equal(gateway_log_count(&h, path), 1);
	free(pool);
	gateway_cleanup(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_every_v1_request_needs_the_token),
	        cmocka_unit_test(test_cross_site_requests_are_refused),
	        cmocka_unit_test(test_dashboard_cookie_is_httponly_strict_and_needs_origin),
	        cmocka_unit_test(test_malformed_requests_all_get_problem_json),
	        cmocka_unit_test(test_operator_policy),
	        cmocka_unit_test(test_operator_policy_flags),
	        cmocka_unit_test(test_no_auth_only_on_loopback),
	        cmocka_unit_test(test_result_pages_stop_at_16_mib),
	        cmocka_unit_test(test_quotas),
	        cmocka_unit_test(test_one_cap_for_every_value),
	        cmocka_unit_test(test_bodies_held_at_once_are_bounded),
	        cmocka_unit_test(test_idle_connection_flood),
	        cmocka_unit_test(test_trickling_clients_are_cut_off),
	        cmocka_unit_test(test_hub_strangers_held_per_address),
	        cmocka_unit_test(test_long_polls_hold_no_thread),
	        cmocka_unit_test(test_long_polls_answer_when_the_gateway_stops),
	        cmocka_unit_test(test_requests_sent_before_a_stop_are_answered),
	        cmocka_unit_test(test_https),
	};
	return cmocka_run_group_tests_name("security", tests, setup, teardown);
}
