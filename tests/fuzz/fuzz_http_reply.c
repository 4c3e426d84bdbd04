/* libFuzzer: libstrand's HTTP/1.1 reply parser (client/http_reply.c). The
 * first byte of an input picks how the rest is fed (in pieces of 1 to 64
 * bytes, whole, or as the answer to a HEAD request); the rest is the
 * reply, after which the connection ends. Whatever the bytes, the parser
 * must end in a verdict within its bounds: a body within the cap, never
 * more than it was given. */
#include <stdint.h>
#include <stdlib.h>

#include "client/http_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	http_reply *r;
	http_body body = {0};
	size_t at = 1, piece, used = 0, fed = 0;
	http_reply_verdict v = HTTP_REPLY_MORE;

	if (size < 1 || !(r = malloc(sizeof(*r))))
		return 0;
	piece = (data[0] & 63) + 1;
	if (data[0] & 64)
		piece = size;
	http_reply_init(r, &body, (data[0] & 128) != 0);
	while (at < size && v == HTTP_REPLY_MORE) {
		size_t n = size - at < piece ? size - at : piece;
		v = http_reply_feed(r, (const char *)data + at, n, &used);
		if (v == HTTP_REPLY_DONE && used > n)
			abort();
		fed += v == HTTP_REPLY_DONE ? used : n;
		at += n;
	}
	if (v == HTTP_REPLY_MORE)
		v = http_reply_end(r);
	if (body.len > fed || body.len > HTTP_REPLY_BODY_MAX || (body.data && body.data[body.len] != '\0'))
		abort();
	free(body.data);
	free(r);
	return 0;
}
