/*
 * Blobs named by the SHA-256 of their bytes, kept as files of one folder:
 * the code packages clients upload (PUT /v1/code/{sha256}, --code-dir) and
 * the values too large to travel inline (PUT /v1/values/{sha256},
 * --value-dir). A name is its content, so a blob is stored once however
 * many pools, tasks or arguments use it, and a worker checks what it
 * fetched against it.
 *
 * An upload streams to a temporary file in the folder, hashed on the way,
 * and becomes the blob only once complete, of the name it claimed, and
 * synced (rename, then the folder synced): an upload cut off, over a cap or
 * of other bytes than its name leaves nothing. The hub reads blobs in
 * pieces for the workers allowed them.
 *
 * Thread-safe: the store's settings are set once; its total (of every blob
 * stored and every upload's bytes so far) is under a lock; each upload is
 * its caller's alone.
 */
#ifndef GATEWAY_BLOB_STORE_H
#define GATEWAY_BLOB_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct blob_store blob_store;

/* What a store's messages call its blobs and caps. */
typedef struct blob_kind {
	const char *what; /* "code package", "value" */
	const char *cap_flag; /* the flag of max_bytes: "--max-code-bytes" */
	const char *total_flag; /* the flag of max_total: "--max-values-total" (NULL: no total) */
} blob_kind;

/* The two stores' kinds. */
extern const blob_kind blob_kind_code, blob_kind_value;

/* Opens (making it 0700 if absent) the folder dir, removing the temporary
 * files of uploads a stop cut off and counting what it holds. max_bytes:
 * one blob at most; max_total: all of them (0: no cap). kind: static. */
int blob_store_open(const char *dir, const blob_kind *kind, int64_t max_bytes, int64_t max_total, blob_store **out,
                    char *detail, size_t detail_len);
void blob_store_free(blob_store *s);
int64_t blob_store_max_bytes(const blob_store *s);
/* The bytes of every blob held, with those of uploads under way. */
int64_t blob_store_total(blob_store *s);

/* Whether the blob named sha256 is stored (CM_OK, its size in *size) or
 * not (CM_ENOENT); CM_EINVAL when sha256 is not a name (cm_sha256_name_valid). */
int blob_store_stat(blob_store *s, const char *sha256, int64_t *size);

/* Reads up to cap bytes of the blob from offset into buf: *got bytes (0 at
 * or past its end) and its size. CM_OK, CM_ENOENT, CM_EINVAL, CM_EIO. */
int blob_store_read(blob_store *s, const char *sha256, uint64_t offset, void *buf, size_t cap, size_t *got,
                    int64_t *size);

/* The blob opened for reading (a file descriptor the caller closes) and
 * its size: CM_OK, CM_ENOENT, CM_EINVAL, CM_EIO. */
int blob_store_open_blob(blob_store *s, const char *sha256, int *fd, int64_t *size);

/* Removes the blob: CM_OK, CM_ENOENT, CM_EINVAL, CM_EIO. A reader that
 * opened it before reads it whole. */
int blob_store_remove(blob_store *s, const char *sha256);

/* An upload in progress. */
typedef struct blob_upload blob_upload;
/* Begins the upload of the blob named sha256, whose length is expected
 * (-1: unknown). CM_EINVAL (not a name), CM_ETOOBIG (expected is over the
 * cap on one), CM_EQUOTA (over the total), CM_EIO (the folder refuses a
 * file), CM_ENOMEM; the reason in detail. */
int blob_upload_begin(blob_store *s, const char *sha256, int64_t expected, blob_upload **out, char *detail,
                      size_t detail_len);
/* The next bytes. CM_ETOOBIG or CM_EQUOTA once the upload passes a cap
 * (nothing more is written; abort it), CM_EIO. */
int blob_upload_write(blob_upload *u, const void *data, size_t len, char *detail, size_t detail_len);
/* Ends it: CM_OK once the blob is stored under its name (or was already);
 * CM_EINVAL when its bytes hash to another name, CM_EIO. Frees u, whatever
 * the outcome. */
int blob_upload_finish(blob_upload *u, int64_t *size, char *detail, size_t detail_len);
/* Forgets it: its temporary file goes. Frees u (NULL: nothing). */
void blob_upload_abort(blob_upload *u);

#endif
