/*
 * hub: the nng REP socket workers dial. Frames are decoded here; a frame
 * that does not decode is refused with a Batch{REFUSED, reason} and never
 * reaches the engine. Pulls go to engine_pull, queue and pipe calls from
 * code inside workers to engine_queue_call.
 */
#ifndef GATEWAY_HUB_H
#define GATEWAY_HUB_H

#include "gateway/engine.h"

typedef struct hub hub;

/* Listens on url. *out is new (hub_stop frees it). */
int hub_start(const char *url, engine *e, hub **out, char *detail, size_t detail_len);
void hub_stop(hub *h);

#endif
