/*
 * The worker's connection to the gateway's hub (hub_link.c): frames on a
 * stream, dialed when first used and again after any failure.
 */
#ifndef WORKER_HUB_LINK_H
#define WORKER_HUB_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "worker/worker.h"

/* A connection to cfg->hub (hub_link.c), a tcp://, ipc:// or tls+tcp://
 * one (hub_socket.h); cfg is borrowed. With watch_idle, one the gateway
 * closed between two exchanges (a restart) is dialed anew before the
 * next, at the cost of a look at the socket (a system call) an exchange:
 * for connections that are idle long, not a worker's own. Returns 0 or
 * an nng error (NNG_EADDRINVAL: a hub URL of another scheme). */
typedef struct hub_link hub_link;
int hub_link_new(const worker_config *cfg, int watch_idle, hub_link **out);
/* Dials, unless connected, within timeout_ms. Returns 0 or nng's error. */
int hub_link_connect(hub_link *l, int timeout_ms);
/* Sends frame and reads the hub's answer into *reply (new, the caller frees
 * it), dialing first when not connected; each step (dial, send, receive)
 * within timeout_ms. Returns 0 or nng's error, after which the next
 * exchange dials again. One exchange at a time. */
int hub_link_exchange(hub_link *l, const uint8_t *frame, size_t len, int timeout_ms, uint8_t **reply,
                      size_t *reply_len);
void hub_link_free(hub_link *l);

#endif
