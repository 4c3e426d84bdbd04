/*
 * The worker's socket to a tcp://, ipc:// or tls+tcp:// hub (hub_socket.c;
 * TLS by hub_tls.c): frames (proto/wire.h) sent and read by the calling
 * thread itself, which sleeps in the socket's own recv. Through nng's
 * stream, the answer a worker waits for was read by nng's poller thread
 * and handed to the waiting one: a thread wake-up and a switch more on
 * every exchange.
 *
 * Errors are nng's codes, as hub_link's callers print and compare them.
 */
#ifndef WORKER_HUB_SOCKET_H
#define WORKER_HUB_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "worker/hub_tls.h"

typedef struct hub_socket {
	int fd; /* -1: not connected */
	int timeout_ms; /* the socket's send and receive timeouts, as set last */
	struct ssl_st *tls; /* over a tls+tcp:// hub: the session */
} hub_socket;

/* Connects s to url within timeout_ms: a blocking socket, close-on-exec
 * (nothing a task runs inherits the worker's connection), in TLS by tls
 * for a tls+tcp:// URL (the handshake within timeout_ms too). Returns 0
 * or nng's error (NNG_EADDRINVAL for a URL it cannot read). */
int hub_socket_dial(hub_socket *s, const char *url, int timeout_ms, hub_tls *tls);
/* Sends len bytes of frame after their prefix; the peer must take some of
 * it every timeout_ms. Returns 0 or nng's error. */
int hub_socket_send(hub_socket *s, const uint8_t *frame, size_t len, int timeout_ms);
/* Reads the next frame into *frame (new, the caller frees it); bytes must
 * come every timeout_ms, and nothing after the frame (the hub answers one
 * exchange at a time). A length over max is NNG_EMSGSIZE. Returns 0 or
 * nng's error. */
int hub_socket_recv(hub_socket *s, size_t max, int timeout_ms, uint8_t **frame, size_t *len);
/* Between exchanges: whether the connection is over (the peer closed it,
 * or sent what the hub never sends unasked). */
int hub_socket_over(const hub_socket *s);
void hub_socket_close(hub_socket *s);

#endif
