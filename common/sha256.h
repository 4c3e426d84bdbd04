/*
 * SHA-256 (OpenSSL's libcrypto: with the CPU's SHA instructions some 1.2
 * GB/s, ten times mbedtls's, which made hashing most of a large value's
 * time): the names of code packages and values, which the gateway checks
 * an upload against and a worker checks what it fetched against.
 * Thread-safe; no state.
 */
#ifndef COMMON_SHA256_H
#define COMMON_SHA256_H

#include <stddef.h>

#define CM_SHA256_HEX 64 /* a digest's name: lowercase hex digits */

typedef struct cm_sha256 {
	struct evp_md_ctx_st *ctx; /* NULL when out of memory: no name matches */
} cm_sha256;

void cm_sha256_init(cm_sha256 *h);
void cm_sha256_update(cm_sha256 *h, const void *data, size_t len);
/* Writes the digest as CM_SHA256_HEX digits and a NUL; h is done. */
void cm_sha256_hex(cm_sha256 *h, char out[CM_SHA256_HEX + 1]);
/* Ends h without its digest (a hash given up midway). */
void cm_sha256_discard(cm_sha256 *h);
/* HMAC-SHA-256 (RFC 2104) of data under key, as CM_SHA256_HEX digits: the
 * grant that lets one worker fetch one value (the hub checks it without
 * keeping any state). */
void cm_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len, char out[CM_SHA256_HEX + 1]);

/* A task's argument that names an uploaded value instead of being one:
 * exactly {"$value":"SHA256"} (the gateway keeps arguments compact). The
 * name into sha (NUL-terminated) when it is one. */
#define CM_VALUE_REF_LEN (CM_SHA256_HEX + 13)
int cm_value_ref(const char *arg, size_t len, char sha[CM_SHA256_HEX + 1]);

/* Whether name is exactly CM_SHA256_HEX lowercase hex digits: what may be
 * a file's name in a store of packages. */
int cm_sha256_name_valid(const char *name);

#endif
