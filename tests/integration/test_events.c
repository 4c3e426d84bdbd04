/*
 * GET /v1/events, read as a browser's EventSource reads it (HTTP/1.1,
 * chunked): a pool's creation and its workers' states, a job made, its
 * progress and its end with exact counts, a process's start and exit code,
 * a pool's termination; a reconnect with Last-Event-ID gets exactly the
 * frames after it, an id the gateway no longer knows gets a reset; ?pool=
 * keeps one pool's events; a reader that stops reading is dropped, not
 * buffered for; the route's errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "tests/support/harness.h"

/* One event stream, de-chunked as it is read. */
typedef struct stream {
	int fd;
	int status;
	cm_buf raw; /* bytes read, not yet de-chunked */
	cm_buf text; /* the event stream's text, not yet parsed */
	int ended; /* the last chunk came */
	int closed; /* the gateway closed the connection */
} stream;

typedef struct event {
	char id[64];
	char type[32];
	json_t *data; /* NULL for a comment-only or data-less frame */
	char frame[4096]; /* the frame as sent, up to its blank line */
} event;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads more into raw, up to until (0: the gateway closed, -1: time out). */
static int stream_fill(stream *s, int64_t until)
{
	char buf[65536];
	struct pollfd p = {.fd = s->fd, .events = POLLIN};
	int64_t left = until - now_ms();

	if (left <= 0 || poll(&p, 1, (int)left) <= 0)
		return -1;
	ssize_t n = read(s->fd, buf, sizeof(buf));
	if (n <= 0) {
		s->closed = 1;
		return 0;
	}
	cm_buf_append(&s->raw, buf, (size_t)n);
	return 1;
}

/* Moves whole chunks from raw to text. */
static void dechunk(stream *s)
{
	for (;;) {
		char *crlf = s->raw.len ? memmem(s->raw.data, s->raw.len, "\r\n", 2) : NULL;
		if (!crlf)
			return;
		size_t size = strtoul(s->raw.data, NULL, 16);
		size_t head = (size_t)(crlf - s->raw.data) + 2;
		if (s->raw.len < head + size + 2)
			return;
		if (size == 0)
			s->ended = 1;
		cm_buf_append(&s->text, s->raw.data + head, size);
		memmove(s->raw.data, s->raw.data + head + size + 2, s->raw.len - head - size - 2);
		s->raw.len -= head + size + 2;
	}
}

/* Connects and sends the request; reads the status line and headers. A
 * small receive buffer (rcvbuf > 0) makes a reader that does not read. */
static void stream_open(stream *s, const gateway *g, const char *path, const char *last_id, int rcvbuf)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g->http_port)};
	char req[1024];
	char *end;

	memset(s, 0, sizeof(*s));
	cm_buf_init(&s->raw);
	cm_buf_init(&s->text);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	if (rcvbuf)
		setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	assert_int_equal(connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\nAccept: text/event-stream\r\n%s%s%s\r\n", path,
	                 g->http_port, g->auth, last_id ? "Last-Event-ID: " : "", last_id ? last_id : "",
	                 last_id ? "\r\n" : "");
	assert_int_equal(write(s->fd, req, (size_t)n), n);
	int64_t until = now_ms() + 10000;
	while (!(end = s->raw.len ? memmem(s->raw.data, s->raw.len, "\r\n\r\n", 4) : NULL))
		assert_int_equal(stream_fill(s, until), 1);
	*end = '\0';
	assert_int_equal(sscanf(s->raw.data, "HTTP/1.1 %d", &s->status), 1);
	if (s->status == 200) {
		assert_non_null(strcasestr(s->raw.data, "\r\nContent-Type: text/event-stream"));
		assert_non_null(strcasestr(s->raw.data, "\r\nTransfer-Encoding: chunked"));
	}
	size_t head = (size_t)(end - s->raw.data) + 4;
	memmove(s->raw.data, s->raw.data + head, s->raw.len - head);
	s->raw.len -= head;
}

static void stream_close(stream *s)
{
	close(s->fd);
	cm_buf_fini(&s->raw);
	cm_buf_fini(&s->text);
}

/* The next frame with an event (comments and "retry:" skipped) within
 * timeout_ms: 1, or 0 when the stream ended or the time ran out. */
static int stream_next(stream *s, event *ev, int timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;

	memset(ev, 0, sizeof(*ev));
	for (;;) {
		dechunk(s);
		char *blank = s->text.len ? memmem(s->text.data, s->text.len, "\n\n", 2) : NULL;
		if (blank) {
			size_t len = (size_t)(blank - s->text.data);
			snprintf(ev->frame, sizeof(ev->frame), "%.*s", (int)len, s->text.data);
			memmove(s->text.data, blank + 2, s->text.len - len - 2);
			s->text.len -= len + 2;
			for (char *line = strtok(ev->frame, "\n"); line; line = strtok(NULL, "\n")) {
				if (strncmp(line, "id: ", 4) == 0)
					snprintf(ev->id, sizeof(ev->id), "%s", line + 4);
				else if (strncmp(line, "event: ", 7) == 0)
					snprintf(ev->type, sizeof(ev->type), "%s", line + 7);
				else if (strncmp(line, "data: ", 6) == 0)
					ev->data = json_loads(line + 6, 0, NULL);
			}
			if (ev->type[0])
				return 1;
			memset(ev, 0, sizeof(*ev));
			continue;
		}
		if (s->ended || stream_fill(s, until) <= 0)
			return 0;
	}
}

static void event_fini(event *ev)
{
	json_decref(ev->data);
	ev->data = NULL;
}

static const char *field(const event *ev, const char *name)
{
	return json_string_value(json_object_get(ev->data, name));
}

static long long number(const event *ev, const char *name)
{
	return json_integer_value(json_object_get(ev->data, name));
}

/* The next event of type for id (its "id" field, or a progress's "job"),
 * skipping others; fails the test after 20 s. */
static void expect(stream *s, event *ev, const char *type, const char *id)
{
	while (stream_next(s, ev, 20000)) {
		const char *of = strcmp(ev->type, "progress") == 0 ? field(ev, "job") : field(ev, "id");
		if (strcmp(ev->type, type) == 0 && of && strcmp(of, id) == 0)
			return;
		event_fini(ev);
	}
	fail_msg("no '%s' event for %s", type, id);
}

static void events_follow_a_pool_its_workers_a_job_and_a_process(void **state)
{
	gateway g;
	stream s;
	event ev;

	(void)state;
	gateway_start(&g, NULL);
	stream_open(&s, &g, "/v1/events", NULL, 0);
	assert_int_equal(s.status, 200);

	char *pool = pool_create(&g, 2);
	expect(&s, &ev, "pool", pool);
	assert_string_equal(field(&ev, "state"), "active");
	assert_int_equal(number(&ev, "processes"), 2);
	assert_string_equal(field(&ev, "backend"), "local");
	event_fini(&ev);

	/* Each worker of the pool's view: starting, then connected, with its pid. */
	json_t *view = pool_get(&g, pool);
	json_t *workers = json_object_get(view, "workers");
	assert_int_equal(json_array_size(workers), 2);
	int seen[2] = {0, 0}; /* per worker: 1 starting, 2 connected */
	while ((seen[0] < 2 || seen[1] < 2) && stream_next(&s, &ev, 20000)) {
		if (strcmp(ev.type, "worker") == 0) {
			int which = -1;
			for (int i = 0; i < 2; i++)
				if (strcmp(field(&ev, "id"), json_string_value(json_object_get(
				                                     json_array_get(workers, (size_t)i), "id"))) == 0)
					which = i;
			assert_true(which >= 0);
			assert_string_equal(field(&ev, "pool"), pool);
			if (strcmp(field(&ev, "state"), "starting") == 0) {
				assert_int_equal(seen[which], 0);
				seen[which] = 1;
			} else {
				assert_string_equal(field(&ev, "state"), "connected");
				assert_int_equal(seen[which], 1); /* it started first */
				assert_true(atoi(field(&ev, "handle")) > 0);
				seen[which] = 2;
			}
		}
		event_fini(&ev);
	}
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 2);
	json_decref(view);

	/* A job: made, its progress in order, its end with exact counts. */
	char *job = job_submit(&g, pool,
	                       json_pack("{s:s, s:[i,i,i,i,i,i,i,i,i,i]}", "function", "sleep", "args", 100, 100, 100,
	                                 100, 100, 100, 100, 100, 100, 100));
	expect(&s, &ev, "job", job);
	assert_string_equal(field(&ev, "pool"), pool);
	assert_string_equal(field(&ev, "state"), "running");
	assert_int_equal(number(&ev, "total"), 10);
	event_fini(&ev);
	long long last_done = 0;
	int progress = 0;
	for (;;) {
		assert_true(stream_next(&s, &ev, 20000));
		if (strcmp(ev.type, "progress") == 0) {
			assert_string_equal(field(&ev, "job"), job);
			assert_string_equal(field(&ev, "state"), "running");
			assert_int_equal(number(&ev, "total"), 10);
			assert_true(number(&ev, "done") > last_done && number(&ev, "done") < 10);
			assert_int_equal(number(&ev, "failed"), 0);
			last_done = number(&ev, "done");
			progress++;
		} else if (strcmp(ev.type, "job") == 0) {
			assert_string_equal(field(&ev, "id"), job);
			break;
		}
		event_fini(&ev);
	}
	assert_true(progress >= 1); /* the first result comes alone: the job was not done then */
	assert_string_equal(field(&ev, "state"), "done");
	assert_int_equal(number(&ev, "done"), 10);
	assert_int_equal(number(&ev, "failed"), 0);
	assert_non_null(field(&ev, "ended_at"));
	event_fini(&ev);

	/* Failures are counted in the job's end. */
	char *failing = job_submit(&g, pool, json_pack("{s:s, s:[s,s,s]}", "function", "fail", "args", "a", "b", "c"));
	expect(&s, &ev, "job", failing);
	event_fini(&ev);
	expect(&s, &ev, "job", failing);
	assert_string_equal(field(&ev, "state"), "done");
	assert_int_equal(number(&ev, "done"), 3);
	assert_int_equal(number(&ev, "failed"), 3);
	event_fini(&ev);

	/* A job's event is its view as GET shows it, with a name that JSON
	 * escapes (an rt: name may hold any printable character). */
	const char *odd = "rt:m\"od:f\\n";
	char *strange = job_submit(&g, pool, json_pack("{s:s, s:[i]}", "function", odd, "args", 1));
	expect(&s, &ev, "job", strange);
	assert_string_equal(field(&ev, "function"), odd);
	event_fini(&ev);
	expect(&s, &ev, "job", strange);
	assert_string_equal(field(&ev, "state"), "done");
	char job_path[128];
	snprintf(job_path, sizeof(job_path), "/v1/jobs/%s", strange);
	json_t *strange_view = http_get_ok(&g, job_path);
	assert_true(json_equal(ev.data, strange_view));
	json_decref(strange_view);
	event_fini(&ev);
	free(strange);

	/* A process: running, then exited with its code. */
	char *proc = http_create(&g, "/v1/processes", "{\"command\": [\"sh\", \"-c\", \"exit 3\"]}");
	expect(&s, &ev, "process", proc);
	assert_string_equal(field(&ev, "state"), "running");
	event_fini(&ev);
	expect(&s, &ev, "process", proc);
	assert_string_equal(field(&ev, "state"), "exited");
	assert_int_equal(number(&ev, "exit_code"), 3);
	event_fini(&ev);

	/* A deleted pool: terminating, each worker exits, terminated. */
	char path[128];
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	response r = http(&g, "DELETE", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	expect(&s, &ev, "pool", pool);
	assert_string_equal(field(&ev, "state"), "terminating");
	event_fini(&ev);
	int exited = 0;
	while (stream_next(&s, &ev, 20000)) {
		if (strcmp(ev.type, "worker") == 0 && strcmp(field(&ev, "state"), "exited") == 0)
			exited++;
		int terminated = strcmp(ev.type, "pool") == 0 && strcmp(field(&ev, "state"), "terminated") == 0;
		event_fini(&ev);
		if (terminated)
			break;
	}
	assert_int_equal(exited, 2);

	stream_close(&s);
	free(proc);
	free(failing);
	free(job);
	free(pool);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

/* Reads n events: their ids, and what each says (type, id, state). */
static void read_n(stream *s, int n, char ids[][64], char says[][128])
{
	event ev;

	for (int i = 0; i < n; i++) {
		assert_true(stream_next(s, &ev, 20000));
		snprintf(ids[i], 64, "%s", ev.id);
		snprintf(says[i], 128, "%s %s %s", ev.type, field(&ev, "id") ? field(&ev, "id") : "-",
		         field(&ev, "state") ? field(&ev, "state") : "-");
		event_fini(&ev);
	}
}

static void events_resume_after_last_event_id(void **state)
{
	gateway g;
	stream s;
	event ev;
	char ids[5][64], says[5][128], ids2[3][64], says2[3][128], expected[128];

	(void)state;
	gateway_start(&g, NULL);
	stream_open(&s, &g, "/v1/events", NULL, 0);
	char *pool = pool_create(&g, 1);
	pool_wait_connected(&g, pool, 1);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:[i]}", "function", "echo", "args", 7));
	json_decref(job_results(&g, job, "input", 10));
	read_n(&s, 5, ids, says);
	stream_close(&s);
	snprintf(expected, sizeof(expected), "pool %s active", pool);
	assert_string_equal(says[0], expected);
	assert_non_null(strstr(says[1], " starting"));
	assert_non_null(strstr(says[2], " connected"));
	snprintf(expected, sizeof(expected), "job %s running", job);
	assert_string_equal(says[3], expected);
	snprintf(expected, sizeof(expected), "job %s done", job);
	assert_string_equal(says[4], expected);
	for (int i = 1; i < 5; i++) { /* one run, numbered one after another */
		const char *dash = strchr(ids[i], '-'), *prev = strchr(ids[i - 1], '-');
		assert_non_null(dash);
		assert_non_null(prev);
		assert_int_equal(dash - ids[i], prev - ids[i - 1]);
		assert_int_equal(strncmp(ids[i], ids[i - 1], (size_t)(dash - ids[i])), 0);
		assert_int_equal(atoll(dash + 1), atoll(prev + 1) + 1);
	}

	/* Resumed after the second: exactly the third, fourth and fifth. */
	stream_open(&s, &g, "/v1/events", ids[1], 0);
	assert_int_equal(s.status, 200);
	read_n(&s, 3, ids2, says2);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(ids2[i], ids[i + 2]);
		assert_string_equal(says2[i], says[i + 2]);
	}
	stream_close(&s);

	/* Resumed after the newest: nothing until something happens. */
	stream_open(&s, &g, "/v1/events", ids[4], 0);
	assert_false(stream_next(&s, &ev, 500));
	char *job2 = job_submit(&g, pool, json_pack("{s:s, s:[i]}", "function", "echo", "args", 8));
	expect(&s, &ev, "job", job2);
	event_fini(&ev);
	stream_close(&s);

	/* An id of another run, or none of this one's: a reset naming where
	 * the stream now is, then what comes after it. */
	const char *stale[] = {"1-3", "junk", NULL};
	for (int i = 0; stale[i]; i++) {
		stream_open(&s, &g, "/v1/events", stale[i], 0);
		assert_true(stream_next(&s, &ev, 5000));
		assert_string_equal(ev.type, "reset");
		assert_non_null(strstr(field(&ev, "detail"), "no longer kept"));
		assert_non_null(strchr(ev.id, '-'));
		assert_int_equal(strncmp(ev.id, ids[0], (size_t)(strchr(ids[0], '-') - ids[0]) + 1), 0); /* this run */
		assert_true(atoll(strchr(ev.id, '-') + 1) > atoll(strchr(ids[4], '-') + 1)); /* job2's are in */
		event_fini(&ev);
		stream_close(&s);
	}

	free(job2);
	free(job);
	free(pool);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

static void events_of_one_pool(void **state)
{
	gateway g;
	stream s;
	event ev;

	(void)state;
	gateway_start(&g, NULL);
	char *a = pool_create(&g, 1), *b = pool_create(&g, 1);
	pool_wait_connected(&g, a, 1);
	pool_wait_connected(&g, b, 1);
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?pool=%s", a);
	stream_open(&s, &g, path, NULL, 0);
	assert_int_equal(s.status, 200);
	char *on_b = job_submit(&g, b, json_pack("{s:s, s:[i]}", "function", "echo", "args", 1));
	json_decref(job_results(&g, on_b, "input", 10));
	char *on_a = job_submit(&g, a, json_pack("{s:s, s:[i]}", "function", "echo", "args", 2));
	json_decref(job_results(&g, on_a, "input", 10));
	/* b's job ended before a's was made: a's are the first two. */
	for (int i = 0; i < 2; i++) {
		assert_true(stream_next(&s, &ev, 20000));
		assert_string_equal(ev.type, "job");
		assert_string_equal(field(&ev, "id"), on_a);
		assert_string_equal(field(&ev, "pool"), a);
		assert_string_equal(field(&ev, "state"), i == 0 ? "running" : "done");
		event_fini(&ev);
	}
	stream_close(&s);
	free(on_a);
	free(on_b);
	free(a);
	free(b);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

/* A reader that stops reading while thousands of events happen is let
 * go, not buffered for: once it reads again it finds a last "dropped"
 * frame, or (when the gateway could not write to it for the idle timeout,
 * 10 s) a closed connection; either way before it got every event. */
static void events_slow_reader_is_dropped(void **state)
{
	gateway g;
	stream s;
	event ev;
	char path[128];

	(void)state;
	gateway_start(&g, NULL);
	char *pool = pool_create(&g, 1);
	pool_wait_connected(&g, pool, 1);
	stream_open(&s, &g, "/v1/events", NULL, 4096);
	assert_int_equal(s.status, 200);
	/* Each apply says two events (made, done): half again the ring, more
	 * than the ring and both sockets' buffers hold. */
	snprintf(path, sizeof(path), "/v1/pools/%s/apply", pool);
	for (int i = 0; i < 3000; i++) {
		response r = http(&g, "POST", path, "{\"function\": \"noop\", \"arg\": 0}", NULL);
		assert_int_equal(r.status, 202);
		response_free(&r);
	}
	int events = 0, dropped = 0;
	while (stream_next(&s, &ev, 20000)) {
		events++;
		dropped = strcmp(ev.type, "dropped") == 0;
		event_fini(&ev);
	}
	if (dropped) /* its last frame, then the end of the stream */
		assert_true(s.ended);
	else /* timed out writing to it */
		assert_true(s.closed);
	assert_true(events < 6000);
	stream_close(&s);
	free(pool);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

static void events_route_errors(void **state)
{
	gateway g;
	const char *no_token[] = {NULL};

	(void)state;
	gateway_start(&g, NULL);
	response r = http_as(&g, "GET", "/v1/events", NULL, no_token);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.content_type, "application/problem+json");
	response_free(&r);
	r = http(&g, "POST", "/v1/events", "{}", NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "use GET on /v1/events");
	response_free(&r);
	r = http(&g, "GET", "/v1/events?pool=", NULL, NULL);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")),
	                    "query 'pool' must be a pool's or a manager's id");
	response_free(&r);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(events_follow_a_pool_its_workers_a_job_and_a_process),
	        cmocka_unit_test(events_resume_after_last_event_id),
	        cmocka_unit_test(events_of_one_pool),
	        cmocka_unit_test(events_slow_reader_is_dropped),
	        cmocka_unit_test(events_route_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
