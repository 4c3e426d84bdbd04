/*
 * hub: the nng REP socket workers dial. Each frame's header names its worker
 * and carries that worker's own secret, checked against the credentials
 * before the body is decoded (within a memory budget); a frame from an
 * unknown worker, with a wrong secret, naming another worker or pool in its
 * body, or that does not decode, is refused with a Batch{REFUSED, reason}
 * and never reaches the engine. Results that are not UTF-8 JSON become
 * failed tasks here. Pulls go to engine_pull, queue and pipe calls from code
 * inside workers to engine_queue_call.
 */
#ifndef GATEWAY_HUB_H
#define GATEWAY_HUB_H

#include "gateway/credentials.h"
#include "gateway/engine.h"

typedef struct hub hub;

/* Listens on url; creds is borrowed and outlives the hub. *out is new
 * (hub_close, then hub_free). */
int hub_start(const char *url, engine *e, credentials *creds, hub **out, char *detail, size_t detail_len);
/* Stops taking frames: no callback reaches the engine after this returns,
 * while the engine may still answer the slots it holds (into the void). */
void hub_close(hub *h);
/* Frees the hub, after hub_close and once the engine is gone. */
void hub_free(hub *h);

#endif
