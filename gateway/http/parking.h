/*
 * parking: HTTP requests that wait without holding a thread. A long poll
 * (results or apply with ?wait=, a join, a manager call's result, a queue
 * get, a DELETE that waits for processes to end) suspends its libmicrohttpd
 * connection here and is resumed when there may be something new: a commit
 * after the generation it saw, its deadline, an engine call's answer, or the
 * gateway stopping. Resuming makes libmicrohttpd call the request's handler
 * again, which looks once more and answers or parks again.
 */
#ifndef GATEWAY_HTTP_PARKING_H
#define GATEWAY_HTTP_PARKING_H

#include <microhttpd.h>
#include <stdint.h>

#include "gateway/engine/engine.h"

typedef struct parking parking;

/* Starts the thread that resumes connections whose wait is over; watches
 * e's commits (engine_on_commit). *out is new (parking_free). */
int parking_new(engine *e, parking **out);

/* From a request handler: suspends c until the generation of what it
 * watches moves past gen, deadline_ms (cm_now_ms's clock), or
 * parking_stop, whichever comes first. */
void parking_wait(parking *pk, struct MHD_Connection *c, engine_watch what, uint64_t gen, int64_t deadline_ms);

/* From a request handler: suspends c until parking_resume(c), for an
 * engine call it started. Call it before starting the call: the call's
 * done may run at once. */
void parking_hold(parking *pk, struct MHD_Connection *c);
void parking_resume(parking *pk, struct MHD_Connection *c); /* any thread */

/* Whether parking_stop began: a request resumed now answers at once. */
int parking_stopping(parking *pk);

/* Resumes every waiting connection, then waits until each held one was
 * resumed too (the engine answers them once it quiesced). After it, no
 * connection is suspended, so libmicrohttpd can stop. */
void parking_stop(parking *pk);
void parking_free(parking *pk);

#endif
