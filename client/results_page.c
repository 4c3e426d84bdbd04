/*
 * Reading a results page (GET /v1/jobs/{id}/results) without building it as
 * one JSON document. jansson makes each item an object with a hash table:
 * some ten allocations an item, which made the client, not the gateway,
 * most of a large map's time (a million results took the gateway 0.25 s to
 * page and libstrand over 1 s to parse). The gateway writes pages in two
 * shapes, each always the same way (gateway/http/results.c, results_body):
 *   {"job":…,"order":…,"total":N,"items":[{"index":N,"ok":true,"value":V},
 *    {"index":N,"ok":false,"error":"…"},…],"next_cursor":"N","complete":B}
 *   {"job":…,"order":…,"total":N,"values":[V,"…",…],
 *    "indexes":[[FIRST,COUNT],…],"failed":[POS,…],"next_cursor":"N",…}
 * (the second, shape=columns, is the one libstrand asks for: a no-op's
 * result is five bytes of it, not forty), so a page is read in its shape,
 * and only each value is parsed. A page written any other way is parsed
 * by jansson whole: never wrong, only slower.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/results_page.h"

/* Skips the literal lit at *p; 0 if it is not there. */
static int take(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return 0;
	*p += n;
	return 1;
}

static int take_int(const char **p, const char *end, long long *out)
{
	const char *s = *p;
	long long v = 0;
	int neg = s < end && *s == '-';

	s += neg;
	if (s >= end || *s < '0' || *s > '9')
		return 0;
	while (s < end && *s >= '0' && *s <= '9' && v < (1LL << 58))
		v = v * 10 + (*s++ - '0');
	*out = neg ? -v : v;
	*p = s;
	return 1;
}

/* Skips one JSON value (as the gateway wrote it: no whitespace) at *p;
 * the value's own checks are jansson's, when it is parsed. */
static int skip_value(const char **p, const char *end)
{
	const char *s = *p;
	int depth = 0;

	do {
		if (s >= end)
			return 0;
		if (*s == '"') {
			for (s++; s < end && *s != '"'; s++)
				s += *s == '\\';
			if (s >= end)
				return 0;
			s++;
		} else if (*s == '{' || *s == '[') {
			depth++;
			s++;
		} else if (*s == '}' || *s == ']') {
			if (--depth < 0)
				return 0;
			s++;
		} else if (depth > 0 && (*s == ',' || *s == ':')) {
			s++;
		} else {
			const char *start = s;
			while (s < end && *s != ',' && *s != '}' && *s != ']' && *s != ':' && *s != '"' && *s != '{' &&
			       *s != '[')
				s++;
			if (s == start)
				return 0;
		}
	} while (depth > 0);
	*p = s;
	return 1;
}

/* The value text s[0..n) as a new JSON value: the common small ones made
 * directly, the rest by jansson. NULL if it is not JSON. */
static json_t *value_of(const char *s, size_t n)
{
	const char *p = s;
	long long v;

	if (n == 4 && memcmp(s, "null", 4) == 0)
		return json_null();
	if (n == 4 && memcmp(s, "true", 4) == 0)
		return json_true();
	if (n == 5 && memcmp(s, "false", 5) == 0)
		return json_false();
	if (n < 18 && take_int(&p, s + n, &v) && p == s + n && !(n > 1 && s[s[0] == '-'] == '0'))
		return json_integer(v);
	return json_loadb(s, n, JSON_DECODE_ANY, NULL);
}

/* Room for n items in pg; 0 when memory ran out. */
static int items_room(results_page *pg, size_t n)
{
	page_item *grown;

	if (n <= pg->cap)
		return 1;
	if (!(grown = realloc(pg->items, n * sizeof(*grown))))
		return 0;
	pg->items = grown;
	pg->cap = n;
	return 1;
}

/* Reads the items of a page in the items shape, from after "items":[ up
 * to its ']'; 0 if they are not as the gateway writes them. */
static int read_items(const char **at, const char *text, const char *end, results_page *pg)
{
	const char *p = *at;

	while (!take(&p, end, "]")) {
		page_item it;
		if (pg->n && !take(&p, end, ","))
			return 0;
		if (!take(&p, end, "{\"index\":") || !take_int(&p, end, &it.index) || !take(&p, end, ",\"ok\":"))
			return 0;
		it.ok = take(&p, end, "true");
		if (!it.ok && !take(&p, end, "false"))
			return 0;
		if (!take(&p, end, it.ok ? ",\"value\":" : ",\"error\":"))
			return 0;
		it.at = (size_t)(p - text);
		if (!skip_value(&p, end))
			return 0;
		it.len = (size_t)(p - text) - it.at;
		if (!take(&p, end, "}"))
			return 0;
		if (pg->n == pg->cap && !items_room(pg, pg->cap ? pg->cap * 2 : 1024))
			return 0;
		pg->items[pg->n++] = it;
	}
	*at = p;
	return 1;
}

/* One run [FIRST,COUNT] of a page's indexes, given to its items from
 * *next on; 0 if it is not one or runs past the items. */
static int take_run(const char **at, const char *end, results_page *pg, size_t *next)
{
	long long first, count;

	if (!take(at, end, "[") || !take_int(at, end, &first) || !take(at, end, ",") || !take_int(at, end, &count) ||
	    !take(at, end, "]") || first < 0 || count < 1 || (size_t)count > pg->n - *next)
		return 0;
	for (long long k = 0; k < count; k++)
		pg->items[(*next)++].index = first + k;
	return 1;
}

/* Reads the values, indexes and failed positions of a page by columns,
 * from after "values":[ up to the failed list's ']'. */
static int read_columns(const char **at, const char *text, const char *end, results_page *pg)
{
	const char *p = *at;
	size_t indexed = 0; /* items given an index: all of them, once each */

	while (!take(&p, end, "]")) {
		page_item it = {.ok = 1};
		if (pg->n && !take(&p, end, ","))
			return 0;
		it.at = (size_t)(p - text);
		if (!skip_value(&p, end))
			return 0;
		it.len = (size_t)(p - text) - it.at;
		if (pg->n == pg->cap && !items_room(pg, pg->cap ? pg->cap * 2 : 1024))
			return 0;
		pg->items[pg->n++] = it;
	}
	if (!take(&p, end, ",\"indexes\":["))
		return 0;
	while (!take(&p, end, "]"))
		if ((indexed && !take(&p, end, ",")) || !take_run(&p, end, pg, &indexed))
			return 0;
	if (indexed != pg->n || !take(&p, end, ",\"failed\":["))
		return 0;
	for (int first = 1; !take(&p, end, "]"); first = 0) {
		long long pos;
		if ((!first && !take(&p, end, ",")) || !take_int(&p, end, &pos) || pos < 0 || (size_t)pos >= pg->n)
			return 0;
		pg->items[pos].ok = 0;
	}
	*at = p;
	return 1;
}

/* Reads the page in one of the gateway's shapes into its items (spans into
 * text); 0 if text is written some other way. */
static int read_shape(const char *text, size_t len, results_page *pg)
{
	const char *p = text, *end = text + len;

	if (!take(&p, end, "{\"job\":") || !skip_value(&p, end) || !take(&p, end, ",\"order\":") ||
	    !skip_value(&p, end) || !take(&p, end, ",\"total\":") || !skip_value(&p, end))
		return 0;
	if (take(&p, end, ",\"items\":[") ? !read_items(&p, text, end, pg)
	                                  : !take(&p, end, ",\"values\":[") || !read_columns(&p, text, end, pg))
		return 0;
	if (!take(&p, end, ",\"next_cursor\":\""))
		return 0;
	const char *cursor = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == cursor || (size_t)(p - cursor) >= sizeof(pg->next_cursor))
		return 0;
	memcpy(pg->next_cursor, cursor, (size_t)(p - cursor));
	pg->next_cursor[p - cursor] = '\0';
	if (!take(&p, end, "\",\"complete\":"))
		return 0;
	pg->complete = take(&p, end, "true");
	if (!pg->complete && !take(&p, end, "false"))
		return 0;
	return take(&p, end, "}") && p == end;
}

/* The columns of a page jansson read (values, indexes, failed) into
 * pg's items and values; -1 if they do not agree. */
static int whole_columns(json_t *root, results_page *pg)
{
	json_t *values = json_object_get(root, "values"), *runs = json_object_get(root, "indexes");
	json_t *failed = json_object_get(root, "failed"), *v;
	size_t k, at = 0, n = json_array_size(values);

	if (!json_is_array(values) || !json_is_array(runs) || !json_is_array(failed) ||
	    !(pg->values = calloc(n + 1, sizeof(json_t *))) || !items_room(pg, n + 1))
		return -1;
	json_array_foreach (runs, k, v) {
		json_int_t first = json_integer_value(json_array_get(v, 0)),
		           count = json_integer_value(json_array_get(v, 1));
		if (json_array_size(v) != 2 || first < 0 || count < 1 || (size_t)count > n - at ||
		    first > LLONG_MAX - count)
			return -1;
		for (json_int_t i = 0; i < count; i++, at++)
			pg->items[at] = (page_item){.index = first + i, .ok = 1};
	}
	if (at != n)
		return -1;
	json_array_foreach (failed, k, v) {
		json_int_t pos = json_integer_value(v);
		if (!json_is_integer(v) || pos < 0 || (size_t)pos >= n)
			return -1;
		pg->items[pos].ok = 0;
	}
	json_array_foreach (values, k, v) {
		pg->values[k] = json_incref(v);
		pg->n = k + 1;
	}
	return 0;
}

/* The items of a page jansson read into pg's items and values. */
static int whole_items(json_t *items, results_page *pg)
{
	json_t *item;
	size_t k;

	if (!(pg->values = calloc(json_array_size(items) + 1, sizeof(json_t *))) ||
	    !items_room(pg, json_array_size(items) + 1))
		return -1;
	json_array_foreach (items, k, item) {
		int ok = json_is_true(json_object_get(item, "ok"));
		pg->items[k] = (page_item){.index = json_integer_value(json_object_get(item, "index")), .ok = ok};
		pg->values[k] = json_incref(json_object_get(item, ok ? "value" : "error"));
		pg->n = k + 1;
	}
	return 0;
}

/* The page parsed by jansson whole, into the same items; each item's value
 * is kept as jansson built it (pg->values). */
static int read_whole(const char *text, size_t len, results_page *pg)
{
	json_t *root = json_loadb(text, len, 0, NULL), *items = json_object_get(root, "items");
	const char *cursor = json_string_value(json_object_get(root, "next_cursor"));
	int err = !cursor || strlen(cursor) >= sizeof(pg->next_cursor) ? -1
	          : json_is_array(items)                               ? whole_items(items, pg)
	                                                               : whole_columns(root, pg);

	if (err == 0) {
		snprintf(pg->next_cursor, sizeof(pg->next_cursor), "%s", cursor);
		pg->complete = json_is_true(json_object_get(root, "complete"));
	}
	json_decref(root);
	return err;
}

/* Forgets what pg read, keeping its room for items. */
static void forget(results_page *pg, const char *text)
{
	for (size_t i = 0; pg->values && i < pg->n; i++)
		json_decref(pg->values[i]);
	free(pg->values);
	pg->values = NULL;
	pg->text = text;
	pg->n = 0;
	pg->next_cursor[0] = '\0';
	pg->complete = 0;
}

int results_page_read(const char *text, size_t len, results_page *pg)
{
	forget(pg, text);
	if (read_shape(text, len, pg))
		return 0;
	forget(pg, text);
	return read_whole(text, len, pg);
}

json_t *results_page_value(const results_page *pg, size_t i)
{
	if (pg->values)
		return json_incref(pg->values[i]);
	return value_of(pg->text + pg->items[i].at, pg->items[i].len);
}

void results_page_fini(results_page *pg)
{
	forget(pg, NULL);
	free(pg->items);
	memset(pg, 0, sizeof(*pg));
}
