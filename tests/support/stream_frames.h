/*
 * Frames (proto/wire.h) on an nng stream, for tests that dial the hub as a
 * stranger would (test_rogue_worker) or stand in for it before a worker
 * (test_worker_turns). The gateway and the worker read and write frames on
 * sockets of their own; these blocking calls each take an aio made
 * without a callback, with its timeout already set. Thread-safe for
 * distinct streams; no state.
 */
#ifndef TESTS_SUPPORT_STREAM_FRAMES_H
#define TESTS_SUPPORT_STREAM_FRAMES_H

#include <nng/nng.h>
#include <stddef.h>
#include <stdint.h>

/* Sends len bytes of frame after their prefix. Returns 0 or nng's error. */
int wire_send(nng_stream *s, nng_aio *aio, const uint8_t *frame, size_t len);
/* Reads the next frame into *frame (new, the caller frees it). A length
 * over max is NNG_EMSGSIZE: the stream cannot be read further. Returns 0 or
 * nng's error. */
int wire_recv(nng_stream *s, nng_aio *aio, size_t max, uint8_t **frame, size_t *len);

#endif
