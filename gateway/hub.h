/*
 * hub: the nng REP socket workers dial. Frames are decoded here; a frame
 * that does not decode is refused with a Batch{REFUSED, reason} and never
 * reaches the engine. Everything else goes to engine_pull.
 */
#ifndef GATEWAY_HUB_H
#define GATEWAY_HUB_H

#include "gateway/engine.h"

typedef struct hub hub;

/* Listens on url. *out is new (hub_stop frees it). */
int hub_start(const char *url, engine *e, hub **out, char *detail, size_t detail_len);
void hub_stop(hub *h);

#endif
