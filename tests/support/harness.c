/* Test harness; see harness.h. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/deadline.h"
#include "tests/support/harness.h"

/* Every gateway started and not yet stopped: a failing test jumps out of
 * its body, so an exit handler stops what it left (and with it the workers
 * or containers those gateways started). */
static pid_t running[64];

static void stop_leftovers(void)
{
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++) {
		if (running[i] > 0) {
			kill(running[i], SIGTERM);
			waitpid(running[i], NULL, 0);
		}
	}
}

static void track(pid_t pid, int add)
{
	static int registered;

	if (!registered) {
		atexit(stop_leftovers);
		deadline_arm();
		registered = 1;
	}
	for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++) {
		if (add ? running[i] == 0 : running[i] == pid) {
			running[i] = add ? pid : 0;
			return;
		}
	}
}

static void spawn(gateway *g, const char *const *extra)
{
	char http[64], hub[64];
	const char *argv[34];
	int n = 0;

	snprintf(http, sizeof(http), "127.0.0.1:%d", g->http_port);
	/* With --tls-cert, the hub speaks TLS too. */
	snprintf(hub, sizeof(hub), "%s://127.0.0.1:%d", g->ca_file[0] ? "tls+tcp" : "tcp", g->hub_port);
	argv[n++] = STRAND_BIN_DIR "/strand-gateway";
	argv[n++] = "--http";
	argv[n++] = http;
	argv[n++] = "--hub";
	argv[n++] = hub;
	argv[n++] = "--db";
	argv[n++] = g->db;
	/* Where it would be by default too (next to the database), unless a
	 * test moves the database. */
	argv[n++] = "--token-file";
	argv[n++] = g->token_file;
	for (int i = 0; extra && extra[i] && n < 30; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	g->pid = fork();
	assert_true(g->pid >= 0);
	if (g->pid == 0) {
		int fd = open(g->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		/* A test of what the gateway does at its open-file limit sets it
		 * (soft and hard: the gateway raises its soft limit to the hard). */
		const char *nofile = getenv("STRAND_TEST_OPEN_FILES");
		if (nofile) {
			struct rlimit rl = {(rlim_t)atol(nofile), (rlim_t)atol(nofile)};
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		/* Each gateway makes its own token next to its own database. */
		unsetenv("STRAND_TOKEN_FILE");
		unsetenv("STRAND_TOKEN");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	track(g->pid, 1);
}

/* The token the gateway created next to its database (the tests use the
 * default, as a user would); none with --no-auth or STRAND_TOKEN. */
static int read_token(gateway *g)
{
	char token[260] = "";
	FILE *f = fopen(g->token_file, "r");

	if (f && fgets(token, sizeof(token), f))
		token[strcspn(token, "\r\n")] = '\0';
	if (f)
		fclose(f);
	if (token[0])
		snprintf(g->auth, sizeof(g->auth), "Authorization: Bearer %s", token);
	/* For libstrand and the examples the tests run. */
	setenv("STRAND_TOKEN_FILE", g->token_file, 1);
	return 1;
}

static int wait_healthy(gateway *g)
{
	for (int i = 0; i < 200; i++) {
		int status;
		if (waitpid(g->pid, &status, WNOHANG) == g->pid)
			return 0; /* exited: port taken or bad setup */
		response r = http(g, "GET", "/healthz", NULL, NULL);
		/* Ours, not another test's gateway that took the port first. */
		int ours = r.status == 200 && json_integer_value(json_object_get(r.json, "pid")) == g->pid;
		response_free(&r);
		if (ours)
			return read_token(g);
		usleep(25000);
	}
	return 0;
}

void gateway_start(gateway *g, const char *const *extra_args)
{
	static int curl_ready;

	if (!curl_ready) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		curl_ready = 1;
	}
	memset(g, 0, sizeof(*g));
	/* Not under /tmp: a sandboxed worker has a /tmp of its own, and the
	 * runtimes and files the tests give it are here. */
	mkdir(STRAND_TEST_TMP, 0755);
	snprintf(g->dir, sizeof(g->dir), STRAND_TEST_TMP "/strand-test-XXXXXX");
	assert_non_null(mkdtemp(g->dir));
	chmod(g->dir, 0755); /* and a pool's own uid may read them */
	snprintf(g->db, sizeof(g->db), "%s/strand.db", g->dir);
	snprintf(g->log, sizeof(g->log), "%s/gateway.log", g->dir);
	snprintf(g->token_file, sizeof(g->token_file), "%s/strand.token", g->dir);
	g->extra_args = extra_args;
	for (int i = 0; extra_args && extra_args[i]; i++)
		if (strcmp(extra_args[i], "--tls-cert") == 0 && extra_args[i + 1])
			snprintf(g->ca_file, sizeof(g->ca_file), "%s", extra_args[i + 1]);
	/* Ports from the pid, moved on if taken: tests may run in parallel. */
	for (int attempt = 0; attempt < 10; attempt++) {
		unsigned seed = (unsigned)getpid() * 7919u + (unsigned)attempt * 104729u + (unsigned)time(NULL);
		/* Both below Linux's ephemeral range (32768 and up): a worker
		 * redialing a gateway that is down could otherwise be given the
		 * hub's port as its own source port and hold it (a TCP
		 * self-connect), and the restarted gateway could not listen. */
		g->http_port = 10000 + (int)(seed % 11000);
		g->hub_port = g->http_port + 11000;
		snprintf(g->base, sizeof(g->base), "%s://127.0.0.1:%d", g->ca_file[0] ? "https" : "http", g->http_port);
		spawn(g, extra_args);
		if (wait_healthy(g))
			return;
		gateway_kill(g);
	}
	fail_msg("gateway did not start; see %s", g->log);
}

void gateway_restart(gateway *g)
{
	spawn(g, g->extra_args);
	if (!wait_healthy(g))
		fail_msg("gateway did not restart; see %s", g->log);
}

void gateway_kill(gateway *g)
{
	if (g->pid <= 0)
		return;
	kill(g->pid, SIGKILL);
	while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
		;
	track(g->pid, 0);
	g->pid = 0;
}

char *gateway_output(const char *flags)
{
	char cmd[2048], line[512], dir[] = "/tmp/strand-start-XXXXXX";
	cm_buf out;
	FILE *p;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
	         "%s/strand-gateway --http 127.0.0.1:0 --hub ipc://%s/hub.sock --db %s/strand.db %s 2>&1; echo "
	         "exit=$?; rm -rf '%s'",
	         STRAND_BIN_DIR, dir, dir, flags, dir);
	assert_non_null(p = popen(cmd, "r"));
	cm_buf_init(&out);
	while (fgets(line, sizeof(line), p))
		assert_int_equal(cm_buf_append(&out, line, strlen(line)), CM_OK);
	pclose(p);
	assert_int_equal(cm_buf_append(&out, "", 1), CM_OK);
	return out.data;
}

/* How long a gateway may take to stop after SIGTERM before the test calls
 * it hung: far above any clean stop, far below ctest's timeout. */
#define STOP_LIMIT_MS 60000

int gateway_stop(gateway *g)
{
	int status = -1;
	pid_t r = 0;

	if (g->pid <= 0)
		return 0;
	kill(g->pid, SIGTERM);
	for (int64_t t0 = cm_now_ms(); cm_now_ms() - t0 < STOP_LIMIT_MS; usleep(10000))
		if ((r = waitpid(g->pid, &status, WNOHANG)) != 0 && !(r < 0 && errno == EINTR))
			break;
	if (r == 0) {
		/* Hung: where each thread is goes into the log (gdb, where it is
		 * installed), then it is killed and the test fails on its status. */
		char cmd[1400];
		print_message("the gateway (pid %d) did not stop within %d s of SIGTERM; its threads are in %s\n",
		              (int)g->pid, STOP_LIMIT_MS / 1000, g->log);
		snprintf(cmd, sizeof(cmd), "gdb -batch -p %d -ex 'thread apply all bt' >>'%s' 2>&1", (int)g->pid,
		         g->log);
		if (system(cmd) != 0)
			print_message("(no gdb to show them)\n");
		kill(g->pid, SIGKILL);
		waitpid(g->pid, &status, 0);
	}
	track(g->pid, 0);
	g->pid = 0;
	return status;
}

/* Sanitizer reports of the gateway and of its workers (whose stderr is the
 * gateway's) land in the log: any of them fails the test. */
static void check_log(const gateway *g)
{
	static const char *const marks[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
	                                    "runtime error:", "WARNING: ThreadSanitizer", NULL};
	FILE *f = fopen(g->log, "r");
	char line[4096];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		for (int i = 0; marks[i]; i++) {
			if (strstr(line, marks[i])) {
				fclose(f);
				fail_msg("sanitizer report in %s: %s", g->log, line);
			}
		}
	}
	fclose(f);
}

void gateway_cleanup(gateway *g)
{
	char cmd[400];

	if (g->pid > 0)
		gateway_stop(g);
	check_log(g);
	if (getenv("STRAND_TEST_KEEP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g->dir);
}

/* cm_buf grows by doubling: a 16 MiB page arrives in thousands of pieces. */
static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	return cm_buf_append(ctx, p, size * n) == CM_OK ? size * n : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	response *r = ctx;
	size_t len = size * n;

	if (len > 10 && strncasecmp(p, "Location: ", 10) == 0)
		snprintf(r->location, sizeof(r->location), "%.*s", (int)(len - 12), p + 10);
	if (len > 12 && strncasecmp(p, "Set-Cookie: ", 12) == 0)
		snprintf(r->set_cookie, sizeof(r->set_cookie), "%.*s", (int)(len - 14), p + 12);
	if (len > 18 && strncasecmp(p, "WWW-Authenticate: ", 18) == 0)
		snprintf(r->www_authenticate, sizeof(r->www_authenticate), "%.*s", (int)(len - 20), p + 18);
	return len;
}

response http_as(const gateway *g, const char *method, const char *path, const char *body, const char *const *headers)
{
	return http_bytes(g, method, path, body, body ? strlen(body) : 0, headers);
}

response http_bytes(const gateway *g, const char *method, const char *path, const void *body, size_t len,
                    const char *const *headers)
{
	response r = {0};
	cm_buf s;
	char url[8192];
	struct curl_slist *hdrs = NULL;
	CURL *c = curl_easy_init();
	char *ct = NULL;

	cm_buf_init(&s);
	snprintf(url, sizeof(url), "%s%s", g->base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (g->ca_file[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, g->ca_file);
	hdrs = curl_slist_append(hdrs, "Expect:");
	/* curl would add a form Content-Type to a body: only what is given. */
	hdrs = curl_slist_append(hdrs, "Content-Type:");
	for (int i = 0; headers && headers[i]; i++)
		hdrs = curl_slist_append(hdrs, headers[i]);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (curl_easy_perform(c) == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
		if (ct)
			snprintf(r.content_type, sizeof(r.content_type), "%s", ct);
	}
	r.len = s.len;
	r.body = s.data ? cm_buf_steal(&s) : strdup("");
	r.json = json_loadb(r.body, r.len, 0, NULL);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return r;
}

response http(const gateway *g, const char *method, const char *path, const char *body, const char *header)
{
	const char *headers[4] = {"Content-Type: application/json"};
	int n = 1;

	if (g->auth[0])
		headers[n++] = g->auth;
	if (header)
		headers[n++] = header;
	headers[n] = NULL;
	return http_as(g, method, path, body, headers);
}

response http_json(const gateway *g, const char *method, const char *path, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	response r = http(g, method, path, text, NULL);

	free(text);
	json_decref(body);
	return r;
}

void expect_problem(const gateway *g, const char *method, const char *path, const char *body, int status,
                    const char *detail)
{
	response r = http(g, method, path, body, NULL);

	if (r.status != status || !strstr(r.body, detail))
		fail_msg("%s %s %s: %ld %s, expected %d with '%s'", method, path, body ? body : "", r.status, r.body,
		         status, detail);
	response_free(&r);
}

int http_raw(const gateway *g, const char *request, char *out, size_t out_len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g->http_port)};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;
	int status = 0;
	ssize_t n;

	out[0] = '\0';
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
		close(fd);
		return 0;
	}
	while (got + 1 < out_len && (n = read(fd, out + got, out_len - got - 1)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	if (sscanf(out, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	return status;
}

void response_free(response *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

char *http_create(const gateway *g, const char *path, const char *body)
{
	response r = http(g, "POST", path, body, NULL);
	char *id;

	if (r.status != 201)
		fail_msg("POST %s: %ld %s", path, r.status, r.body);
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

char *pool_create_spec(const gateway *g, const char *spec)
{
	return http_create(g, "/v1/pools", spec);
}

char *pool_create(const gateway *g, int processes)
{
	char spec[64];

	snprintf(spec, sizeof(spec), "{\"processes\":%d}", processes);
	return pool_create_spec(g, spec);
}

json_t *http_get_ok(const gateway *g, const char *path)
{
	response r = http(g, "GET", path, NULL, NULL);
	json_t *j;

	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	j = json_incref(r.json);
	response_free(&r);
	return j;
}

json_t *pool_get(const gateway *g, const char *pool_id)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/%s/%s", pool_id[0] == 'm' ? "managers" : "pools", pool_id);
	return http_get_ok(g, path);
}

json_t *process_run(const gateway *g, const char *spec, char **id)
{
	char path[128];

	*id = http_create(g, "/v1/processes", spec);
	snprintf(path, sizeof(path), "/v1/processes/%s?wait=60", *id);
	return http_get_ok(g, path);
}

char *process_logs(const gateway *g, const char *id)
{
	char path[128];
	response r;
	char *text;

	snprintf(path, sizeof(path), "/v1/processes/%s/logs", id);
	r = http(g, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	text = strdup(r.body);
	response_free(&r);
	return text;
}

long long job_wait_done(const gateway *g, const char *job, long long min_done)
{
	char path[128];
	long long done = 0;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	for (int i = 0; i < 2000; i++) {
		response r = http(g, "GET", path, NULL, NULL);
		done = (long long)json_integer_value(json_object_get(r.json, "done"));
		response_free(&r);
		if (done >= min_done)
			return done;
		usleep(10000);
	}
	fail_msg("job %s: %lld results after 20 s, wanted %lld", job, done, min_done);
	return done;
}

void queue_wait_readers(const gateway *g, const char *queue, long long n)
{
	char path[96];
	long long waiting = 0;

	snprintf(path, sizeof(path), "/v1/queues/%s", queue);
	for (int i = 0; i < 1000 && waiting != n; i++) {
		response r = http(g, "GET", path, NULL, NULL);
		waiting = (long long)json_integer_value(json_object_get(r.json, "waiting_readers"));
		response_free(&r);
		if (waiting != n)
			usleep(10000);
	}
	assert_int_equal(waiting, n);
}

int pool_worker_pids(const gateway *g, const char *pool_id, pid_t *pids, int max)
{
	json_t *p = pool_get(g, pool_id);
	json_t *w;
	size_t k;
	int n = 0;

	json_array_foreach (json_object_get(p, "workers"), k, w) {
		pid_t pid = (pid_t)json_integer_value(json_object_get(w, "pid"));
		/* A worker still being started has no pid yet: never kill(0). */
		if (n < max && pid > 0 && strcmp(json_string_value(json_object_get(w, "state")), "exited") != 0)
			pids[n++] = pid;
	}
	json_decref(p);
	return n;
}

char *job_submit(const gateway *g, const char *pool_id, json_t *spec)
{
	char path[128];
	response r;
	char *id;

	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool_id);
	r = http_json(g, "POST", path, spec);
	if (r.status != 202)
		fail_msg("map: %ld %s", r.status, r.body);
	assert_non_null(strstr(r.location, "/v1/jobs/j-"));
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	response_free(&r);
	return id;
}

void assert_each_index_once(json_t *items, int n)
{
	unsigned char *seen = calloc((size_t)n, 1);
	json_t *it;
	size_t k;

	assert_int_equal(json_array_size(items), n);
	json_array_foreach (items, k, it) {
		json_int_t idx = json_integer_value(json_object_get(it, "index"));
		if (idx < 0 || idx >= n)
			fail_msg("index %lld out of range", (long long)idx);
		if (seen[idx])
			fail_msg("index %lld delivered twice", (long long)idx);
		seen[idx] = 1;
		if (!json_is_true(json_object_get(it, "ok")))
			fail_msg("index %lld failed: %s", (long long)idx,
			         json_string_value(json_object_get(it, "error")));
	}
	free(seen);
}

void pool_wait_connected(const gateway *g, const char *pool_id, int processes)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/%s/%s", pool_id[0] == 'm' ? "managers" : "pools", pool_id);
	/* Long enough for a pod on a loaded single-node cluster; a pool that
	 * fails on the way stops the wait at once. */
	int64_t deadline = cm_now_ms() + 60000;
	for (;;) {
		response r = http(g, "GET", path, NULL, NULL);
		json_t *w;
		size_t k;
		int connected = 0;
		json_array_foreach (json_object_get(r.json, "workers"), k, w)
			connected += strcmp(json_string_value(json_object_get(w, "state")), "connected") == 0;
		const char *state = json_string_value(json_object_get(r.json, "state"));
		int ended = state && (strcmp(state, "failed") == 0 || strcmp(state, "terminated") == 0);
		if (connected >= processes) {
			response_free(&r);
			return;
		}
		if (ended || cm_now_ms() > deadline) {
			char *text = json_dumps(r.json, JSON_INDENT(1));
			fflush(stdout);
			fprintf(stderr, "pool %s, %d of %d workers connected:\n%s\n", pool_id, connected, processes,
			        text ? text : r.body);
			free(text);
			response_free(&r);
			gateway_log_print_tail(g);
			fail_msg("pool %s: workers did not connect", pool_id);
		}
		response_free(&r);
		usleep(25000);
	}
}

json_t *job_results(const gateway *g, const char *job, const char *order, int limit)
{
	json_t *all = json_array();
	char cursor[32] = "0";

	/* Bounded in time, not pages: results may arrive a few at a time. */
	time_t deadline = time(NULL) + 120;

	while (time(NULL) < deadline) {
		char path[256];
		int complete;
		response r;
		snprintf(path, sizeof(path), "/v1/jobs/%s/results?order=%s&limit=%d&wait=10&cursor=%s", job, order,
		         limit, cursor);
		r = http(g, "GET", path, NULL, NULL);
		assert_int_equal(r.status, 200);
		json_array_extend(all, json_object_get(r.json, "items"));
		snprintf(cursor, sizeof(cursor), "%s", json_string_value(json_object_get(r.json, "next_cursor")));
		complete = json_is_true(json_object_get(r.json, "complete"));
		response_free(&r);
		if (complete)
			return all;
	}
	fail_msg("job %s never completed", job);
	return NULL;
}

int process_alive(pid_t pid)
{
	/* A zombie has ended: an orphan waits for an init that may not reap. */
	return cm_process_running(pid);
}

int pool_fixture_setup(void **state)
{
	return pool_fixture_setup_with(state, NULL);
}

int pool_fixture_setup_with(void **state, const char *const *extra_args)
{
	pool_fixture *f = calloc(1, sizeof(*f));

	gateway_start(&f->g, extra_args);
	f->pool = pool_create(&f->g, 2);
	pool_wait_connected(&f->g, f->pool, 2);
	*state = f;
	return 0;
}

int pool_fixture_teardown(void **state)
{
	pool_fixture *f = *state;

	gateway_cleanup(&f->g);
	free(f->pool);
	free(f);
	return 0;
}

int gateway_log_count(const gateway *g, const char *text)
{
	cm_buf log;
	int n = 0;

	cm_buf_init(&log);
	assert_int_equal(cm_read_tail(g->log, 1 << 20, &log), CM_OK);
	assert_int_equal(cm_buf_append(&log, "", 1), CM_OK);
	for (const char *at = log.data; (at = strstr(at, text)); at++)
		n++;
	cm_buf_fini(&log);
	return n;
}

void gateway_log_print_tail(const gateway *g)
{
	cm_buf log;

	cm_buf_init(&log);
	/* Not print_message: cmocka cuts what it prints at 1 KiB. */
	fflush(stdout);
	if (cm_read_tail(g->log, 4096, &log) == CM_OK)
		fprintf(stderr, "--- the gateway's log ends:\n%.*s\n", (int)log.len, log.data);
	cm_buf_fini(&log);
}

void tls_cert_make(const char *dir, char cert[300], char key[300])
{
	char cmd[1024];

	snprintf(cert, 300, "%s/cert.pem", dir);
	snprintf(key, 300, "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
	         "subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s -out %s 2>/dev/null",
	         key, cert);
	if (system(cmd) != 0) {
		print_message("skipped: no openssl to make a certificate\n");
		skip();
	}
}

void with_tls_args(void (*run)(const char *const *args))
{
	char dir[] = "/tmp/strand-tls-XXXXXX", cert[300], key[300];
	const char *args[] = {"--tls-cert", cert, "--tls-key", key, NULL};

	assert_non_null(mkdtemp(dir));
	tls_cert_make(dir, cert, key);
	run(args);
	unlink(cert);
	unlink(key);
	rmdir(dir);
}

long proc_status_number(pid_t pid, const char *field)
{
	char path[64], line[256];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	assert_non_null(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			n = atol(line + strlen(field));
	fclose(f);
	assert_true(n >= 0);
	return n;
}

/* The inodes of pid's established TCP sockets with an end on port (its
 * network namespace's /proc/PID/net/tcp and tcp6); returns how many. */
static int tcp_socket_inodes(pid_t pid, int port, unsigned long *inodes, int max)
{
	const char *tables[] = {"tcp", "tcp6"};
	int n = 0;

	for (size_t t = 0; t < 2; t++) {
		char path[64], line[512];
		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, tables[t]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f) && n < max) {
			char local[64], remote[64];
			unsigned state;
			unsigned long inode;
			if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &state, &inode) !=
			    4)
				continue; /* the heading */
			const char *lp = strrchr(local, ':'), *rp = strrchr(remote, ':');
			if (state == 1 /* ESTABLISHED */ && lp && rp &&
			    (strtol(lp + 1, NULL, 16) == port || strtol(rp + 1, NULL, 16) == port))
				inodes[n++] = inode;
		}
		fclose(f);
	}
	return n;
}

int tcp_nodelay_count(pid_t pid, int port, int *nodelay)
{
	unsigned long inodes[64];
	int ninodes = tcp_socket_inodes(pid, port, inodes, 64), found = 0;
	char dir_path[64];
	DIR *dir;
	struct dirent *d;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	*nodelay = 0;
	assert_true(pidfd >= 0);
	snprintf(dir_path, sizeof(dir_path), "/proc/%d/fd", (int)pid);
	assert_non_null(dir = opendir(dir_path));
	while ((d = readdir(dir))) {
		char link[320], target[64];
		unsigned long inode;
		snprintf(link, sizeof(link), "%s/%s", dir_path, d->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%lu]", &inode) != 1)
			continue;
		for (int i = 0; i < ninodes; i++) {
			if (inodes[i] != inode)
				continue;
			/* A copy of its descriptor, to ask the socket itself. */
			int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(d->d_name), 0);
			int on = 0;
			socklen_t on_len = sizeof(on);
			assert_true(fd >= 0);
			assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &on_len), 0);
			close(fd);
			found++;
			*nodelay += on != 0;
		}
	}
	closedir(dir);
	close(pidfd);
	return found;
}

pid_t process_named_under(pid_t root, const char *name)
{
	DIR *dir = opendir("/proc");
	struct dirent *d;
	pid_t found = 0;

	assert_non_null(dir);
	while (!found && (d = readdir(dir))) {
		pid_t pid = (pid_t)atoi(d->d_name), up;
		char comm[64], state;
		if (pid <= 0 || cm_process_stat(pid, comm, sizeof(comm), &state, &up) != 0 || strcmp(comm, name) != 0)
			continue;
		/* Its ancestors, up to root or to init. */
		while (up > 1 && up != root && cm_process_stat(up, comm, sizeof(comm), &state, &up) == 0)
			;
		if (up == root)
			found = pid;
	}
	closedir(dir);
	return found;
}
