/*
 * Code packages: the zips clients upload (PUT /v1/code/{sha256}) so that a
 * task finds its program's modules and data files on any backend, kept as
 * files named by the SHA-256 of their bytes in one folder of the gateway's
 * (--code-dir). A name is its content, so a package is stored once however
 * many pools use it, and a worker checks what it fetched against it.
 *
 * An upload streams to a temporary file in the folder, hashed on the way,
 * and becomes the package only once complete, of the name it claimed, and
 * synced (rename, then the folder synced): an upload cut off, over the cap
 * or of other bytes than its name leaves nothing. The hub reads packages in
 * pieces for the workers of the pools made with them.
 *
 * Thread-safe: the store's fields are set once; each upload is its
 * caller's alone.
 */
#ifndef GATEWAY_CODE_STORE_H
#define GATEWAY_CODE_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct code_store code_store;

/* Opens (making it 0700 if absent) the folder dir, removing the temporary
 * files of uploads a stop cut off. max_bytes: one package at most. */
int code_store_open(const char *dir, int64_t max_bytes, code_store **out, char *detail, size_t detail_len);
void code_store_free(code_store *s);
int64_t code_store_max_bytes(const code_store *s);

/* Whether the package named sha256 is stored (CM_OK, its size in *size) or
 * not (CM_ENOENT); CM_EINVAL when sha256 is not a name (cm_sha256_name_valid). */
int code_store_stat(code_store *s, const char *sha256, int64_t *size);

/* Reads up to cap bytes of the package from offset into buf: *got bytes
 * (0 at or past its end) and its size. CM_OK, CM_ENOENT, CM_EINVAL, CM_EIO. */
int code_store_read(code_store *s, const char *sha256, uint64_t offset, void *buf, size_t cap, size_t *got,
                    int64_t *size);

/* An upload in progress. */
typedef struct code_upload code_upload;
/* Begins the upload of the package named sha256. CM_EINVAL (not a name),
 * CM_EIO (the folder refuses a file), CM_ENOMEM; the reason in detail. */
int code_upload_begin(code_store *s, const char *sha256, code_upload **out, char *detail, size_t detail_len);
/* The next bytes. CM_ETOOBIG once the upload passes the cap (nothing more
 * is written; abort it), CM_EIO. */
int code_upload_write(code_upload *u, const void *data, size_t len, char *detail, size_t detail_len);
/* Ends it: CM_OK once the package is stored under its name (or was
 * already); CM_EINVAL when its bytes hash to another name, CM_EIO. Frees u,
 * whatever the outcome. */
int code_upload_finish(code_upload *u, int64_t *size, char *detail, size_t detail_len);
/* Forgets it: its temporary file goes. Frees u (NULL: nothing). */
void code_upload_abort(code_upload *u);

#endif
