/* An HTTP/1.1 reply, parsed as it arrives; see http_reply.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/http_reply.h"

int http_body_append(http_body *b, const void *p, size_t n)
{
	/* Doubling: a results page of up to 16 MiB arrives in thousands of
	 * pieces, and copying it whole for each would be quadratic. */
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(q = realloc(b->data, cap)))
			return -1;
		b->data = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void http_reply_init(http_reply *r, http_body *body, int head_request)
{
	r->status = 0;
	r->close = 0;
	r->body = body;
	r->why[0] = '\0';
	r->step = REPLY_STATUS;
	r->no_body = head_request;
	r->http10 = 0;
	r->length = -1;
	r->chunked = 0;
	r->left = 0;
	r->head_len = 0;
	r->line_len = 0;
}

static http_reply_verdict bad(http_reply *r, const char *why)
{
	snprintf(r->why, sizeof(r->why), "%s", why);
	return HTTP_REPLY_BAD;
}

/* RFC 9110's tchar. */
static int is_token_char(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* The comma-separated list value[0..len) names token (any case). */
static int list_has(const char *value, size_t len, const char *token)
{
	size_t want = strlen(token);

	for (size_t at = 0; at < len;) {
		size_t end = at;
		while (end < len && value[end] != ',')
			end++;
		size_t a = at, b = end;
		while (a < b && is_space(value[a]))
			a++;
		while (b > a && is_space(value[b - 1]))
			b--;
		if (b - a == want && strncasecmp(value + a, token, want) == 0)
			return 1;
		at = end + 1;
	}
	return 0;
}

static http_reply_verdict status_line(http_reply *r, const char *line, size_t len)
{
	/* "HTTP/1.x NNN", then a reason phrase after a space, or nothing */
	if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
	    line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9' || line[11] < '0' || line[11] > '9' ||
	    (len > 12 && line[12] != ' '))
		return bad(r, "the reply does not start with an HTTP/1.x status line");
	r->http10 = line[7] == '0';
	r->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	r->close = r->http10; /* HTTP/1.0 ends the connection unless it says keep-alive */
	r->length = -1;
	r->chunked = 0;
	r->step = REPLY_HEADERS;
	return HTTP_REPLY_MORE;
}

/* The empty line after the headers: what the body is. */
static http_reply_verdict head_end(http_reply *r)
{
	if (r->status < 200) {
		if (r->status == 101)
			return bad(r, "the server switched protocols, which libstrand never asks for");
		r->step = REPLY_STATUS; /* an interim reply: the real one follows */
		return HTTP_REPLY_MORE;
	}
	if (r->no_body || r->status == 204 || r->status == 304) {
		r->step = REPLY_DONE;
	} else if (r->chunked) {
		r->step = REPLY_CHUNK_SIZE;
	} else if (r->length >= 0) {
		r->left = (uint64_t)r->length;
		r->step = r->length ? REPLY_LENGTH : REPLY_DONE;
	} else {
		r->step = REPLY_TO_END;
		r->close = 1;
	}
	return HTTP_REPLY_MORE;
}

static http_reply_verdict header_line(http_reply *r, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	size_t name_len = colon ? (size_t)(colon - line) : 0;

	if (len == 0)
		return head_end(r);
	if (is_space(line[0]))
		return bad(r, "a header line of the reply is folded");
	if (!colon || name_len == 0)
		return bad(r, "a header line of the reply has no name");
	for (size_t i = 0; i < name_len; i++)
		if (!is_token_char((unsigned char)line[i]))
			return bad(r, "a header name of the reply is not a token");
	const char *value = colon + 1;
	size_t value_len = len - name_len - 1;
	while (value_len && is_space(*value)) {
		value++;
		value_len--;
	}
	while (value_len && is_space(value[value_len - 1]))
		value_len--;
	if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
		int64_t n = 0;
		if (value_len == 0 || value_len > 18)
			return bad(r, "the reply's Content-Length is not a number");
		for (size_t i = 0; i < value_len; i++) {
			if (value[i] < '0' || value[i] > '9')
				return bad(r, "the reply's Content-Length is not a number");
			n = n * 10 + (value[i] - '0');
		}
		if (r->length >= 0 && r->length != n)
			return bad(r, "the reply has two different Content-Lengths");
		if ((uint64_t)n > HTTP_REPLY_BODY_MAX)
			return bad(r, "the reply's body is larger than libstrand takes (256 MiB)");
		r->length = n;
	} else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
		if (r->chunked || value_len != 7 || strncasecmp(value, "chunked", 7) != 0)
			return bad(r, "the reply's transfer coding is not chunked alone");
		r->chunked = 1;
	} else if (name_len == 10 && strncasecmp(line, "Connection", 10) == 0) {
		if (list_has(value, value_len, "close"))
			r->close = 1;
		else if (r->http10 && list_has(value, value_len, "keep-alive"))
			r->close = 0;
	}
	/* A body both chunked and counted is read as chunked (RFC 9112, 6.3);
	 * the connection is not trusted to be in step after it. */
	if (r->chunked && r->length >= 0)
		r->close = 1;
	return HTTP_REPLY_MORE;
}

static http_reply_verdict chunk_size_line(http_reply *r, const char *line, size_t len)
{
	uint64_t n = 0;
	size_t i = 0;

	for (; i < len; i++) {
		static const char hex[] = "0123456789abcdef";
		const char *digit = line[i] ? strchr(hex, tolower((unsigned char)line[i])) : NULL;
		if (!digit)
			break;
		if (i >= 15)
			return bad(r, "a chunk of the reply is larger than libstrand takes (256 MiB)");
		n = n * 16 + (uint64_t)(digit - hex);
	}
	/* after the size: nothing, or extensions (ignored) */
	if (i == 0 || (i < len && line[i] != ';' && !is_space(line[i])))
		return bad(r, "a chunk size of the reply is not hexadecimal");
	if (n > HTTP_REPLY_BODY_MAX - r->body->len)
		return bad(r, "the reply's body is larger than libstrand takes (256 MiB)");
	r->left = n;
	r->step = n ? REPLY_CHUNK_DATA : REPLY_TRAILERS;
	return HTTP_REPLY_MORE;
}

/* One whole line (its CRLF cut off) of the step r is at. */
static http_reply_verdict on_line(http_reply *r, const char *line, size_t len)
{
	switch (r->step) {
	case REPLY_STATUS: return status_line(r, line, len);
	case REPLY_HEADERS: return header_line(r, line, len);
	case REPLY_CHUNK_SIZE: return chunk_size_line(r, line, len);
	case REPLY_CHUNK_END:
		if (len)
			return bad(r, "a chunk of the reply is longer than its size");
		r->step = REPLY_CHUNK_SIZE;
		return HTTP_REPLY_MORE;
	case REPLY_TRAILERS:
		if (len == 0)
			r->step = REPLY_DONE;
		else if (!memchr(line, ':', len))
			return bad(r, "a trailer line of the reply has no name");
		return HTTP_REPLY_MORE;
	default: return bad(r, "a line where the reply's body was expected"); /* not reached */
	}
}

static int in_body(http_reply_step step)
{
	return step == REPLY_LENGTH || step == REPLY_CHUNK_DATA || step == REPLY_TO_END;
}

http_reply_verdict http_reply_feed(http_reply *r, const char *data, size_t len, size_t *used)
{
	size_t at = 0;

	while (r->step != REPLY_DONE && at < len) {
		if (in_body(r->step)) {
			size_t n = len - at;
			if (r->step != REPLY_TO_END && n > r->left)
				n = (size_t)r->left;
			if (n > HTTP_REPLY_BODY_MAX - r->body->len)
				return bad(r, "the reply's body is larger than libstrand takes (256 MiB)");
			if (http_body_append(r->body, data + at, n) != 0)
				return bad(r, "out of memory for the reply's body");
			at += n;
			if (r->step != REPLY_TO_END && (r->left -= n) == 0)
				r->step = r->step == REPLY_LENGTH ? REPLY_DONE : REPLY_CHUNK_END;
			continue;
		}
		/* a line: the status line, a header, a chunk's size or end, a trailer */
		const char *nl = memchr(data + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (data + at)) + 1 : len - at;
		int in_head = r->step == REPLY_STATUS || r->step == REPLY_HEADERS || r->step == REPLY_TRAILERS;
		if (r->line_len + n > sizeof(r->line))
			return bad(r, "a line of the reply is longer than 8192 bytes");
		if (in_head && (r->head_len += n) > HTTP_REPLY_HEAD_MAX)
			return bad(r, "the reply's head is longer than 64 KiB");
		memcpy(r->line + r->line_len, data + at, n);
		r->line_len += n;
		at += n;
		if (!nl)
			break;
		if (r->line_len < 2 || r->line[r->line_len - 2] != '\r')
			return bad(r, "a line of the reply does not end in CRLF");
		size_t line_len = r->line_len - 2;
		r->line_len = 0;
		if (on_line(r, r->line, line_len) == HTTP_REPLY_BAD)
			return HTTP_REPLY_BAD;
	}
	*used = at;
	return r->step == REPLY_DONE ? HTTP_REPLY_DONE : HTTP_REPLY_MORE;
}

http_reply_verdict http_reply_end(http_reply *r)
{
	if (r->step == REPLY_TO_END)
		r->step = REPLY_DONE;
	if (r->step != REPLY_DONE)
		return bad(r, "the connection closed before the reply ended");
	return HTTP_REPLY_DONE;
}
