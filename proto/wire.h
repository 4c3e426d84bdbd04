/*
 * wire: frames (frame.h) on a byte stream between a worker and the hub
 * (tcp://, tls+tcp://, ipc://). Each frame goes as a 4-byte little-endian
 * length, then the frame:
 *
 *   +----------------+------------------------------+
 *   | length (u32 LE) | frame: header, then message |
 *   +----------------+------------------------------+
 *
 * A connection carries one exchange at a time: the worker sends a frame and
 * reads the hub's answer before it sends the next. Why not nng's REQ/REP:
 * those protocols pass each message through nng's task threads several
 * times (a thread hand-off each, about 120 us of an apply's round trip on
 * this machine). The worker (worker/hub_socket.c) and the hub
 * (gateway/hub/hub.c) each read and write the frames on sockets of their
 * own. No state.
 */
#ifndef PROTO_WIRE_H
#define PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define WIRE_PREFIX 4

void wire_prefix_put(uint8_t out[WIRE_PREFIX], size_t len);
size_t wire_prefix_get(const uint8_t in[WIRE_PREFIX]);

/* Drops the n bytes a send moved from the front of iov[*niov]. */
void wire_iov_advance(struct iovec *iov, unsigned *niov, size_t n);

/* The most a TLS record carries. */
#define WIRE_RECORD_MAX 16384
/* What to hand TLS next from the front of iov[n] (n at least 1), in *len
 * bytes: a short first piece (a frame's prefix) and the start of the next
 * copied into joined, so that they go in one record (as two, each cost a
 * segment, and the second waited for a delayed ACK without TCP_NODELAY);
 * else the first piece as it is. The same bytes for the same iov, as a
 * TLS write tried again needs. */
const void *wire_next_write(const struct iovec *iov, unsigned n, uint8_t joined[WIRE_RECORD_MAX], size_t *len);

#endif
