/*
 * SHA-256 (Debian's mbedtls, which nng's TLS already brings): the names of
 * code packages, which the gateway checks an upload against and a worker
 * checks what it fetched against. Thread-safe; no state.
 */
#ifndef COMMON_SHA256_H
#define COMMON_SHA256_H

#include <mbedtls/sha256.h>
#include <stddef.h>

#define CM_SHA256_HEX 64 /* a digest's name: lowercase hex digits */

typedef struct cm_sha256 {
	mbedtls_sha256_context ctx;
} cm_sha256;

void cm_sha256_init(cm_sha256 *h);
void cm_sha256_update(cm_sha256 *h, const void *data, size_t len);
/* Writes the digest as CM_SHA256_HEX digits and a NUL; h is done. */
void cm_sha256_hex(cm_sha256 *h, char out[CM_SHA256_HEX + 1]);
/* Whether name is exactly CM_SHA256_HEX lowercase hex digits: what may be
 * a file's name in a store of packages. */
int cm_sha256_name_valid(const char *name);

#endif
