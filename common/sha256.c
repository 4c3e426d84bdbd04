/* SHA-256 over mbedtls; see sha256.h. */
#include <string.h>

#include "common/sha256.h"

void cm_sha256_init(cm_sha256 *h)
{
	mbedtls_sha256_init(&h->ctx);
	mbedtls_sha256_starts_ret(&h->ctx, 0);
}

void cm_sha256_update(cm_sha256 *h, const void *data, size_t len)
{
	mbedtls_sha256_update_ret(&h->ctx, data, len);
}

void cm_sha256_hex(cm_sha256 *h, char out[CM_SHA256_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];

	mbedtls_sha256_finish_ret(&h->ctx, sum);
	mbedtls_sha256_free(&h->ctx);
	for (size_t i = 0; i < sizeof(sum); i++) {
		out[2 * i] = digits[sum[i] >> 4];
		out[2 * i + 1] = digits[sum[i] & 15];
	}
	out[CM_SHA256_HEX] = '\0';
}

int cm_sha256_name_valid(const char *name)
{
	size_t n = 0;

	if (!name)
		return 0;
	for (; name[n]; n++)
		if (n >= CM_SHA256_HEX || !((name[n] >= '0' && name[n] <= '9') || (name[n] >= 'a' && name[n] <= 'f')))
			return 0;
	return n == CM_SHA256_HEX;
}
