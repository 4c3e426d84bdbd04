#include "proto/wire.h"

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

void wire_iov_advance(struct iovec *iov, unsigned *niov, size_t n)
{
	unsigned skip = 0;

	while (skip < *niov && n >= iov[skip].iov_len)
		n -= iov[skip++].iov_len;
	for (unsigned i = skip; i < *niov; i++)
		iov[i - skip] = iov[i];
	*niov -= skip;
	if (*niov) {
		iov[0].iov_base = (uint8_t *)iov[0].iov_base + n;
		iov[0].iov_len -= n;
	}
}
