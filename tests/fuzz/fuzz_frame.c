/* libFuzzer: the worker protocol's frames, as the hub and the worker read
 * them: the header alone, then a decode as each message type (within the
 * decode budget). */
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "proto/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const proto_type types[] = {PROTO_PULL,        PROTO_BATCH,        PROTO_QUEUE_CALL,
	                                   PROTO_QUEUE_REPLY, PROTO_MANAGER_CALL, PROTO_MANAGER_REPLY};
	char detail[256];
	proto_header h;

	if (proto_frame_header(data, size, &h, detail, sizeof(detail)) == CM_OK && h.body > size)
		__builtin_trap(); /* the header must never point past the frame */
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		ProtobufCMessage *m = NULL;
		if (proto_frame_decode(types[i], data, size, &m, detail, sizeof(detail)) == CM_OK)
			protobuf_c_message_free_unpacked(m, NULL);
	}
	return 0;
}
