/* Scanning JSON text without building values; see json_scan.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "gateway/json_scan.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t json_scan_space(const char *s, size_t len, size_t i)
{
	while (i < len && is_space(s[i]))
		i++;
	return i;
}

static int fail(char *why, size_t why_len, size_t at, const char *what)
{
	snprintf(why, why_len, "%s at byte %zu", what, at);
	return -1;
}

static int hex4(const char *s, size_t len, size_t i, unsigned *out)
{
	unsigned v = 0;

	if (i + 4 > len)
		return -1;
	for (size_t k = i; k < i + 4; k++) {
		char c = s[k];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

/* Index of the first byte at or after i that may need a look of its own
 * (a quote, a backslash, a control character or a byte past ASCII), eight
 * bytes at a time: most of a map's arguments is base64 text, which a byte
 * at a time took 13 % of the gateway's CPU in a map of 100,000 inputs. It
 * may stop early, never late. */
static size_t plain_run(const unsigned char *u, size_t len, size_t i)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;

	while (i + 8 <= len) {
		uint64_t w, quote, backslash;
		memcpy(&w, u + i, 8);
		quote = w ^ (ones * '"');
		backslash = w ^ (ones * '\\');
		/* x - ones & ~x has a high bit set where x has a zero byte (and
		 * maybe above it); w - 0x20s & ~w where w has a byte below 0x20. */
		if ((((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((w - ones * 0x20) & ~w) | w) &
		    highs)
			break;
		i += 8;
	}
	return i;
}

/* The string that starts at s[i] ('"'); *end: just past its closing quote. */
static int scan_string(const char *s, size_t len, size_t i, size_t *end, char *why, size_t why_len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (i++; i < len;) {
		i = plain_run(u, len, i);
		if (i >= len)
			break;
		unsigned char c = u[i];
		if (c == '"') {
			*end = i + 1;
			return 0;
		}
		if (c >= 0x80) { /* a run of such bytes is whole UTF-8 sequences or is invalid */
			size_t k = i;
			while (k < len && u[k] >= 0x80)
				k++;
			if (!cm_utf8_valid(s + i, k - i))
				return fail(why, why_len, i, "invalid UTF-8 in a string");
			i = k;
		} else if (c < 0x20) {
			return fail(why, why_len, i, "a control character in a string (escape it)");
		} else if (c != '\\') {
			i++;
		} else if (i + 1 < len && s[i + 1] && strchr("\"\\/bfnrt", s[i + 1])) {
			i += 2;
		} else if (i + 1 < len && s[i + 1] == 'u') {
			unsigned cp, lo;
			if (hex4(s, len, i + 2, &cp) != 0)
				return fail(why, why_len, i, "an invalid \\u escape");
			if (cp == 0)
				return fail(why, why_len, i, "\\u0000 is not allowed");
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return fail(why, why_len, i, "a lone low surrogate");
			if (cp >= 0xD800 && cp <= 0xDBFF &&
			    (i + 12 > len || s[i + 6] != '\\' || s[i + 7] != 'u' || hex4(s, len, i + 8, &lo) != 0 ||
			     lo < 0xDC00 || lo > 0xDFFF))
				return fail(why, why_len, i, "a high surrogate without its low half");
			i += cp >= 0xD800 && cp <= 0xDBFF ? 12 : 6;
		} else {
			return fail(why, why_len, i, "an invalid escape");
		}
	}
	return fail(why, why_len, len, "an unterminated string");
}

static int digits(const char *s, size_t len, size_t *i)
{
	size_t start = *i;

	while (*i < len && s[*i] >= '0' && s[*i] <= '9')
		(*i)++;
	return *i > start ? 0 : -1;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int scan_number(const char *s, size_t len, size_t i, size_t *end, char *why, size_t why_len)
{
	size_t start = i;

	if (s[i] == '-')
		i++;
	if (i < len && s[i] == '0')
		i++;
	else if (digits(s, len, &i) != 0)
		return fail(why, why_len, start, "an invalid number");
	if (i < len && s[i] == '.' && (++i, digits(s, len, &i) != 0))
		return fail(why, why_len, start, "an invalid number");
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (digits(s, len, &i) != 0)
			return fail(why, why_len, start, "an invalid number");
	}
	*end = i;
	return 0;
}

static int scan_scalar(const char *s, size_t len, size_t i, size_t *end, char *why, size_t why_len)
{
	static const char *const words[] = {"true", "false", "null"};
	char c = s[i];

	if (c == '"')
		return scan_string(s, len, i, end, why, why_len);
	if (c == '-' || (c >= '0' && c <= '9'))
		return scan_number(s, len, i, end, why, why_len);
	for (size_t w = 0; w < 3; w++) {
		size_t n = strlen(words[w]);
		if (c == words[w][0] && len - i >= n && memcmp(s + i, words[w], n) == 0) {
			*end = i + n;
			return 0;
		}
	}
	return fail(why, why_len, i, "an unexpected character");
}

/* An object's key and its colon, from s[*i] on; leaves *i at the value. */
static int scan_key(const char *s, size_t len, size_t *i, unsigned *flags, char *why, size_t why_len)
{
	size_t at = *i;

	if (at >= len || s[at] != '"')
		return fail(why, why_len, at, "a missing object key");
	if (scan_string(s, len, at, &at, why, why_len) != 0)
		return -1;
	size_t colon = json_scan_space(s, len, at);
	*flags |= colon > at ? JSON_SCAN_SPACE : 0;
	if (colon >= len || s[colon] != ':')
		return fail(why, why_len, colon, "a missing ':' after an object key");
	*i = json_scan_space(s, len, colon + 1);
	*flags |= *i > colon + 1 ? JSON_SCAN_SPACE : 0;
	return 0;
}

int json_scan_value(const char *s, size_t len, size_t i, size_t *end, unsigned *flags, char *why, size_t why_len)
{
	char open[JSON_SCAN_DEPTH]; /* the containers around the cursor: '{' or '[' */
	int depth = 0;

	*flags = 0;
	for (;;) {
		/* A value at s[i]. */
		if (i >= len)
			return fail(why, why_len, i, "an unexpected end");
		if (s[i] == '{' || s[i] == '[') {
			if (depth == JSON_SCAN_DEPTH)
				return fail(why, why_len, i, "nesting deeper than 2048");
			*flags |= s[i] == '{' ? JSON_SCAN_OBJECT : 0;
			open[depth++] = s[i];
			size_t next = json_scan_space(s, len, i + 1);
			*flags |= next > i + 1 ? JSON_SCAN_SPACE : 0;
			i = next;
			if (i < len && s[i] == (open[depth - 1] == '{' ? '}' : ']')) {
				depth--;
				i++;
			} else if (open[depth - 1] == '{') {
				if (scan_key(s, len, &i, flags, why, why_len) != 0)
					return -1;
				continue;
			} else {
				continue;
			}
		} else if (scan_scalar(s, len, i, &i, why, why_len) != 0) {
			return -1;
		}
		/* After a value: close containers, or go on to the next member. */
		for (;;) {
			if (depth == 0) {
				*end = i;
				return 0;
			}
			size_t next = json_scan_space(s, len, i);
			*flags |= next > i ? JSON_SCAN_SPACE : 0;
			i = next;
			if (i >= len)
				return fail(why, why_len, i, "an unexpected end");
			if (s[i] == (open[depth - 1] == '{' ? '}' : ']')) {
				depth--;
				i++;
				continue;
			}
			if (s[i] != ',')
				return fail(why, why_len, i, "an unexpected character");
			next = json_scan_space(s, len, i + 1);
			*flags |= next > i + 1 ? JSON_SCAN_SPACE : 0;
			i = next;
			if (open[depth - 1] == '{' && scan_key(s, len, &i, flags, why, why_len) != 0)
				return -1;
			break;
		}
	}
}

size_t json_scan_compact(const char *s, size_t len, char *out)
{
	size_t n = 0;
	int in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_string) {
			out[n++] = c;
			if (c == '\\' && i + 1 < len)
				out[n++] = s[++i];
			else if (c == '"')
				in_string = 0;
		} else if (!is_space(c)) {
			out[n++] = c;
			in_string = c == '"';
		}
	}
	return n;
}
