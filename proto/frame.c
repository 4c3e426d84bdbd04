/* Frame encode/decode; see frame.h. */
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "proto/frame.h"

static const ProtobufCMessageDescriptor *descriptor(proto_type type)
{
	switch (type) {
	case PROTO_PULL: return &strand__pull__descriptor;
	case PROTO_BATCH: return &strand__batch__descriptor;
	case PROTO_QUEUE_CALL: return &strand__queue_call__descriptor;
	case PROTO_QUEUE_REPLY: return &strand__queue_reply__descriptor;
	}
	return NULL;
}

proto_type proto_frame_type(const uint8_t *data, size_t len)
{
	if (len < PROTO_HEADER_LEN || data[0] != 'S' || data[1] != 'T' || data[2] != PROTO_VERSION ||
	    !descriptor((proto_type)data[3]))
		return 0;
	return (proto_type)data[3];
}

int proto_frame_encode(proto_type type, const ProtobufCMessage *msg, uint8_t **out, size_t *out_len)
{
	size_t body = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (msg->descriptor != descriptor(type))
		return CM_EINVAL;
	if (body + PROTO_HEADER_LEN > PROTO_FRAME_MAX)
		return CM_ETOOBIG;
	buf = malloc(body + PROTO_HEADER_LEN);
	if (!buf)
		return CM_ENOMEM;
	buf[0] = 'S';
	buf[1] = 'T';
	buf[2] = PROTO_VERSION;
	buf[3] = (uint8_t)type;
	protobuf_c_message_pack(msg, buf + PROTO_HEADER_LEN);
	*out = buf;
	*out_len = body + PROTO_HEADER_LEN;
	return CM_OK;
}

int proto_frame_decode(proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out, char *detail,
                       size_t detail_len)
{
	const ProtobufCMessageDescriptor *d = descriptor(type);
	ProtobufCMessage *msg;

	if (len > PROTO_FRAME_MAX) {
		snprintf(detail, detail_len, "frame of %zu bytes is over the %u byte cap", len, PROTO_FRAME_MAX);
		return CM_ETOOBIG;
	}
	if (len < PROTO_HEADER_LEN || data[0] != 'S' || data[1] != 'T') {
		snprintf(detail, detail_len, "not a strand frame (bad magic or truncated header)");
		return CM_EINVAL;
	}
	if (data[2] != PROTO_VERSION) {
		snprintf(detail, detail_len, "protocol version %u, this side speaks %u", data[2], PROTO_VERSION);
		return CM_EINVAL;
	}
	if (!d || data[3] != (uint8_t)type) {
		snprintf(detail, detail_len, "frame type %u where %u was expected", data[3], (unsigned)type);
		return CM_EINVAL;
	}
	msg = protobuf_c_message_unpack(d, NULL, len - PROTO_HEADER_LEN, data + PROTO_HEADER_LEN);
	if (!msg) {
		snprintf(detail, detail_len, "corrupt or truncated protobuf body");
		return CM_EINVAL;
	}
	*out = msg;
	return CM_OK;
}
