#include "proto/wire.h"

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

const void *wire_next_write(const struct iovec *iov, unsigned n, uint8_t joined[WIRE_RECORD_MAX], size_t *len)
{
	size_t first = iov[0].iov_len;

	if (n < 2 || first >= WIRE_RECORD_MAX) {
		*len = first;
		return iov[0].iov_base;
	}
	size_t more = iov[1].iov_len < WIRE_RECORD_MAX - first ? iov[1].iov_len : WIRE_RECORD_MAX - first;
	memcpy(joined, iov[0].iov_base, first);
	memcpy(joined + first, iov[1].iov_base, more);
	*len = first + more;
	return joined;
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
