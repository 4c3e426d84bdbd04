/*
 * hub: where workers connect (frames on a stream, proto/wire.h). Each
 * frame's header names its worker and carries that worker's own secret,
 * checked against the credentials before the body is read into memory
 * (within a budget for all connections); a frame from an
 * unknown worker, with a wrong secret, naming another worker or pool in its
 * body, or that does not decode, is refused with a Batch{REFUSED, reason}
 * and never reaches the engine. Results that are not UTF-8 JSON become
 * failed tasks here. Pulls go to engine_pull, queue and pipe calls from code
 * inside workers to engine_queue_call, as plain structs (engine.h); the
 * engine answers through the engine_link the hub sets, and the hub encodes
 * the answer. Only the hub (and the worker) know protobuf.
 */
#ifndef GATEWAY_HUB_H
#define GATEWAY_HUB_H

#include "gateway/blob_store.h"
#include "gateway/credentials.h"
#include "gateway/engine/engine.h"

typedef struct hub hub;

/* Listens on cfg->hub (tls+tcp:// with cfg's certificate and key); cfg,
 * creds, code and values (the packages and values workers fetch) are
 * borrowed and outlive the hub. *out is new (hub_refuse_frames, then hub_free). */
int hub_start(const gw_config *cfg, engine *e, credentials *creds, blob_store *code, blob_store *values, hub **out,
              char *detail, size_t detail_len);
/* From now on every frame is refused without reaching the engine; returns
 * once no callback is inside the engine. The engine may still answer the
 * slots it holds (and must, before hub_free). */
void hub_refuse_frames(hub *h);
/* Closes the socket and frees the hub: after hub_refuse_frames, once the
 * engine has stopped. */
void hub_free(hub *h);

#endif
