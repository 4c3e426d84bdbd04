/* Blobs fetched from the hub and their cache; see blobs.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "proto/frame.h"
#include "worker/blobs.h"

#define EXCHANGE_MS 30000

int worker_make_dirs(const char *path)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* The first of STRAND_CACHE_DIR, ~/.cache/strand and /tmp/strand-cache-UID
 * this worker can write. One in /tmp must be this user's own: a folder
 * another user made there could hand this worker other code or values. */
int worker_cache_dir(const char *kind, char *out, size_t len)
{
	const char *set = getenv("STRAND_CACHE_DIR"), *home = getenv("HOME");
	struct stat st;

	if (set && set[0]) {
		snprintf(out, len, "%s/%s", set, kind);
		if (worker_make_dirs(out) == 0 && access(out, W_OK) == 0)
			return 0;
	}
	if (home && home[0] && strcmp(home, "/") != 0) {
		snprintf(out, len, "%s/.cache/strand/%s", home, kind);
		if (worker_make_dirs(out) == 0 && access(out, W_OK) == 0)
			return 0;
	}
	snprintf(out, len, "/tmp/strand-cache-%u", (unsigned)getuid());
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		return -1;
	if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
		errno = EPERM;
		return -1;
	}
	snprintf(out + strlen(out), len - strlen(out), "/%s", kind);
	return worker_make_dirs(out);
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int worker_blob_exchange(hub_link *link, const worker_config *cfg, proto_type type, const ProtobufCMessage *msg,
                         Strand__BlobPart **out, char *why, size_t why_len)
{
	ProtobufCMessage *answer = NULL;
	uint8_t *frame = NULL, *reply = NULL;
	size_t len, reply_len;
	char detail[256];
	proto_header h;
	int rv;

	if (proto_frame_encode(type, cfg->worker_id, cfg->secret, msg, &frame, &len) != CM_OK) {
		snprintf(why, why_len, "out of memory");
		return CM_ENOMEM;
	}
	rv = hub_link_exchange(link, frame, len, EXCHANGE_MS, &reply, &reply_len);
	free(frame);
	if (rv != 0) {
		snprintf(why, why_len, "hub %s: %s", cfg->hub, nng_strerror(rv));
		return CM_EUNAVAIL;
	}
	/* A refusal (an unknown worker, a bad frame) comes as a Batch. */
	if (proto_frame_header(reply, reply_len, &h, detail, sizeof(detail)) == CM_OK && h.type == PROTO_BATCH &&
	    proto_frame_decode(PROTO_BATCH, reply, reply_len, &answer, detail, sizeof(detail)) == CM_OK) {
		snprintf(why, why_len, "the hub refused: %s", ((Strand__Batch *)answer)->error);
		protobuf_c_message_free_unpacked(answer, NULL);
		free(reply);
		return CM_EPERM;
	}
	rv = proto_frame_decode(PROTO_BLOB_PART, reply, reply_len, &answer, detail, sizeof(detail));
	free(reply);
	if (rv != CM_OK) {
		snprintf(why, why_len, "the hub's answer: %s", detail);
		return CM_EINVAL;
	}
	*out = (Strand__BlobPart *)answer;
	if (!(*out)->ok) {
		snprintf(why, why_len, "%s", (*out)->error);
		protobuf_c_message_free_unpacked(answer, NULL);
		*out = NULL;
		return CM_ENOENT;
	}
	return CM_OK;
}

/* One piece of the blob from offset: the hub's answer, decoded. */
static int fetch_piece(hub_link *link, const worker_config *cfg, const char *sha256, const char *grant, uint64_t offset,
                       Strand__BlobPart **out, char *why, size_t why_len)
{
	Strand__BlobFetch f = STRAND__BLOB_FETCH__INIT;

	f.worker_id = (char *)cfg->worker_id;
	f.pool_id = (char *)cfg->pool_id;
	f.sha256 = (char *)sha256;
	f.offset = offset;
	f.value_grant = (char *)(grant ? grant : "");
	return worker_blob_exchange(link, cfg, PROTO_BLOB_FETCH, &f.base, out, why, why_len);
}

int worker_blob_fetch(hub_link *link, const worker_config *cfg, const char *sha256, const char *grant, int fd,
                      int64_t *size, char *why, size_t why_len)
{
	uint64_t offset = 0, total = 0;
	char got[CM_SHA256_HEX + 1];
	cm_sha256 hash;
	int64_t give_up = cm_now_ms() + (int64_t)cfg->gateway_timeout_s * 1000;
	int err = CM_OK;

	/* A gateway that restarts has the worker wait, as its pulls would. */
	while (hub_link_connect(link, 5000) != 0 && cm_now_ms() < give_up)
		usleep(100 * 1000);
	cm_sha256_init(&hash);
	do {
		Strand__BlobPart *part = NULL;
		if ((err = fetch_piece(link, cfg, sha256, grant, offset, &part, why, why_len)) != CM_OK)
			break;
		if (offset == 0)
			total = part->size;
		if (part->size != total || (part->data.len == 0 && offset < total) || offset + part->data.len > total) {
			snprintf(why, why_len, "the hub's pieces of %.12s do not add up", sha256);
			err = CM_EINVAL;
		} else if (write_all(fd, part->data.data, part->data.len) != 0) {
			snprintf(why, why_len, "cannot write %.12s to the cache: %s", sha256, strerror(errno));
			err = CM_EIO;
		}
		cm_sha256_update(&hash, part->data.data, part->data.len);
		offset += part->data.len;
		protobuf_c_message_free_unpacked(&part->base, NULL);
	} while (err == CM_OK && offset < total);
	cm_sha256_hex(&hash, got);
	if (err == CM_OK && strcmp(got, sha256) != 0) {
		snprintf(why, why_len, "what was fetched hashes to %s, not %s", got, sha256);
		err = CM_EINVAL;
	}
	*size = (int64_t)total;
	return err;
}
