/*
 * Framing of protocol messages on nng. nng already delimits messages; a frame
 * adds a 4-byte header (magic "ST", version, message type) so that a stray
 * or future peer is refused with a clear reason instead of being misparsed.
 *
 *   +----+----+---------+------+------------------------+
 *   | 'S'| 'T'| version | type | protobuf-c message ... |
 *   +----+----+---------+------+------------------------+
 *
 * Thread-safe; no state.
 */
#ifndef PROTO_FRAME_H
#define PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/strand.pb-c.h"

#define PROTO_VERSION 1
#define PROTO_HEADER_LEN 4
/* The largest frame either side accepts: tasks and results are capped far
 * below this, and a batch is cut to fit. */
#define PROTO_FRAME_MAX (32u << 20)

typedef enum proto_type {
	PROTO_PULL = 1,
	PROTO_BATCH = 2,
	PROTO_QUEUE_CALL = 3,
	PROTO_QUEUE_REPLY = 4,
} proto_type;

/* The type of a frame (its header checked), or 0 if it is not one. */
proto_type proto_frame_type(const uint8_t *data, size_t len);

/* Encodes msg (a Strand__Pull or Strand__Batch matching type) into a new heap
 * buffer. *out is new, owned by the caller. Returns CM_OK, CM_ETOOBIG or
 * CM_ENOMEM; *out untouched on failure. */
int proto_frame_encode(proto_type type, const ProtobufCMessage *msg, uint8_t **out, size_t *out_len);

/* Decodes a frame of the given type. On success *out is a new message to be
 * freed with protobuf_c_message_free_unpacked(*out, NULL). On failure returns
 * CM_EINVAL or CM_ETOOBIG and writes the reason into detail. */
int proto_frame_decode(proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out, char *detail,
                       size_t detail_len);

#endif
