/* SHA-256 over OpenSSL's libcrypto; see sha256.h. */
#include <openssl/evp.h>
#include <string.h>

#include "common/sha256.h"

void cm_sha256_init(cm_sha256 *h)
{
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx && EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(h->ctx);
		h->ctx = NULL;
	}
}

void cm_sha256_update(cm_sha256 *h, const void *data, size_t len)
{
	if (h->ctx)
		EVP_DigestUpdate(h->ctx, data, len);
}

/* The digest's 32 bytes (zeros when out of memory); h is done. */
static void finish(cm_sha256 *h, unsigned char sum[32])
{
	unsigned int n = 0;

	memset(sum, 0, 32);
	if (h->ctx)
		EVP_DigestFinal_ex(h->ctx, sum, &n);
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

void cm_sha256_discard(cm_sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

void cm_sha256_hex(cm_sha256 *h, char out[CM_SHA256_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char sum[32];

	finish(h, sum);
	for (size_t i = 0; i < sizeof(sum); i++) {
		out[2 * i] = digits[sum[i] >> 4];
		out[2 * i + 1] = digits[sum[i] & 15];
	}
	out[CM_SHA256_HEX] = '\0';
}

void cm_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len, char out[CM_SHA256_HEX + 1])
{
	unsigned char block[64] = {0}, inner[32], pad[64];
	cm_sha256 h;

	if (key_len > sizeof(block)) { /* a long key is its digest */
		cm_sha256_init(&h);
		cm_sha256_update(&h, key, key_len);
		finish(&h, block);
	} else
		memcpy(block, key, key_len);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = block[i] ^ 0x36;
	cm_sha256_init(&h);
	cm_sha256_update(&h, pad, sizeof(pad));
	cm_sha256_update(&h, data, len);
	finish(&h, inner);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = block[i] ^ 0x5c;
	cm_sha256_init(&h);
	cm_sha256_update(&h, pad, sizeof(pad));
	cm_sha256_update(&h, inner, sizeof(inner));
	cm_sha256_hex(&h, out);
}

int cm_value_ref(const char *arg, size_t len, char sha[CM_SHA256_HEX + 1])
{
	static const char head[] = "{\"$value\":\"";

	if (len != CM_VALUE_REF_LEN || memcmp(arg, head, sizeof(head) - 1) != 0 || memcmp(arg + len - 2, "\"}", 2) != 0)
		return 0;
	memcpy(sha, arg + sizeof(head) - 1, CM_SHA256_HEX);
	sha[CM_SHA256_HEX] = '\0';
	return cm_sha256_name_valid(sha);
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
