/*
 * events: what changed, for GET /v1/events (Server-Sent Events). The engine
 * gathers a cycle's events in a batch and publishes it after the commit,
 * so an event always describes durable state; readers on HTTP threads
 * follow the log with a cursor of their own.
 *
 * The log is a ring of at most EVENTS_KEPT events and EVENTS_BYTES bytes.
 * Memory never grows with readers: a reader whose next event fell off the
 * ring is too slow, and is dropped (it resumes with Last-Event-ID and is
 * told to reset). Ids are "<run>-<seq>": the gateway's start and a number
 * in it, so an id from an earlier run is known as such.
 */
#ifndef GATEWAY_EVENTS_H
#define GATEWAY_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "common/common.h"

#define EVENTS_KEPT 4096
#define EVENTS_BYTES (4u << 20)
#define EVENTS_STREAMS_MAX 64 /* readers at once: each holds a connection */

typedef struct events events;

int events_new(events **out);
void events_free(events *ev);

/* A cycle's events, in order, until published (engine thread). */
typedef struct events_batch {
	cm_buf text; /* per event: type, pool, data; each NUL-terminated */
	size_t n;
} events_batch;
void events_batch_init(events_batch *b);
void events_batch_fini(events_batch *b);
/* type: "pool", "job", ...; pool: the pool (or manager) it is of, "" for
 * none; data: its JSON (stolen; NULL is dropped, out of memory). */
void events_batch_add(events_batch *b, const char *type, const char *pool, json_t *data);
/* The same with data as JSON text already (len bytes, no NUL among them). */
void events_batch_add_text(events_batch *b, const char *type, const char *pool, const char *data, size_t len);
void events_batch_clear(events_batch *b);
/* Into the log, each with the next id; b is cleared. Returns how many. */
size_t events_publish(events *ev, events_batch *b);

/* Readers. A reader starts after last_event_id (NULL or "": after the
 * newest) and keeps *cursor. *reset is 1 when last_event_id names an event
 * no longer kept or of another run: what happened since is unknown, and
 * the reader should read the state again. CM_EUNAVAIL: EVENTS_STREAMS_MAX
 * readers already. */
int events_subscribe(events *ev, const char *last_event_id, uint64_t *cursor, int *reset);
void events_unsubscribe(events *ev);
/* Whether anybody reads: progress events are only made for readers. */
int events_subscribed(events *ev);

enum { EVENTS_NONE, EVENTS_SOME, EVENTS_GAP };
/* Appends the frames after *cursor (those of pool only, unless pool is
 * NULL or "") to out, about max bytes at most (one frame at least), and
 * moves *cursor past them. EVENTS_GAP: the next event is gone, the reader
 * fell behind. */
int events_read(events *ev, uint64_t *cursor, const char *pool, cm_buf *out, size_t max);
/* An "id: ..." line naming cursor, for a reset frame. */
int events_id_line(events *ev, uint64_t cursor, cm_buf *out);

#endif
