#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

void wire_prefix_put(uint8_t out[WIRE_PREFIX], size_t len)
{
	for (int i = 0; i < WIRE_PREFIX; i++)
		out[i] = (uint8_t)(len >> (8 * i));
}

size_t wire_prefix_get(const uint8_t in[WIRE_PREFIX])
{
	size_t len = 0;

	for (int i = 0; i < WIRE_PREFIX; i++)
		len |= (size_t)in[i] << (8 * i);
	return len;
}

void wire_iov_advance(nng_iov *iov, unsigned *niov, size_t n)
{
	unsigned skip = 0;

	while (skip < *niov && n >= iov[skip].iov_len)
		n -= iov[skip++].iov_len;
	for (unsigned i = skip; i < *niov; i++)
		iov[i - skip] = iov[i];
	*niov -= skip;
	if (*niov) {
		iov[0].iov_buf = (uint8_t *)iov[0].iov_buf + n;
		iov[0].iov_len -= n;
	}
}

/* Runs op until every byte of iov went: a stream may move fewer at a time. */
static int move_all(nng_stream *s, nng_aio *aio, nng_iov *iov, unsigned niov, void (*op)(nng_stream *, nng_aio *))
{
	while (niov) {
		int rv;
		nng_aio_set_iov(aio, niov, iov);
		op(s, aio);
		nng_aio_wait(aio);
		if ((rv = nng_aio_result(aio)) != 0)
			return rv;
		if (nng_aio_count(aio) == 0)
			return NNG_ECLOSED;
		wire_iov_advance(iov, &niov, nng_aio_count(aio));
	}
	return 0;
}

int wire_send(nng_stream *s, nng_aio *aio, const uint8_t *frame, size_t len)
{
	uint8_t prefix[WIRE_PREFIX];
	nng_iov iov[2] = {{.iov_buf = prefix, .iov_len = WIRE_PREFIX}, {.iov_buf = (void *)frame, .iov_len = len}};

	wire_prefix_put(prefix, len);
	return move_all(s, aio, iov, len ? 2 : 1, nng_stream_send);
}

int wire_recv(nng_stream *s, nng_aio *aio, size_t max, uint8_t **frame, size_t *len)
{
	return wire_recv_after(s, aio, max, NULL, 0, frame, len);
}

int wire_recv_after(nng_stream *s, nng_aio *aio, size_t max, const uint8_t *got, size_t got_len, uint8_t **frame,
                    size_t *len)
{
	uint8_t prefix[WIRE_PREFIX];
	nng_iov iov = {.iov_buf = prefix + got_len, .iov_len = WIRE_PREFIX - got_len};
	uint8_t *buf;
	size_t n;
	int rv;

	if (got_len)
		memcpy(prefix, got, got_len);
	if ((rv = move_all(s, aio, &iov, 1, nng_stream_recv)) != 0)
		return rv;
	if ((n = wire_prefix_get(prefix)) > max)
		return NNG_EMSGSIZE;
	if (!(buf = malloc(n ? n : 1)))
		return NNG_ENOMEM;
	iov = (nng_iov){.iov_buf = buf, .iov_len = n};
	if (n && (rv = move_all(s, aio, &iov, 1, nng_stream_recv)) != 0) {
		free(buf);
		return rv;
	}
	*frame = buf;
	*len = n;
	return 0;
}
