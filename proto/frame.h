/*
 * Framing of protocol messages on nng. nng already delimits messages; a frame
 * adds a header so that a stray or future peer is refused with a clear reason
 * instead of being misparsed, and so that the hub can tell who is speaking
 * before it decodes a single byte of the body:
 *
 *   +----+----+---------+------+--------+-----------+---------+--------+--------------------+
 *   | 'S'| 'T'| version | type | id len | worker id | sec len | secret | protobuf-c message |
 *   +----+----+---------+------+--------+-----------+---------+--------+--------------------+
 *     1    1      1        1       1      id len        1      sec len
 *
 * A worker's frames (Pull, QueueCall, BlobFetch, BlobPut, ManagerCall) carry its id and its own
 * secret; the gateway's (Batch, QueueReply, BlobPart, ManagerReply) carry neither (both lengths 0).
 *
 * Decoding allocates through a budget of PROTO_DECODE_BUDGET(len) bytes, so
 * a frame made of many empty elements cannot expand into gigabytes.
 * Thread-safe; no state.
 */
#ifndef PROTO_FRAME_H
#define PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/strand.pb-c.h"

#define PROTO_VERSION 3 /* 3: tasks and results by columns */
#define PROTO_MAGIC_LEN 4 /* 'S', 'T', version, type */
#define PROTO_HEADER_MAX (PROTO_MAGIC_LEN + 2 * (1 + 255)) /* the longest header: two 255-byte strings */
/* The largest frame either side accepts: tasks and results are capped far
 * below this, and a batch is cut to fit. */
#define PROTO_FRAME_MAX (32u << 20)
/* What decoding a frame of len bytes may allocate: the bytes themselves and
 * room for the message structures of a real batch of small results. */
#define PROTO_DECODE_BUDGET(len) (2 * (size_t)(len) + ((size_t)16 << 20))

typedef enum proto_type {
	PROTO_PULL = 1,
	PROTO_BATCH = 2,
	PROTO_QUEUE_CALL = 3,
	PROTO_QUEUE_REPLY = 4,
	PROTO_BLOB_FETCH = 5,
	PROTO_BLOB_PART = 6,
	PROTO_BLOB_PUT = 7,
	PROTO_MANAGER_CALL = 8,
	PROTO_MANAGER_REPLY = 9,
} proto_type;

/* A frame's header, parsed; the strings point into the frame (not
 * NUL-terminated). */
typedef struct proto_header {
	proto_type type;
	const char *worker_id;
	size_t worker_id_len;
	const char *secret;
	size_t secret_len;
	size_t body; /* offset of the protobuf message */
} proto_header;

/* How long the header of a frame starting with data[len] is, once its
 * first bytes say (both lengths read); 0 until then. */
size_t proto_frame_header_len(const uint8_t *data, size_t len);

/* Parses the header only. Returns CM_OK, or CM_EINVAL / CM_ETOOBIG with the
 * reason in detail. */
int proto_frame_header(const uint8_t *data, size_t len, proto_header *out, char *detail, size_t detail_len);

/* Encodes msg (a message matching type) into a new heap buffer, with the
 * sender's worker id and secret (both NULL for the gateway's frames). *out is
 * new, owned by the caller. Returns CM_OK, CM_EINVAL, CM_ETOOBIG or
 * CM_ENOMEM; *out untouched on failure. */
int proto_frame_encode(proto_type type, const char *worker_id, const char *secret, const ProtobufCMessage *msg,
                       uint8_t **out, size_t *out_len);

/* Decodes a frame of the given type; a Batch's task columns, or a Pull's
 * result columns, that do not agree with each other (lengths, the texts'
 * bytes, outcomes) are refused as corrupt. On success *out is a new message to be
 * freed with protobuf_c_message_free_unpacked(*out, NULL). On failure returns
 * CM_EINVAL or CM_ETOOBIG and writes the reason into detail. */
int proto_frame_decode(proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out, char *detail,
                       size_t detail_len);

/* A region that decoded messages are allocated in, one piece after another:
 * where protobuf-c takes a few allocations for each task or result, a decode
 * into an empty arena takes one block (sized from the frame), and one that
 * has grown to the frames it sees takes none (a worker keeps one for its
 * batches; the hub one per slot, emptied after each frame). A message
 * decoded into it lives until the next decode into it, or its fini; it is
 * never freed by itself. Zeroed: empty. */
typedef struct proto_arena {
	uint8_t *block;
	size_t cap, used;
	struct proto_arena_extra *extra; /* pieces taken when block was full */
	size_t left; /* the decode's budget */
	int spent;
} proto_arena;
/* As proto_frame_decode, into a (what it held before goes). */
int proto_frame_decode_in(proto_arena *a, proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out,
                          char *detail, size_t detail_len);
/* size bytes that live as long as what was decoded into a, within what is
 * left of its decode's budget; NULL when none. */
void *proto_arena_alloc(proto_arena *a, size_t size);
void proto_arena_fini(proto_arena *a);

#endif
