/*
 * The worker's own socket to a tcp:// or ipc:// hub (worker/hub_socket.c),
 * against a peer in this test (its TLS against a real hub: test_values,
 * test_worker_queues, test_join): frames whole however the peer cuts them,
 * every error as the nng code hub_link's callers compare, the connection's
 * end seen between exchanges, nothing inherited by what a task runs; and
 * hub_link over it dialing again after the hub closed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "worker/hub_link.h"
#include "worker/hub_socket.h"

#define TIMEOUT_MS 5000

/* A listener on loopback (the kernel's port) or at a path; its URL. */
typedef struct peer {
	int listener;
	char url[160];
	char dir[64];
} peer;

static void peer_tcp(peer *p)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	p->dir[0] = 0;
	assert_true((p->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(p->listener, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->listener, 4), 0);
	assert_int_equal(getsockname(p->listener, (struct sockaddr *)&a, &len), 0);
	snprintf(p->url, sizeof(p->url), "tcp://127.0.0.1:%u", ntohs(a.sin_port));
}

static void peer_ipc(peer *p)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	snprintf(p->dir, sizeof(p->dir), "/tmp/strand-hub-socket-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/hub.sock", p->dir);
	assert_true((p->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(p->listener, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->listener, 4), 0);
	snprintf(p->url, sizeof(p->url), "ipc://%s", a.sun_path);
}

static void peer_fini(peer *p)
{
	close(p->listener);
	if (p->dir[0]) {
		char path[128];
		snprintf(path, sizeof(path), "%s/hub.sock", p->dir);
		unlink(path);
		rmdir(p->dir);
	}
}

/* A connection the code under test dialed, within TIMEOUT_MS: a dial that
 * never comes fails the test instead of hanging it. */
static int accept_within(int listener)
{
	struct pollfd p = {.fd = listener, .events = POLLIN};

	assert_int_equal(poll(&p, 1, TIMEOUT_MS), 1);
	int conn = accept(listener, NULL, NULL);
	assert_true(conn >= 0);
	return conn;
}

/* s dialed to p: the peer's end of the connection. */
static int dial_peer(peer *p, hub_socket *s)
{
	assert_int_equal(hub_socket_dial(s, p->url, TIMEOUT_MS, NULL), 0);
	return accept_within(p->listener);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *at = buf;

	while (len) {
		ssize_t n = write(fd, at, len);
		assert_true(n > 0);
		at += n;
		len -= (size_t)n;
	}
}

static void read_all(int fd, void *buf, size_t len)
{
	uint8_t *at = buf;

	while (len) {
		ssize_t n = read(fd, at, len);
		assert_true(n > 0);
		at += n;
		len -= (size_t)n;
	}
}

/* The peer's side of a frame: its prefix, then its bytes. */
static void peer_reads_frame(int fd, const uint8_t *want, size_t want_len)
{
	uint8_t prefix[WIRE_PREFIX];
	uint8_t *got = malloc(want_len ? want_len : 1);

	read_all(fd, prefix, WIRE_PREFIX);
	assert_int_equal(wire_prefix_get(prefix), want_len);
	read_all(fd, got, want_len);
	assert_memory_equal(got, want, want_len);
	free(got);
}

/* A frame written in pieces of `piece` bytes, 2 ms apart, from a thread:
 * the reader gets them as they come. */
typedef struct slow_write {
	int fd;
	uint8_t *bytes; /* prefix and frame */
	size_t len, piece;
} slow_write;

static void *slow_writer(void *arg)
{
	slow_write *w = arg;

	for (size_t at = 0; at < w->len; at += w->piece) {
		size_t n = w->len - at < w->piece ? w->len - at : w->piece;
		write_all(w->fd, w->bytes + at, n);
		usleep(2000);
	}
	return NULL;
}

static uint8_t *framed(const uint8_t *frame, size_t len)
{
	uint8_t *out = malloc(WIRE_PREFIX + len);

	wire_prefix_put(out, len);
	memcpy(out + WIRE_PREFIX, frame, len);
	return out;
}

static void pattern(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed);
}

/* One exchange each way on a connection to p: the request as the peer
 * reads it, then answers of each size, whole or cut in pieces. */
static void exchanges_on(peer *p)
{
	static const size_t sizes[] = {0, 1, 37, 4095, 4096, 4097, 200000};
	static const size_t pieces[] = {1, 3, 1000, 65536};
	hub_socket s;
	uint8_t request[100];
	int conn;

	conn = dial_peer(p, &s);
	/* A task's process does not inherit it. */
	assert_true(fcntl(s.fd, F_GETFD) & FD_CLOEXEC);
	pattern(request, sizeof(request), 7);
	assert_int_equal(hub_socket_send(&s, request, sizeof(request), TIMEOUT_MS), 0);
	peer_reads_frame(conn, request, sizeof(request));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
			if (sizes[i] / pieces[k] > 50)
				continue; /* 2 ms a piece: a few dozen pieces a frame are enough */
			uint8_t *answer = malloc(sizes[i] + 1), *got = NULL;
			size_t got_len = 12345;
			pthread_t t;
			pattern(answer, sizes[i], (unsigned)(i + k));
			slow_write w = {.fd = conn,
			                .bytes = framed(answer, sizes[i]),
			                .len = WIRE_PREFIX + sizes[i],
			                .piece = pieces[k]};
			assert_int_equal(pthread_create(&t, NULL, slow_writer, &w), 0);
			assert_int_equal(hub_socket_recv(&s, PROTO_FRAME_MAX, TIMEOUT_MS, &got, &got_len), 0);
			pthread_join(t, NULL);
			assert_int_equal(got_len, sizes[i]);
			assert_memory_equal(got, answer, sizes[i]);
			assert_false(hub_socket_over(&s)); /* nothing after the frame, and the peer is there */
			free(got);
			free(w.bytes);
			free(answer);
		}
	}
	close(conn);
	hub_socket_close(&s);
	assert_int_equal(s.fd, -1);
}

static void test_tcp_exchanges(void **state)
{
	peer p;

	(void)state;
	peer_tcp(&p);
	exchanges_on(&p);
	peer_fini(&p);
}

static void test_ipc_exchanges(void **state)
{
	peer p;

	(void)state;
	peer_ipc(&p);
	exchanges_on(&p);
	peer_fini(&p);
}

/* tcp6:// and a bracketed address, where this machine has ::1. */
static void test_ipv6(void **state)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char url[80];
	hub_socket s;

	(void)state;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (l >= 0)
			close(l);
		skip();
	}
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	snprintf(url, sizeof(url), "tcp6://[::1]:%u", ntohs(a.sin6_port));
	assert_int_equal(hub_socket_dial(&s, url, TIMEOUT_MS, NULL), 0);
	int conn = accept_within(l);
	assert_true(conn >= 0);
	assert_int_equal(hub_socket_send(&s, (const uint8_t *)"v6", 2, TIMEOUT_MS), 0);
	peer_reads_frame(conn, (const uint8_t *)"v6", 2);
	close(conn);
	hub_socket_close(&s);
	close(l);
}

/* The hub URLs a worker dials (cm_socket_url, which the hub listens by
 * too): the scheme's length, the address family, and whether in TLS. */
static void test_which_urls(void **state)
{
	static const struct {
		const char *url;
		size_t scheme;
		int family, tls;
	} urls[] = {
	        {"tcp://127.0.0.1:7070", 6, AF_UNSPEC, 0},
	        {"tcp4://127.0.0.1:7070", 7, AF_INET, 0},
	        {"tcp6://[::1]:7070", 7, AF_INET6, 0},
	        {"ipc:///tmp/hub.sock", 6, AF_UNIX, 0},
	        {"tls+tcp://127.0.0.1:7070", 10, AF_UNSPEC, 1},
	        {"tls+tcp4://127.0.0.1:7070", 11, AF_INET, 1},
	        {"tls+tcp6://[::1]:7070", 11, AF_INET6, 1},
	        {"tls+ipc:///tmp/hub.sock", 0, 0, 0},
	        {"ws://127.0.0.1:7070", 0, 0, 0},
	        {"TCP://127.0.0.1:7070", 0, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		int family = -1, tls = -1;
		size_t scheme = cm_socket_url(urls[i].url, &family, &tls);
		if (scheme != urls[i].scheme || (scheme && (family != urls[i].family || tls != urls[i].tls)))
			fail_msg("%s: scheme %zu, family %d, tls %d", urls[i].url, scheme, family, tls);
	}
}

static void test_bad_urls(void **state)
{
	static const char *const bad[] = {
	        "tcp://127.0.0.1",
	        "tcp://127.0.0.1:",
	        "tcp://127.0.0.1:7x",
	        "tcp://:7070",
	        "tcp://[::1:7070",
	        "tcp://[::1]7070",
	        "tcp://::1:7070",
	        "tcp://[]:7070",
	        "tcp://[::1]:",
	        "tcp://127.0.0.1:123456789",
	        "tcp://127.0.0.1:99999",
	        "tcp://127.0.0.1:0",
	        "tls+tcp://127.0.0.1:7070",
	        "ipc://",
	};
	char long_path[200];
	hub_socket s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hub_socket_dial(&s, bad[i], TIMEOUT_MS, NULL), NNG_EADDRINVAL);
		assert_int_equal(s.fd, -1);
	}
	snprintf(long_path, sizeof(long_path), "ipc:///tmp/%0150d", 0); /* over sun_path's 108 */
	assert_int_equal(hub_socket_dial(&s, long_path, TIMEOUT_MS, NULL), NNG_EADDRINVAL);
	assert_int_equal(s.fd, -1);
}

static void test_refused(void **state)
{
	peer p;
	hub_socket s;

	(void)state;
	peer_tcp(&p);
	close(p.listener); /* nobody listens there now */
	assert_int_equal(hub_socket_dial(&s, p.url, TIMEOUT_MS, NULL), NNG_ECONNREFUSED);
	assert_int_equal(s.fd, -1);
	peer_ipc(&p);
	close(p.listener);
	assert_int_equal(hub_socket_dial(&s, p.url, TIMEOUT_MS, NULL), NNG_ECONNREFUSED);
	p.listener = -1;
	peer_fini(&p);
}

/* Each way a frame can go wrong, on a fresh connection. */
static void test_bad_frames(void **state)
{
	uint8_t two[2 * (WIRE_PREFIX + 3)], big[WIRE_PREFIX], cut[WIRE_PREFIX + 2];
	uint8_t *got = NULL;
	size_t got_len = 0;
	hub_socket s;
	peer p;
	int conn;

	(void)state;
	peer_tcp(&p);

	/* Silence: the timeout, not a wait without end. */
	conn = dial_peer(&p, &s);
	assert_int_equal(hub_socket_recv(&s, PROTO_FRAME_MAX, 50, &got, &got_len), NNG_ETIMEDOUT);
	/* Two frames at once: the hub answers one exchange at a time. */
	wire_prefix_put(two, 3);
	memcpy(two + WIRE_PREFIX, "abc", 3);
	memcpy(two + WIRE_PREFIX + 3, two, WIRE_PREFIX + 3);
	write_all(conn, two, sizeof(two));
	usleep(20000);
	assert_int_equal(hub_socket_recv(&s, PROTO_FRAME_MAX, TIMEOUT_MS, &got, &got_len), NNG_EPROTO);
	close(conn);
	hub_socket_close(&s);

	/* A length over the cap, refused before anything is allocated. */
	conn = dial_peer(&p, &s);
	wire_prefix_put(big, 101);
	write_all(conn, big, sizeof(big));
	assert_int_equal(hub_socket_recv(&s, 100, TIMEOUT_MS, &got, &got_len), NNG_EMSGSIZE);
	close(conn);
	hub_socket_close(&s);

	/* The peer gone in the middle of a frame, and before its prefix. */
	conn = dial_peer(&p, &s);
	wire_prefix_put(cut, 10);
	memcpy(cut + WIRE_PREFIX, "ab", 2);
	write_all(conn, cut, sizeof(cut));
	close(conn);
	assert_int_equal(hub_socket_recv(&s, PROTO_FRAME_MAX, TIMEOUT_MS, &got, &got_len), NNG_ECONNSHUT);
	hub_socket_close(&s);
	conn = dial_peer(&p, &s);
	write_all(conn, cut, 2);
	close(conn);
	assert_int_equal(hub_socket_recv(&s, PROTO_FRAME_MAX, TIMEOUT_MS, &got, &got_len), NNG_ECONNSHUT);
	assert_null(got);
	hub_socket_close(&s);
	peer_fini(&p);
}

/* Between exchanges: the end of the connection and bytes nobody asked for
 * are seen without waiting. */
static void test_over(void **state)
{
	hub_socket s;
	peer p;
	int conn;

	(void)state;
	peer_tcp(&p);
	conn = dial_peer(&p, &s);
	assert_false(hub_socket_over(&s));
	write_all(conn, "x", 1);
	usleep(20000);
	assert_true(hub_socket_over(&s));
	close(conn);
	hub_socket_close(&s);

	conn = dial_peer(&p, &s);
	close(conn);
	usleep(20000);
	assert_true(hub_socket_over(&s));
	hub_socket_close(&s);
	peer_fini(&p);
}

/* The hub's side of one exchange, from a thread: reads the request the
 * link sends, then answers "pong". */
typedef struct responder {
	int conn;
	const char *request;
} responder;

static void *respond(void *arg)
{
	responder *r = arg;
	uint8_t *answer = framed((const uint8_t *)"pong", 4);

	peer_reads_frame(r->conn, (const uint8_t *)r->request, strlen(r->request));
	write_all(r->conn, answer, WIRE_PREFIX + 4);
	free(answer);
	return NULL;
}

static void exchange_with(hub_link *l, int conn, const char *request)
{
	responder r = {.conn = conn, .request = request};
	uint8_t *reply = NULL;
	size_t reply_len = 0;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, respond, &r), 0);
	assert_int_equal(
	        hub_link_exchange(l, (const uint8_t *)request, strlen(request), TIMEOUT_MS, &reply, &reply_len), 0);
	pthread_join(t, NULL);
	assert_int_equal(reply_len, 4);
	assert_memory_equal(reply, "pong", 4);
	free(reply);
}

/* hub_link over the socket: an exchange, and after the hub closed the idle
 * connection, the next one on a new connection (watch_idle: looked at
 * before it goes), where without the look the exchange fails and the one
 * after dials again. */
static void link_after_close(int watch_idle)
{
	worker_config cfg = {0};
	hub_link *l = NULL;
	uint8_t *reply = NULL;
	size_t reply_len = 0;
	peer p;
	int conn;

	peer_tcp(&p);
	cfg.hub = p.url;
	assert_int_equal(hub_link_new(&cfg, watch_idle, &l), 0);
	assert_int_equal(hub_link_connect(l, TIMEOUT_MS), 0);
	conn = accept_within(p.listener);
	exchange_with(l, conn, "ping");
	close(conn); /* the hub went while the link was idle */
	usleep(20000);
	if (!watch_idle) {
		/* Sent on the dead connection: an error, and the link starts over. */
		int rv = hub_link_exchange(l, (const uint8_t *)"ping", 4, TIMEOUT_MS, &reply, &reply_len);
		assert_true(rv == NNG_ECONNSHUT || rv == NNG_ECONNRESET);
		assert_null(reply);
	}
	assert_int_equal(hub_link_connect(l, TIMEOUT_MS), 0);
	conn = accept_within(p.listener); /* dialed anew */
	assert_true(conn >= 0);
	exchange_with(l, conn, "ping2");
	close(conn);
	hub_link_free(l);
	peer_fini(&p);
}

static void test_link_watch_idle(void **state)
{
	(void)state;
	link_after_close(1);
}

static void test_link_own(void **state)
{
	(void)state;
	link_after_close(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tcp_exchanges),
	        cmocka_unit_test(test_ipc_exchanges),
	        cmocka_unit_test(test_ipv6),
	        cmocka_unit_test(test_which_urls),
	        cmocka_unit_test(test_bad_urls),
	        cmocka_unit_test(test_refused),
	        cmocka_unit_test(test_bad_frames),
	        cmocka_unit_test(test_over),
	        cmocka_unit_test(test_link_watch_idle),
	        cmocka_unit_test(test_link_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
