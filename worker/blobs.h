/*
 * Blobs the worker fetches from the hub (BlobFetch, in pieces of a MiB):
 * its pool's code package (code.c) and the values its tasks' arguments
 * name (values.c), each checked against the SHA-256 that names it, and
 * cached once per host and user in a folder of theirs: STRAND_CACHE_DIR,
 * else ~/.cache/strand, else /tmp/strand-cache-UID (a container's user may
 * have no home; in the local backend's sandbox only /tmp can be written).
 */
#ifndef WORKER_BLOBS_H
#define WORKER_BLOBS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/frame.h"
#include "worker/hub_link.h"

/* The cache's folder for kind ("code", "values"), made if absent, into
 * out. 0, or -1 with errno. */
int worker_cache_dir(const char *kind, char *out, size_t len);

/* The whole blob named sha256 into the file fd, on link, checked against
 * its name: grant NULL for the pool's code package, else a value's grant
 * (Batch.value_grants). Waits up to cfg->gateway_timeout_s for a gateway
 * that restarts. CM_OK, or an error with the reason in why. */
int worker_blob_fetch(hub_link *link, const worker_config *cfg, const char *sha256, const char *grant, int fd,
                      int64_t *size, char *why, size_t why_len);

/* Sends msg (a BlobFetch or a BlobPut) on link and reads the hub's
 * BlobPart into *out (new): CM_OK; else *out is NULL and why says why:
 * CM_ENOENT (the hub's own words), CM_EPERM (a refusal), CM_EUNAVAIL,
 * CM_EINVAL, CM_ENOMEM. */
int worker_blob_exchange(hub_link *link, const worker_config *cfg, proto_type type, const ProtobufCMessage *msg,
                         Strand__BlobPart **out, char *why, size_t why_len);

/* mkdir -p, 0700 for what it makes. 0, or -1 with errno. */
int worker_make_dirs(const char *path);

#endif
