/*
 * Frames on an nng stream (stream_frames.h).
 */
#include "tests/support/stream_frames.h"

#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

/* Runs op until all len bytes at p went: a stream may move fewer at a
 * time. */
static int move_all(nng_stream *s, nng_aio *aio, uint8_t *p, size_t len, void (*op)(nng_stream *, nng_aio *))
{
	while (len) {
		nng_iov iov = {.iov_buf = p, .iov_len = len};
		int rv;
		nng_aio_set_iov(aio, 1, &iov);
		op(s, aio);
		nng_aio_wait(aio);
		if ((rv = nng_aio_result(aio)) != 0)
			return rv;
		if (nng_aio_count(aio) == 0)
			return NNG_ECLOSED;
		p += nng_aio_count(aio);
		len -= nng_aio_count(aio);
	}
	return 0;
}

int wire_send(nng_stream *s, nng_aio *aio, const uint8_t *frame, size_t len)
{
	uint8_t *all = malloc(WIRE_PREFIX + len);
	int rv;

	if (!all)
		return NNG_ENOMEM;
	wire_prefix_put(all, len);
	if (len)
		memcpy(all + WIRE_PREFIX, frame, len);
	rv = move_all(s, aio, all, WIRE_PREFIX + len, nng_stream_send);
	free(all);
	return rv;
}

int wire_recv(nng_stream *s, nng_aio *aio, size_t max, uint8_t **frame, size_t *len)
{
	uint8_t prefix[WIRE_PREFIX];
	uint8_t *buf;
	size_t n;
	int rv;

	if ((rv = move_all(s, aio, prefix, WIRE_PREFIX, nng_stream_recv)) != 0)
		return rv;
	if ((n = wire_prefix_get(prefix)) > max)
		return NNG_EMSGSIZE;
	if (!(buf = malloc(n ? n : 1)))
		return NNG_ENOMEM;
	if ((rv = move_all(s, aio, buf, n, nng_stream_recv)) != 0) {
		free(buf);
		return rv;
	}
	*frame = buf;
	*len = n;
	return 0;
}
