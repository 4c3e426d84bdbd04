/*
 * event_stream: GET /v1/events, the event log (events.h) as Server-Sent
 * Events. A stream holds no thread: between events its connection is
 * parked (parking.h) until a commit or its next keep-alive comment.
 */
#ifndef GATEWAY_HTTP_EVENT_STREAM_H
#define GATEWAY_HTTP_EVENT_STREAM_H

#include <microhttpd.h>

#include "gateway/engine/engine.h"
#include "gateway/http/parking.h"

#define EVENT_PING_MS 15000 /* a comment this often keeps proxies open and finds readers that left */
#define EVENT_RETRY_MS 2000 /* told to the reader: how soon to reconnect */

/* A stream for c from after last_event_id (the header; NULL: from now) of
 * pool's events only (NULL: all), as *out to queue with 200. CM_EUNAVAIL:
 * EVENTS_STREAMS_MAX streams already; CM_ENOMEM. */
int event_stream_open(engine *e, parking *pk, struct MHD_Connection *c, const char *last_event_id, const char *pool,
                      struct MHD_Response **out);

#endif
