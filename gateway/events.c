/*
 * The event log; see events.h. One mutex guards the ring: the engine takes
 * it once per cycle that had events, a reader once per look.
 */
#define _GNU_SOURCE
#include "gateway/events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct event_rec {
	char pool[24];
	size_t len;
	char text[]; /* the whole frame: "id: ...\nevent: ...\ndata: ...\n\n" */
} event_rec;

struct events {
	pthread_mutex_t mu;
	char run[24];
	uint64_t next; /* the number the next event gets; the first is 1 */
	uint64_t oldest; /* the oldest kept (== next: none) */
	size_t bytes;
	int readers;
	event_rec *ring[EVENTS_KEPT]; /* event n at n % EVENTS_KEPT */
};

int events_new(events **out)
{
	events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return CM_ENOMEM;
	pthread_mutex_init(&ev->mu, NULL);
	snprintf(ev->run, sizeof(ev->run), "%" PRId64, cm_wall_ms());
	ev->next = ev->oldest = 1;
	*out = ev;
	return CM_OK;
}

void events_free(events *ev)
{
	if (!ev)
		return;
	for (uint64_t n = ev->oldest; n < ev->next; n++)
		free(ev->ring[n % EVENTS_KEPT]);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

void events_batch_init(events_batch *b)
{
	cm_buf_init(&b->text);
	b->n = 0;
}

void events_batch_fini(events_batch *b)
{
	cm_buf_fini(&b->text);
	b->n = 0;
}

void events_batch_clear(events_batch *b)
{
	b->text.len = 0;
	b->n = 0;
}

void events_batch_add_text(events_batch *b, const char *type, const char *pool, const char *data, size_t len)
{
	size_t at = b->text.len;

	if (cm_buf_append(&b->text, type, strlen(type) + 1) != CM_OK ||
	    cm_buf_append(&b->text, pool, strlen(pool) + 1) != CM_OK || cm_buf_append(&b->text, data, len) != CM_OK ||
	    cm_buf_append(&b->text, "", 1) != CM_OK)
		b->text.len = at; /* out of memory: this one is lost, as a dropped reader would lose it */
	else
		b->n++;
}

void events_batch_add(events_batch *b, const char *type, const char *pool, json_t *data)
{
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;

	json_decref(data);
	if (text)
		events_batch_add_text(b, type, pool, text, strlen(text));
	free(text);
}

/* The oldest goes; ev->mu is held. */
static void drop_oldest(events *ev)
{
	event_rec *r = ev->ring[ev->oldest % EVENTS_KEPT];

	ev->bytes -= r->len;
	free(r);
	ev->ring[ev->oldest % EVENTS_KEPT] = NULL;
	ev->oldest++;
}

size_t events_publish(events *ev, events_batch *b)
{
	size_t published = 0;

	if (!b->n)
		return 0;
	const char *p = b->text.data, *end = b->text.data + b->text.len;
	pthread_mutex_lock(&ev->mu);
	for (size_t i = 0; i < b->n && p < end; i++) {
		const char *type = p, *pool = type + strlen(type) + 1, *data = pool + strlen(pool) + 1;
		size_t dlen = strlen(data);
		int head = snprintf(NULL, 0, "id: %s-%" PRIu64 "\nevent: %s\ndata: ", ev->run, ev->next, type);
		event_rec *r = malloc(sizeof(*r) + (size_t)head + dlen + 3);

		p = data + dlen + 1;
		if (!r)
			continue;
		snprintf(r->pool, sizeof(r->pool), "%s", pool);
		snprintf(r->text, (size_t)head + 1, "id: %s-%" PRIu64 "\nevent: %s\ndata: ", ev->run, ev->next, type);
		memcpy(r->text + head, data, dlen);
		memcpy(r->text + head + dlen, "\n\n", 3);
		r->len = (size_t)head + dlen + 2;
		while (ev->oldest < ev->next &&
		       (ev->next - ev->oldest >= EVENTS_KEPT || ev->bytes + r->len > EVENTS_BYTES))
			drop_oldest(ev);
		ev->ring[ev->next % EVENTS_KEPT] = r;
		ev->bytes += r->len;
		ev->next++;
		published++;
	}
	pthread_mutex_unlock(&ev->mu);
	events_batch_clear(b);
	return published;
}

int events_subscribe(events *ev, const char *last_event_id, uint64_t *cursor, int *reset)
{
	int err = CM_OK;

	*reset = 0;
	pthread_mutex_lock(&ev->mu);
	if (ev->readers >= EVENTS_STREAMS_MAX) {
		err = CM_EUNAVAIL;
	} else {
		size_t run_len = strlen(ev->run);
		const char *seq = last_event_id;
		char *end = NULL;
		unsigned long long n = 0;
		ev->readers++;
		*cursor = ev->next - 1;
		if (last_event_id && last_event_id[0]) {
			if (strncmp(last_event_id, ev->run, run_len) == 0 && last_event_id[run_len] == '-') {
				seq = last_event_id + run_len + 1;
				n = strtoull(seq, &end, 10);
			}
			/* One of this run, still kept (or the newest): go on after it. */
			if (end && end != seq && !*end && n < ev->next && n + 1 >= ev->oldest)
				*cursor = n;
			else
				*reset = 1;
		}
	}
	pthread_mutex_unlock(&ev->mu);
	return err;
}

void events_unsubscribe(events *ev)
{
	pthread_mutex_lock(&ev->mu);
	ev->readers--;
	pthread_mutex_unlock(&ev->mu);
}

int events_subscribed(events *ev)
{
	int n;

	pthread_mutex_lock(&ev->mu);
	n = ev->readers;
	pthread_mutex_unlock(&ev->mu);
	return n > 0;
}

int events_read(events *ev, uint64_t *cursor, const char *pool, cm_buf *out, size_t max)
{
	int result = EVENTS_NONE;
	size_t start = out->len;

	pthread_mutex_lock(&ev->mu);
	if (*cursor + 1 < ev->oldest) {
		result = EVENTS_GAP;
	} else {
		for (uint64_t n = *cursor + 1; n < ev->next; n++) {
			const event_rec *r = ev->ring[n % EVENTS_KEPT];
			if (out->len > start && out->len - start + r->len > max)
				break;
			*cursor = n;
			if (pool && pool[0] && strcmp(pool, r->pool) != 0)
				continue;
			if (cm_buf_append(out, r->text, r->len) != CM_OK) {
				*cursor = n - 1; /* out of memory: looked at again next time */
				break;
			}
			result = EVENTS_SOME;
		}
	}
	pthread_mutex_unlock(&ev->mu);
	return result;
}

int events_id_line(events *ev, uint64_t cursor, cm_buf *out)
{
	return cm_buf_printf(out, "id: %s-%" PRIu64 "\n", ev->run, cursor);
}
