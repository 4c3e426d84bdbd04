/*
 * A plugin for the tests: tasks that use queues and pipes from inside a
 * worker, through the functions strand-worker provides (strand_plugin.h).
 *   qp.so:put  {"queue": Q, "delay_ms": N, "item": X}  -> true, after sleeping N ms (optional)
 *   qp.so:get  {"queue": Q, "wait_ms": N}              -> the item, or null
 *   qp.so:pipe_send {"pipe": P, "end": E, "item": X}        -> true
 *   qp.so:pipe_recv {"pipe": P, "end": E, "wait_ms": N}     -> the item, or null
 *   qp.so:size {"queue": Q} or {"pipe": P, "end": E}      -> how many items wait
 * The argument is parsed by hand (sscanf) so the plugin needs no JSON
 * library: the tests send exactly these shapes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strand_plugin.h"

strand_plugin_fn put, get, pipe_send, pipe_recv, size;

/* The text of "key": value in arg (a flat object), as a new string. */
static char *field(const char *arg, const char *key)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (!(p = strstr(arg, pat)))
		return NULL;
	p += strlen(pat);
	if (*p == '"') {
		end = strchr(p + 1, '"');
		return end ? strndup(p + 1, (size_t)(end - p - 1)) : NULL;
	}
	end = p + strcspn(p, ",}");
	return strndup(p, (size_t)(end - p));
}

/* The raw JSON of "item" (the last field by construction). */
static char *item_of(const char *arg)
{
	const char *p = strstr(arg, "\"item\":");
	size_t n;

	if (!p)
		return NULL;
	p += 7;
	n = strlen(p);
	return n ? strndup(p, n - 1) : NULL; /* drop the closing brace */
}

static int done(int rc, char *got, char **out)
{
	if (rc < 0) {
		*out = strdup("the queue call failed (see the log)");
		free(got);
		return 1;
	}
	*out = rc == 0 ? (got ? got : strdup("true")) : strdup("null");
	return 0;
}

int put(const char *arg, size_t len, char **out)
{
	char *q = field(arg, "queue"), *delay = field(arg, "delay_ms"), *item = item_of(arg);
	int rc;

	(void)len;
	if (delay)
		usleep((useconds_t)atoi(delay) * 1000);
	rc = q && item ? strand_task_queue_put(q, item) : -1;
	free(q);
	free(delay);
	free(item);
	return done(rc, NULL, out);
}

int get(const char *arg, size_t len, char **out)
{
	char *q = field(arg, "queue"), *w = field(arg, "wait_ms"), *got = NULL;
	int rc = q ? strand_task_queue_get(q, w ? atoi(w) : 0, &got) : -1;

	(void)len;
	free(q);
	free(w);
	return done(rc, got, out);
}

int pipe_send(const char *arg, size_t len, char **out)
{
	char *p = field(arg, "pipe"), *e = field(arg, "end"), *item = item_of(arg);
	int rc = p && e && item ? strand_task_pipe_send(p, atoi(e), item) : -1;

	(void)len;
	free(p);
	free(e);
	free(item);
	return done(rc, NULL, out);
}

int pipe_recv(const char *arg, size_t len, char **out)
{
	char *p = field(arg, "pipe"), *e = field(arg, "end"), *w = field(arg, "wait_ms"), *got = NULL;
	int rc = p && e ? strand_task_pipe_recv(p, atoi(e), w ? atoi(w) : 0, &got) : -1;

	(void)len;
	free(p);
	free(e);
	free(w);
	return done(rc, got, out);
}

int size(const char *arg, size_t len, char **out)
{
	char *q = field(arg, "queue"), *p = field(arg, "pipe"), *e = field(arg, "end");
	int64_t n = 0;
	int rc = q ? strand_task_queue_size(q, &n) : p && e ? strand_task_pipe_size(p, atoi(e), &n) : -1;
	char *got = NULL;

	(void)len;
	if (rc == 0 && asprintf(&got, "%lld", (long long)n) < 0)
		rc = -1;
	free(q);
	free(p);
	free(e);
	return done(rc, got, out);
}
