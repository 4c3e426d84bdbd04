/*
 * Values a task's argument names instead of holding ({"$value":"SHA256"}:
 * uploaded with PUT /v1/values/{sha256}, over 8 MiB or shared by many
 * tasks). Each is fetched from the hub once per host and user, with the
 * grant its task's batch carried, into the cache's "values" folder
 * (blobs.h) under its SHA-256, checked, and kept while the folder stays
 * under STRAND_VALUE_CACHE_BYTES (default 4 GiB): past it the least
 * recently used go. A runtime task gets the file's path
 * ({"$value_file":"PATH"}), any other task the value's bytes. A result
 * too large for a pull goes the other way: stored as a value, and named.
 *
 * Thread-safe: grants are noted by the thread that talks to the hub and
 * read by the one running the task.
 */
#ifndef WORKER_VALUES_H
#define WORKER_VALUES_H

#include <stddef.h>

#include "common/sha256.h"
#include "worker/worker.h"

typedef struct worker_values worker_values;

/* cfg is borrowed. NULL when out of memory. */
worker_values *worker_values_new(const worker_config *cfg);
void worker_values_free(worker_values *v);

/* Notes the grants a batch carried (Batch.value_grants: "SHA256 GRANT"). */
void worker_values_grant(worker_values *v, char *const *grants, size_t n);

/* The newest grant kept for sha into mac (to fetch it, or to name it in a
 * queue item); 0 when none is. */
int worker_values_grant_of(worker_values *v, const char *sha, char mac[CM_SHA256_HEX + 1]);

/* Removes the value named sha from the gateway (a queue item's, read
 * once), by its take grant (QueueReply.value_grants). CM_OK, or an error
 * with why. */
int worker_values_take(worker_values *v, const char *sha, const char *take, char *why, size_t why_len);

/* The cached file holding the value named sha (fetched now unless cached)
 * into path. CM_OK, or an error with the reason in why. */
int worker_values_path(worker_values *v, const char *sha, char *path, size_t path_len, char *why, size_t why_len);

/* A value used this recently is never trimmed: another worker on the host
 * may have just been given its path (the cache is shared), and its task
 * opens the file a moment later. */
#define WORKER_VALUES_TRIM_GRACE_S 60

/* Removes the least recently used values of the cache folder dir (by
 * modification time: a use touches its file) until it holds cap bytes at
 * most, keeping keep (the one just fetched; "" for none) and those used in
 * the last WORKER_VALUES_TRIM_GRACE_S, even past cap. */
void worker_values_trim(const char *dir, int64_t cap, const char *keep);

/* A runtime's result (or queue item) too large for a pull, which it wrote
 * to the file path ({"$value_file":"PATH"}): stored as a value through the
 * hub (BlobPut), in pieces, and the file removed; the grant to read it is
 * kept. Its name into sha. CM_OK, or an error with why. */
int worker_values_store(worker_values *v, const char *path, char sha[CM_SHA256_HEX + 1], char *why, size_t why_len);

#endif
