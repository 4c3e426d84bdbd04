/* A map part's body as text; see args_body.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/args_body.h"

/* Room for extra more bytes (and a NUL) in t; 0 when memory ran out. */
static int room(body_text *t, size_t extra)
{
	size_t cap = t->cap ? t->cap : 4096;
	char *grown;

	if (t->len + extra + 1 <= t->cap)
		return 1;
	while (cap < t->len + extra + 1)
		cap *= 2;
	if (!(grown = realloc(t->data, cap)))
		return 0;
	t->data = grown;
	t->cap = cap;
	return 1;
}

static int put(body_text *t, const char *s, size_t n)
{
	if (!room(t, n))
		return 0;
	memcpy(t->data + t->len, s, n);
	t->len += n;
	return 1;
}

/* v as jansson writes it (compact), straight into t. */
static int put_value(body_text *t, const json_t *v, size_t flags)
{
	size_t n = json_dumpb(v, t->cap > t->len ? t->data + t->len : NULL, t->cap - t->len, flags);

	if (n == 0)
		return 0;
	if (t->len + n > t->cap) { /* it did not fit: written again into room that fits */
		if (!room(t, n) || json_dumpb(v, t->data + t->len, n, flags) != n)
			return 0;
	}
	t->len += n;
	return 1;
}

/* An integer in decimal, as json_dumps writes it, without printf. */
static int put_integer(body_text *t, json_int_t v)
{
	char digits[24], *end = digits + sizeof(digits), *p = end;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	return put(t, p, (size_t)(end - p));
}

int args_body(body_text *out, const json_t *head, const json_t *args, size_t lo, size_t n)
{
	out->len = 0;
	/* head's text without its closing brace, then the arguments. */
	if (!put_value(out, head, JSON_COMPACT) || out->len < 2 || out->data[out->len - 1] != '}')
		return -1;
	out->len--;
	if (out->len > 1 && !put(out, ",", 1))
		return -1;
	if (!put(out, "\"args\":[", 8))
		return -1;
	for (size_t i = lo; i < lo + n; i++) {
		const json_t *v = json_array_get(args, i);
		if (i > lo && !put(out, ",", 1))
			return -1;
		if (json_is_integer(v) ? !put_integer(out, json_integer_value(v))
		                       : !put_value(out, v, JSON_COMPACT | JSON_ENCODE_ANY))
			return -1;
	}
	if (!put(out, "]}", 2))
		return -1;
	out->data[out->len] = '\0';
	return 0;
}
