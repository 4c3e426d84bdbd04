/*
 * Workers that join an external pool, on a real gateway over loopback:
 * strand-worker --join trades a pool's join token for its identity, the
 * pool takes as many as its processes and refuses more, a worker that is
 * killed is lost (its tasks go back to the queue) and another joins in its
 * place; used-up, expired and unknown tokens get 401, tokens outlive a
 * gateway restart (a worker started while it is down joins once it is
 * back), and a stopping gateway tells joined workers to stop.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/harness.h"

static gateway g;

static int setup(void **state)
{
	static const char *const args[] = {"--lease-ms", "300", NULL};

	(void)state;
	gateway_start(&g, args);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gateway_cleanup(&g);
	return 0;
}

/* POST /v1/pools/{pool}/join with body to gw: the token (new string). */
static char *join_token_at(const gateway *gw, const char *pool, const char *body)
{
	char path[96];
	response r;
	char *token;

	snprintf(path, sizeof(path), "/v1/pools/%s/join", pool);
	r = http(gw, "POST", path, body, NULL);
	if (r.status != 201)
		fail_msg("join token: %ld %s", r.status, r.body);
	token = strdup(json_string_value(json_object_get(r.json, "token")));
	assert_int_equal(strncmp(token, "jt-", 3), 0);
	response_free(&r);
	return token;
}

static char *join_token(const char *pool, const char *body)
{
	return join_token_at(&g, pool, body);
}

/* strand-worker --join with token (in its environment) to gw, checking
 * its certificate by ca (NULL: none given), its stderr in gw's folder; its
 * pid. */
static pid_t worker_join_to(const gateway *gw, const char *token, const char *ca)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char log[400];
		snprintf(log, sizeof(log), "%s/joined-%d.log", gw->dir, (int)getpid());
		if (!freopen(log, "w", stderr))
			_exit(127);
		setenv("STRAND_JOIN_TOKEN", token, 1);
		if (ca)
			execl(STRAND_BIN_DIR "/strand-worker", "strand-worker", "--join", gw->base, "--ca", ca,
			      (char *)NULL);
		else
			execl(STRAND_BIN_DIR "/strand-worker", "strand-worker", "--join", gw->base, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static pid_t worker_join(const char *token)
{
	return worker_join_to(&g, token, NULL);
}

/* strand-worker --join to gw, to its end: its exit code and what it said. */
static int worker_join_to_end(const gateway *gw, const char *token, const char *ca, char *said, size_t said_len)
{
	pid_t pid = worker_join_to(gw, token, ca);
	int status;
	char log[400];
	FILE *f;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	snprintf(log, sizeof(log), "%s/joined-%d.log", gw->dir, (int)pid);
	said[0] = '\0';
	if ((f = fopen(log, "r"))) {
		if (!fgets(said, (int)said_len, f))
			said[0] = '\0';
		fclose(f);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int worker_join_refused(const char *token, char *said, size_t said_len)
{
	return worker_join_to_end(&g, token, NULL, said, said_len);
}

static void map_echo(const char *pool, int n)
{
	json_t *args = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(args, json_integer(i));
	char *job = job_submit(&g, pool, json_pack("{s:s, s:o}", "function", "echo", "args", args));
	json_t *items = job_results(&g, job, "input", 1000);
	assert_int_equal(json_array_size(items), n);
	for (int i = 0; i < n; i++) {
		json_t *it = json_array_get(items, (size_t)i);
		assert_true(json_is_true(json_object_get(it, "ok")));
		assert_int_equal(json_integer_value(json_object_get(it, "value")), i);
	}
	json_decref(items);
	free(job);
}

static json_t *counters(const char *pool)
{
	json_t *p = pool_get(&g, pool), *c = json_incref(json_object_get(p, "counters"));
	json_decref(p);
	return c;
}

static void test_workers_join_and_replace_the_lost(void **state)
{
	(void)state;
	char said[512];
	char *pool = pool_create_spec(&g, "{\"backend\": \"external\", \"processes\": 2}");
	/* An external pool starts nothing: no worker until one joins. */
	json_t *p = pool_get(&g, pool);
	assert_int_equal(json_array_size(json_object_get(p, "workers")), 0);
	json_decref(p);

	char *token = join_token(pool, "{\"uses\": 3}");
	pid_t a = worker_join(token), b = worker_join(token);
	pool_wait_connected(&g, pool, 2);
	map_echo(pool, 500);
	p = pool_get(&g, pool);
	json_t *joined = json_array_get(json_object_get(p, "workers"), 0);
	assert_true(json_is_true(json_object_get(joined, "joined")));
	assert_null(json_object_get(joined, "container"));
	json_decref(p);

	/* A third, while two serve: refused, and the token keeps its use. */
	assert_int_equal(worker_join_refused(token, said, sizeof(said)), 1);
	assert_non_null(strstr(said, "(409)"));
	assert_non_null(strstr(said, "has the 2 workers it takes"));

	/* One killed: lost after its lease, never replaced by the gateway; the
	 * token's last use brings another. */
	kill(a, SIGKILL);
	assert_int_equal(waitpid(a, NULL, 0), a);
	for (int i = 0;; i++) {
		json_t *c = counters(pool);
		int lost = (int)json_integer_value(json_object_get(c, "workers_lost"));
		json_decref(c);
		if (lost == 1)
			break;
		assert_true(i < 400);
		usleep(25000);
	}
	json_t *c = counters(pool);
	assert_int_equal(json_integer_value(json_object_get(c, "workers_started")), 2);
	json_decref(c);
	pid_t d = worker_join(token);
	pool_wait_connected(&g, pool, 2);
	map_echo(pool, 300);

	/* Used up: 401, with the reason. */
	assert_int_equal(worker_join_refused(token, said, sizeof(said)), 1);
	assert_non_null(strstr(said, "(401): join token unknown, used up or expired"));

	/* The gateway stops: joined workers are told to, and end by themselves. */
	int status = gateway_stop(&g);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(waitpid(b, &status, 0), b);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(waitpid(d, &status, 0), d);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gateway_restart(&g);
	free(token);
	free(pool);
}

static void test_tokens_expire_and_outlive_a_restart(void **state)
{
	(void)state;
	char said[512];
	char *pool = pool_create_spec(&g, "{\"backend\": \"external\", \"processes\": 1}");
	char *brief = join_token(pool, "{\"ttl_s\": 1}"), *kept = join_token(pool, "{}");

	usleep(1200000);
	assert_int_equal(worker_join_refused(brief, said, sizeof(said)), 1);
	assert_non_null(strstr(said, "(401)"));
	/* A worker started while the gateway is down tries again until it is
	 * back (the token with it), and says so once. */
	gateway_kill(&g);
	pid_t w = worker_join(kept);
	usleep(500000);
	gateway_restart(&g);
	pool_wait_connected(&g, pool, 1);
	map_echo(pool, 50);
	char log[400], line[512];
	int retries = 0;
	snprintf(log, sizeof(log), "%s/joined-%d.log", g.dir, (int)w);
	FILE *f = fopen(log, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		retries += strstr(line, "trying again for up to 60 s") != NULL;
	fclose(f);
	assert_int_equal(retries, 1);
	char path[96];
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	int status;
	assert_int_equal(waitpid(w, &status, 0), w); /* its pool ended: told to stop */
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(brief);
	free(kept);
	free(pool);
}

static void test_bad_joins_refused(void **state)
{
	(void)state;
	char *pool = pool_create(&g, 1);
	char *ext = pool_create_spec(&g, "{\"backend\": \"external\", \"processes\": 1}");
	char path[128], said[512];

	snprintf(path, sizeof(path), "/v1/pools/%s/join", pool);
	expect_problem(&g, "POST", path, NULL, 422, "starts its own workers (backend local)");
	expect_problem(&g, "POST", "/v1/pools/p-0000000000000000/join", NULL, 404, "no such pool");
	snprintf(path, sizeof(path), "/v1/pools/%s/join", ext);
	expect_problem(&g, "POST", path, "{\"uses\": 0}", 400, "'uses'");
	expect_problem(&g, "POST", path, "{\"ttl_s\": 604801}", 400, "'ttl_s'");
	expect_problem(&g, "POST", path, "{\"pool\": \"p-1\"}", 400, "pool");
	/* The join takes no API token, only a join token. */
	const char *json[] = {"Content-Type: application/json", NULL};
	response r = http_as(&g, "POST", "/v1/join", "{\"token\": \"jt-0000\"}", json);
	assert_int_equal(r.status, 401);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "join token unknown, used up or expired");
	response_free(&r);
	r = http_as(&g, "POST", path, "{}", json); /* a token is made with the API token only */
	assert_int_equal(r.status, 401);
	response_free(&r);
	expect_problem(&g, "POST", "/v1/join", "{\"token\": 5}", 400, "field 'token' must be a join token");
	/* What cannot be external. */
	expect_problem(&g, "POST", "/v1/processes", "{\"command\": [\"true\"], \"backend\": \"external\"}", 422,
	               "backend 'external' is for pools");
	expect_problem(&g, "POST", "/v1/managers", "{\"type\": \"dict\", \"backend\": \"external\"}", 422,
	               "backend 'external' is for pools");
	expect_problem(&g, "POST", "/v1/pools", "{\"backend\": \"external\", \"autoscale\": {\"min\": 0, \"max\": 2}}",
	               400, "'autoscale' needs a backend that starts workers");
	/* A worker asked to join over plain HTTP to another host refuses at
	 * once: nothing is sent. */
	gateway elsewhere = g;
	snprintf(elsewhere.base, sizeof(elsewhere.base), "http://192.0.2.1:8080");
	gateway here = g;
	g = elsewhere;
	int code = worker_join_refused("jt-x", said, sizeof(said));
	g = here;
	assert_int_equal(code, 1);
	assert_non_null(strstr(said, "http:// only to this host"));
	free(pool);
	free(ext);
}

/* Over HTTPS and a TLS hub: the worker checks the gateway's certificate
 * by the CA it is given, and gets the hub's CA in its identity; given
 * another CA it refuses, saying why. */
static void test_join_over_tls(void **state)
{
	(void)state;
	char cert[300], key[300], other_cert[300], other_key[300], other_dir[400], said[512];
	const char *args[] = {"--tls-cert", cert, "--tls-key", key, "--hub-server-name", "localhost", NULL};
	gateway h;

	tls_cert_make(g.dir, cert, key);
	snprintf(other_dir, sizeof(other_dir), "%s/other", g.dir);
	assert_int_equal(mkdir(other_dir, 0755), 0);
	tls_cert_make(other_dir, other_cert, other_key);
	gateway_start(&h, args);
	char *pool = pool_create_spec(&h, "{\"backend\": \"external\", \"processes\": 1}");
	char *token = join_token_at(&h, pool, "{\"uses\": 2}");
	char path[96];
	response r;

	assert_int_equal(worker_join_to_end(&h, token, other_cert, said, sizeof(said)), 1);
	assert_non_null(strstr(said, "cannot reach"));
	assert_non_null(strstr(said, "certificate"));
	pid_t w = worker_join_to(&h, token, cert);
	pool_wait_connected(&h, pool, 1);
	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=10", pool);
	r = http(&h, "POST", path, "{\"function\": \"echo\", \"arg\": \"over tls\"}", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "value")), "over tls");
	response_free(&r);
	int status = gateway_stop(&h);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(waitpid(w, &status, 0), w);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(token);
	free(pool);
	gateway_cleanup(&h);
}

/* A worker handed a CA that did not sign the hub's certificate (the
 * gateway's --hub-ca is another's) never talks to the hub: it says why,
 * and gives up at its --gateway-timeout. */
static void test_hub_of_another_ca_refused(void **state)
{
	(void)state;
	char cert[300], key[300], other_cert[300], other_key[300], other_dir[400], log[400];
	const char *args[] = {"--tls-cert",        cert,        "--tls-key", key, "--hub-ca", other_cert,
	                      "--hub-server-name", "localhost", NULL};
	gateway h;
	cm_buf said;

	snprintf(other_dir, sizeof(other_dir), "%s/another-ca", g.dir);
	assert_int_equal(mkdir(other_dir, 0755), 0);
	tls_cert_make(other_dir, other_cert, other_key);
	tls_cert_make(g.dir, cert, key);
	gateway_start(&h, args);
	char *pool = pool_create_spec(&h, "{\"backend\": \"external\", \"processes\": 1}");
	char *token = join_token_at(&h, pool, "{}");
	char path[96];

	setenv("STRAND_GATEWAY_TIMEOUT", "2", 1);
	pid_t w = worker_join_to(&h, token, cert);
	unsetenv("STRAND_GATEWAY_TIMEOUT");
	int status;
	assert_int_equal(waitpid(w, &status, 0), w);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	snprintf(log, sizeof(log), "%s/joined-%d.log", h.dir, (int)w);
	cm_buf_init(&said);
	assert_int_equal(cm_read_tail(log, 1 << 16, &said), CM_OK);
	assert_int_equal(cm_buf_append(&said, "", 1), CM_OK);
	if (!strstr(said.data, "its certificate is not one to trust for localhost") ||
	    !strstr(said.data, "Peer could not be authenticated"))
		fail_msg("the worker said: %s", said.data);
	cm_buf_fini(&said);
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	json_t *view = http_get_ok(&h, path);
	json_t *worker;
	size_t i;
	json_array_foreach (json_object_get(view, "workers"), i, worker)
		assert_string_not_equal(json_string_value(json_object_get(worker, "state")), "connected");
	json_decref(view);
	free(token);
	free(pool);
	gateway_cleanup(&h);
}

/* --gateway-timeout (or STRAND_GATEWAY_TIMEOUT) is whole seconds: "5m"
 * or "abc" is a usage error (64) before any join, not 5 s or the default. */
static void test_bad_gateway_timeout_refused(void **state)
{
	static const char *const runs[] = {
	        "strand-worker --gateway-timeout 5m --join http://127.0.0.1:9",
	        "STRAND_GATEWAY_TIMEOUT=abc strand-worker --join http://127.0.0.1:9",
	        "STRAND_GATEWAY_TIMEOUT=-3 strand-worker --join http://127.0.0.1:9",
	};
	static const char *const words[] = {
	        "strand-worker: --gateway-timeout must be a whole number of seconds",
	        "strand-worker: STRAND_GATEWAY_TIMEOUT must be a whole number of seconds",
	        "strand-worker: STRAND_GATEWAY_TIMEOUT must be a whole number of seconds",
	};
	char cmd[512], out[512];

	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		snprintf(cmd, sizeof(cmd), "cd %s && STRAND_JOIN_TOKEN=t PATH=%s:$PATH %s 2>&1; echo exit=$?",
		         g.dir, STRAND_BIN_DIR, runs[i]);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		size_t n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		pclose(p);
		if (!strstr(out, words[i]) || !strstr(out, "exit=64"))
			fail_msg("%s said '%s', not '%s' and exit 64", runs[i], out, words[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_workers_join_and_replace_the_lost),
	        cmocka_unit_test(test_tokens_expire_and_outlive_a_restart),
	        cmocka_unit_test(test_bad_joins_refused),
	        cmocka_unit_test(test_join_over_tls),
	        cmocka_unit_test(test_hub_of_another_ca_refused),
	        cmocka_unit_test(test_bad_gateway_timeout_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
