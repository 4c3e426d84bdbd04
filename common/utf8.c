/*
 * UTF-8 checks. Everything the gateway echoes back (a URL in a problem's
 * "instance", a field name in a detail, a task's result) ends up inside JSON,
 * which must be valid UTF-8: one invalid byte would make jansson refuse the
 * whole answer and the client would get no answer at all.
 */
#include "common/common.h"

/* Length of the valid sequence starting at s (at most n bytes), or 0. Strict
 * (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t sequence_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	/* The second byte's range is what excludes overlongs and surrogates. */
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

int cm_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = p[i] ? sequence_len(p + i, len - i) : 0;
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

void cm_utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = 0;

	while (p[len])
		len++;
	for (size_t i = 0; i < len;) {
		size_t n = sequence_len(p + i, len - i);
		if (n) {
			i += n;
		} else {
			p[i] = '?';
			i++;
		}
	}
}
