/*
 * libstrand's HTTP/1.1 reply parser: replies by Content-Length, in chunks
 * (extensions, trailers) and up to the connection's end read to the exact
 * body and status whichever way their bytes are split; interim replies
 * passed over; what keeps the connection or closes it; the bytes after a
 * reply left alone; and each malformed or oversized reply refused with
 * its own reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/http_reply.h"

typedef struct parsed {
	http_reply_verdict verdict;
	int status, close;
	size_t used; /* of the last piece fed */
	char body[256];
	size_t body_len;
	char why[160];
} parsed;

/* Feeds text in pieces of at most `piece` bytes (0: whole) until the reply
 * ends or is refused; ended: the connection ends after the last byte. */
static parsed parse(const char *text, size_t piece, int head_request, int ended)
{
	http_reply *r = calloc(1, sizeof(*r));
	http_body body = {0};
	size_t len = strlen(text), at = 0, used = 0;
	parsed p = {.verdict = HTTP_REPLY_MORE};

	assert_non_null(r);
	http_reply_init(r, &body, head_request);
	while (at < len && p.verdict == HTTP_REPLY_MORE) {
		size_t n = piece && len - at > piece ? piece : len - at;
		p.verdict = http_reply_feed(r, text + at, n, &used);
		p.used = used;
		at += n;
	}
	if (p.verdict == HTTP_REPLY_MORE && ended)
		p.verdict = http_reply_end(r);
	p.status = r->status;
	p.close = r->close;
	assert_true(body.len < sizeof(p.body));
	memcpy(p.body, body.data ? body.data : "", body.len);
	p.body_len = body.len;
	snprintf(p.why, sizeof(p.why), "%s", r->why);
	free(body.data);
	free(r);
	return p;
}

static void expect_body(const char *text, int head_request, int ended, int status, int close, const char *body)
{
	/* whole, then a byte at a time, then in pieces of 7 */
	size_t pieces[] = {0, 1, 7};

	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		parsed p = parse(text, pieces[i], head_request, ended);
		assert_int_equal(p.verdict, HTTP_REPLY_DONE);
		assert_int_equal(p.status, status);
		assert_int_equal(p.close, close);
		assert_int_equal(p.body_len, strlen(body));
		assert_memory_equal(p.body, body, p.body_len);
	}
}

static void expect_refused(const char *text, const char *why)
{
	parsed p = parse(text, 0, 0, 1);

	assert_int_equal(p.verdict, HTTP_REPLY_BAD);
	assert_string_equal(p.why, why);
	p = parse(text, 1, 0, 1);
	assert_int_equal(p.verdict, HTTP_REPLY_BAD);
	assert_string_equal(p.why, why);
}

static void test_content_length(void **state)
{
	(void)state;
	expect_body("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"value\":1}", 0,
	            0, 200, 0, "{\"value\":1}");
	/* names in any case, spaces around the value, no reason phrase */
	expect_body("HTTP/1.1 404\r\ncontent-length:  2 \r\n\r\n{}", 0, 0, 404, 0, "{}");
	expect_body("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 0, 0, 202, 0, "");
	/* the same length twice is one length */
	expect_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 0, 0, 200, 0, "abc");
}

static void test_chunked(void **state)
{
	(void)state;
	expect_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	            "5\r\nhello\r\n1;ext=\"x\"\r\n,\r\nA\r\n world 123\r\n0\r\nX-Trailer: t\r\n\r\n",
	            0, 0, 200, 0, "hello, world 123");
	expect_body("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n", 0, 0, 200, 0, "");
	/* chunked and counted: read as chunked, and the connection not kept */
	expect_body("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	            0, 0, 200, 1, "ok");
}

static void test_body_to_the_end(void **state)
{
	(void)state;
	expect_body("HTTP/1.0 200 OK\r\n\r\nall of it", 0, 1, 200, 1, "all of it");
	expect_body("HTTP/1.1 200 OK\r\n\r\n[1,2]", 0, 1, 200, 1, "[1,2]");
}

static void test_what_keeps_the_connection(void **state)
{
	(void)state;
	expect_body("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", 0, 0, 200, 0, "x");
	expect_body("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 0, 0, 200, 1, "x");
	expect_body("HTTP/1.1 413 Content Too Large\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx", 0,
	            0, 413, 1, "x");
}

static void test_no_body(void **state)
{
	(void)state;
	expect_body("HTTP/1.1 204 No Content\r\n\r\n", 0, 0, 204, 0, "");
	expect_body("HTTP/1.1 304 Not Modified\r\nContent-Length: 40\r\n\r\n", 0, 0, 304, 0, "");
	expect_body("HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", 1, 0, 200, 0, "");
}

static void test_interim_replies_passed_over(void **state)
{
	(void)state;
	expect_body("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
	            "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
	            0, 0, 201, 0, "{}");
}

/* What follows a reply is not taken: the caller sees where it ended. */
static void test_bytes_after_the_reply(void **state)
{
	const char text[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n";
	parsed p = parse(text, 0, 0, 0);

	(void)state;
	assert_int_equal(p.verdict, HTTP_REPLY_DONE);
	assert_int_equal(p.used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
	p = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nmore", 0, 0, 0);
	assert_int_equal(p.verdict, HTTP_REPLY_DONE);
	assert_int_equal(p.used, strlen("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"));
	assert_string_equal(p.body, "a");
}

static void test_malformed_refused(void **state)
{
	(void)state;
	expect_refused("HTTP/2 200\r\n\r\n", "the reply does not start with an HTTP/1.x status line");
	expect_refused("HTTP/1.1 20 OK\r\n\r\n", "the reply does not start with an HTTP/1.x status line");
	expect_refused("HTTP/1.1 200OK\r\n\r\n", "the reply does not start with an HTTP/1.x status line");
	expect_refused("SSH-2.0-OpenSSH\r\n", "the reply does not start with an HTTP/1.x status line");
	expect_refused("HTTP/1.1 200 OK\nContent-Length: 0\n\n", "a line of the reply does not end in CRLF");
	expect_refused("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", "a header line of the reply is folded");
	expect_refused("HTTP/1.1 200 OK\r\n: x\r\n\r\n", "a header line of the reply has no name");
	expect_refused("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "a header line of the reply has no name");
	expect_refused("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "a header name of the reply is not a token");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "the reply's Content-Length is not a number");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "the reply's Content-Length is not a number");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "the reply's Content-Length is not a number");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",
	               "the reply has two different Content-Lengths");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length: 268435457\r\n\r\n",
	               "the reply's body is larger than libstrand takes (256 MiB)");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	               "the reply's transfer coding is not chunked alone");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	               "the reply's transfer coding is not chunked alone");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	               "a chunk size of the reply is not hexadecimal");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\n",
	               "a chunk size of the reply is not hexadecimal");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
	               "a chunk of the reply is longer than its size");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000001\r\n",
	               "the reply's body is larger than libstrand takes (256 MiB)");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n",
	               "a chunk of the reply is larger than libstrand takes (256 MiB)");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
	               "a trailer line of the reply has no name");
	expect_refused("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	               "the server switched protocols, which libstrand never asks for");
}

static void test_truncated_refused(void **state)
{
	(void)state;
	expect_refused("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
	               "the connection closed before the reply ended");
	expect_refused("HTTP/1.1 200 OK\r\nContent-Le", "the connection closed before the reply ended");
	expect_refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
	               "the connection closed before the reply ended");
	expect_refused("", "the connection closed before the reply ended");
}

/* The head is bounded line by line and in all. */
static void test_head_bounded(void **state)
{
	size_t cap = 200000;
	char *text = malloc(cap);
	size_t n = (size_t)snprintf(text, cap, "HTTP/1.1 200 OK\r\nX: ");

	(void)state;
	memset(text + n, 'a', 8200);
	snprintf(text + n + 8200, cap - n - 8200, "\r\n\r\n");
	expect_refused(text, "a line of the reply is longer than 8192 bytes");
	n = (size_t)snprintf(text, cap, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 1000; i++)
		n += (size_t)snprintf(text + n, cap - n, "X-Header-%04d: %060d\r\n", i, i);
	snprintf(text + n, cap - n, "\r\n");
	expect_refused(text, "the reply's head is longer than 64 KiB");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_content_length),
	        cmocka_unit_test(test_chunked),
	        cmocka_unit_test(test_body_to_the_end),
	        cmocka_unit_test(test_what_keeps_the_connection),
	        cmocka_unit_test(test_no_body),
	        cmocka_unit_test(test_interim_replies_passed_over),
	        cmocka_unit_test(test_bytes_after_the_reply),
	        cmocka_unit_test(test_malformed_refused),
	        cmocka_unit_test(test_truncated_refused),
	        cmocka_unit_test(test_head_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
