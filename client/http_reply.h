/*
 * An HTTP/1.1 reply read as its bytes arrive, in pieces of any size: the
 * status line and headers, then the body by Content-Length, in chunks, or
 * up to the end of the connection. Interim replies (1xx) are passed over.
 * No I/O here (http_conn.c reads the socket), so every byte sequence can be
 * fed to it in a test or a fuzzer.
 *
 * Strict where a lax reading could put a client and its gateway out of
 * step: lines end in CRLF, header names are tokens, no folded lines, one
 * Content-Length, a chunk size in hex that fits, and no transfer coding
 * other than chunked (libstrand asks for none). Bounded: the head within
 * HTTP_REPLY_HEAD_MAX bytes, the body within HTTP_REPLY_BODY_MAX.
 */
#ifndef CLIENT_HTTP_REPLY_H
#define CLIENT_HTTP_REPLY_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_REPLY_HEAD_MAX (64u << 10)
/* The gateway's largest answer is a 16 MiB results page. */
#define HTTP_REPLY_BODY_MAX ((size_t)256 << 20)
#define HTTP_REPLY_LINE_MAX 8192

/* A growing, NUL-terminated byte buffer: what a reply's body came to. */
typedef struct http_body {
	char *data; /* NULL while empty */
	size_t len, cap;
} http_body;

/* Appends p[0..n); 0, or -1 when there is no memory for it (b unchanged). */
int http_body_append(http_body *b, const void *p, size_t n);

typedef enum http_reply_step {
	REPLY_STATUS, /* the status line */
	REPLY_HEADERS,
	REPLY_LENGTH, /* Content-Length bytes of body */
	REPLY_CHUNK_SIZE,
	REPLY_CHUNK_DATA,
	REPLY_CHUNK_END, /* the CRLF after a chunk's data */
	REPLY_TRAILERS,
	REPLY_TO_END, /* a body that ends with the connection */
	REPLY_DONE
} http_reply_step;

typedef enum http_reply_verdict { HTTP_REPLY_MORE, HTTP_REPLY_DONE, HTTP_REPLY_BAD } http_reply_verdict;

typedef struct http_reply {
	int status; /* once the head is in */
	int close; /* the connection ends after this reply */
	http_body *body; /* borrowed: where the body goes */
	char why[160]; /* with HTTP_REPLY_BAD */
	/* the parser's own */
	http_reply_step step;
	int no_body; /* the request was HEAD */
	int http10;
	int64_t length; /* Content-Length; -1 when none came */
	int chunked;
	uint64_t left; /* of the body or the chunk */
	size_t head_len; /* bytes of head so far, interim replies included */
	char line[HTTP_REPLY_LINE_MAX];
	size_t line_len;
} http_reply;

/* Readies r for the reply to one request; its body goes into body
 * (borrowed), after what it holds. head_request: the request was HEAD, so
 * the reply has no body whatever its headers say. */
void http_reply_init(http_reply *r, http_body *body, int head_request);

/* Takes data[0..len): HTTP_REPLY_MORE (all of it taken, the reply goes on),
 * HTTP_REPLY_DONE (the reply ended; *used bytes of data were its own, what
 * follows is not), or HTTP_REPLY_BAD (r->why says what was wrong). */
http_reply_verdict http_reply_feed(http_reply *r, const char *data, size_t len, size_t *used);

/* The connection ended: HTTP_REPLY_DONE when the body was to run to its
 * end, HTTP_REPLY_BAD when the reply had not ended. */
http_reply_verdict http_reply_end(http_reply *r);

#endif
