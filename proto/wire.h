/*
 * wire: frames (frame.h) on a byte stream between a worker and the hub,
 * over nng's streams (tcp://, tls+tcp://, ipc://). Each frame goes as a
 * 4-byte little-endian length, then the frame:
 *
 *   +----------------+------------------------------+
 *   | length (u32 LE) | frame: header, then message |
 *   +----------------+------------------------------+
 *
 * A connection carries one exchange at a time: the worker sends a frame and
 * reads the hub's answer before it sends the next. Why not nng's REQ/REP:
 * those protocols pass each message through nng's task threads several
 * times (a thread hand-off each, about 120 us of an apply's round trip on
 * this machine); a stream read that the caller waits on completes on the
 * poller thread itself.
 *
 * The blocking calls below are the worker's on a tls+tcp:// hub (to a
 * tcp:// or ipc:// one it writes the same frames on a socket of its own,
 * worker/hub_socket.c) and tests': each takes an aio made without a
 * callback, with its timeout already set. Thread-safe for distinct
 * streams; no state.
 */
#ifndef PROTO_WIRE_H
#define PROTO_WIRE_H

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_PREFIX 4

void wire_prefix_put(uint8_t out[WIRE_PREFIX], size_t len);
size_t wire_prefix_get(const uint8_t in[WIRE_PREFIX]);

/* Drops the n bytes a stream moved from the front of iov[*niov]. */
void wire_iov_advance(nng_iov *iov, unsigned *niov, size_t n);

/* Sends len bytes of frame after their prefix. Returns 0 or nng's error. */
int wire_send(nng_stream *s, nng_aio *aio, const uint8_t *frame, size_t len);
/* Reads the next frame into *frame (new, the caller frees it). A length
 * over max is NNG_EMSGSIZE: the stream cannot be read further. Returns 0 or
 * nng's error. */
int wire_recv(nng_stream *s, nng_aio *aio, size_t max, uint8_t **frame, size_t *len);
/* The same when the frame's first got_len bytes (fewer than WIRE_PREFIX)
 * were read already. */
int wire_recv_after(nng_stream *s, nng_aio *aio, size_t max, const uint8_t *got, size_t got_len, uint8_t **frame,
                    size_t *len);

#endif
