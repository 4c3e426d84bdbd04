/* Values named by tasks' arguments; see values.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "proto/frame.h"
#include "worker/blobs.h"
#include "worker/values.h"

/* The grants kept: those of the tasks a worker holds, and more. */
#define GRANTS_KEPT 4096
#define CACHE_BYTES_DEFAULT ((int64_t)4 << 30)

typedef struct grant {
	char sha[CM_SHA256_HEX + 1];
	char mac[CM_SHA256_HEX + 1];
} grant;

struct worker_values {
	const worker_config *cfg;
	pthread_mutex_t mu;
	grant *grants; /* GRANTS_KEPT, the oldest replaced first */
	size_t next;
	hub_link *link; /* dialed on first use; one fetch at a time (fetching) */
	pthread_mutex_t fetching; /* and storing: link is one exchange at a time */
	int64_t cache_bytes;
};

worker_values *worker_values_new(const worker_config *cfg)
{
	worker_values *v = calloc(1, sizeof(*v));
	const char *cap = getenv("STRAND_VALUE_CACHE_BYTES");

	if (!v || !(v->grants = calloc(GRANTS_KEPT, sizeof(*v->grants)))) {
		free(v);
		return NULL;
	}
	v->cfg = cfg;
	v->cache_bytes = cap && atoll(cap) > 0 ? atoll(cap) : CACHE_BYTES_DEFAULT;
	pthread_mutex_init(&v->mu, NULL);
	pthread_mutex_init(&v->fetching, NULL);
	return v;
}

void worker_values_free(worker_values *v)
{
	if (!v)
		return;
	hub_link_free(v->link);
	pthread_mutex_destroy(&v->mu);
	pthread_mutex_destroy(&v->fetching);
	free(v->grants);
	free(v);
}

void worker_values_grant(worker_values *v, char *const *grants, size_t n)
{
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < n; i++) {
		const char *space = strchr(grants[i], ' ');
		if (!space || space - grants[i] != CM_SHA256_HEX || strlen(space + 1) != CM_SHA256_HEX)
			continue;
		grant *g = &v->grants[v->next++ % GRANTS_KEPT];
		memcpy(g->sha, grants[i], CM_SHA256_HEX);
		g->sha[CM_SHA256_HEX] = '\0';
		memcpy(g->mac, space + 1, CM_SHA256_HEX + 1);
	}
	pthread_mutex_unlock(&v->mu);
}

int worker_values_grant_of(worker_values *v, const char *sha, char mac[CM_SHA256_HEX + 1])
{
	int found = 0;

	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < GRANTS_KEPT && !found; i++) {
		const grant *g = &v->grants[(v->next + GRANTS_KEPT - 1 - i) % GRANTS_KEPT];
		if (strcmp(g->sha, sha) == 0) {
			memcpy(mac, g->mac, CM_SHA256_HEX + 1);
			found = 1;
		}
	}
	pthread_mutex_unlock(&v->mu);
	return found;
}

void worker_values_trim(const char *dir, int64_t cap, const char *keep)
{
	time_t recent = time(NULL) - WORKER_VALUES_TRIM_GRACE_S;

	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *e;
		struct stat st;
		char oldest[CM_SHA256_HEX + 1] = "";
		struct timespec when = {0};
		int64_t total = 0;
		if (!d)
			return;
		while ((e = readdir(d))) {
			if (!cm_sha256_name_valid(e->d_name) ||
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			total += st.st_size;
			if (strcmp(e->d_name, keep) != 0 && st.st_mtim.tv_sec < recent &&
			    (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
			     (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec))) {
				memcpy(oldest, e->d_name, sizeof(oldest)); /* a valid name: 64 digits and its NUL */
				when = st.st_mtim;
			}
		}
		if (total <= cap || !oldest[0] || unlinkat(dirfd(d), oldest, 0) != 0) {
			closedir(d);
			return;
		}
		closedir(d);
	}
}

/* Fetches the value into path, through a temporary file of this fetch. */
static int fetch(worker_values *v, const char *dir, const char *sha, const char *path, char *why, size_t why_len)
{
	char mac[CM_SHA256_HEX + 1], temp[1200];
	int64_t size = 0;
	int fd, err, rv;

	if (!worker_values_grant_of(v, sha, mac)) {
		snprintf(why, why_len, "value %s: this worker holds no grant to fetch it", sha);
		return CM_EPERM;
	}
	if (!v->link && (rv = hub_link_new(v->cfg, 1, &v->link)) != 0) {
		snprintf(why, why_len, "cannot dial hub %s: %s", v->cfg->hub, nng_strerror(rv));
		return CM_EUNAVAIL;
	}
	/* A name of this fetch's own: the workers of a sandboxed pool share the
	 * cache, each in a pid namespace where it is pid 2 (sandbox.h). */
	char nonce[17];
	cm_random_hex(nonce, 8);
	snprintf(temp, sizeof(temp), "%s/.%s.%s", dir, sha, nonce);
	if ((fd = open(temp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		snprintf(why, why_len, "cannot write %s: %s", temp, strerror(errno));
		return CM_EIO;
	}
	err = worker_blob_fetch(v->link, v->cfg, sha, mac, fd, &size, why, why_len);
	close(fd);
	if (err == CM_OK && rename(temp, path) != 0) {
		snprintf(why, why_len, "cannot keep %s: %s", path, strerror(errno));
		err = CM_EIO;
	}
	unlink(temp);
	if (err == CM_OK) {
		cm_info("value %.12s: %lld bytes fetched", sha, (long long)size);
		worker_values_trim(dir, v->cache_bytes, sha);
	} else {
		char what[300];
		snprintf(what, sizeof(what), "value %s: %s", sha, why);
		snprintf(why, why_len, "%s", what);
	}
	return err;
}

int worker_values_path(worker_values *v, const char *sha, char *path, size_t path_len, char *why, size_t why_len)
{
	char dir[1024];
	int err = CM_OK;

	if (worker_cache_dir("values", dir, sizeof(dir)) != 0) {
		snprintf(why, why_len, "no cache folder for values (%s): %s", dir, strerror(errno));
		return CM_EIO;
	}
	snprintf(path, path_len, "%s/%s", dir, sha);
	pthread_mutex_lock(&v->fetching);
	if (utimensat(AT_FDCWD, path, NULL, 0) != 0) { /* cached: now its latest use */
		/* The workers of a sandboxed pool share the cache: the first to
		 * need a value fetches it, the others wait and use it. */
		char lock_path[1200];
		snprintf(lock_path, sizeof(lock_path), "%s/.%s.lock", dir, sha);
		int lock = cm_lock_file(lock_path); /* one that cannot be had costs only a second fetch */
		if (utimensat(AT_FDCWD, path, NULL, 0) != 0)
			err = fetch(v, dir, sha, path, why, why_len);
		if (lock >= 0)
			close(lock);
	}
	pthread_mutex_unlock(&v->fetching);
	return err;
}

/* The next piece of the file at at. */
static ssize_t piece(int fd, uint64_t at, uint8_t *buf, size_t cap)
{
	ssize_t n;

	do
		n = pread(fd, buf, cap, (off_t)at);
	while (n < 0 && errno == EINTR);
	return n;
}

/* Notes one grant, for sha. */
static void keep_grant(worker_values *v, const char *sha, const char *mac)
{
	char text[2 * CM_SHA256_HEX + 2];
	char *one = text;

	snprintf(text, sizeof(text), "%s %s", sha, mac);
	worker_values_grant(v, &one, 1);
}

/* One BlobPut, answered: CM_OK, or an error with why. The last's answer
 * carries the grant to read what was stored: kept. */
static int put_piece(worker_values *v, const char *sha, uint64_t at, const uint8_t *buf, size_t n, int last, char *why,
                     size_t why_len)
{
	Strand__BlobPut p = STRAND__BLOB_PUT__INIT;
	Strand__BlobPart *part = NULL;

	p.worker_id = (char *)v->cfg->worker_id;
	p.pool_id = (char *)v->cfg->pool_id;
	p.sha256 = (char *)sha;
	p.offset = at;
	p.data = (ProtobufCBinaryData){.data = (uint8_t *)buf, .len = n};
	p.last = last;
	int err = worker_blob_exchange(v->link, v->cfg, PROTO_BLOB_PUT, &p.base, &part, why, why_len);
	if (part && last && part->value_grant && strlen(part->value_grant) == CM_SHA256_HEX)
		keep_grant(v, sha, part->value_grant);
	if (part)
		protobuf_c_message_free_unpacked(&part->base, NULL);
	return err;
}

int worker_values_store(worker_values *v, const char *path, char sha[CM_SHA256_HEX + 1], char *why, size_t why_len)
{
	enum { PIECE = 1 << 20 };
	uint8_t *buf = malloc(PIECE);
	int fd = -1, err = CM_OK, rv;
	struct stat st;
	cm_sha256 hash;
	uint64_t at = 0, len;
	ssize_t n = 0;

	if (!buf || (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 || fstat(fd, &st) != 0 ||
	    !S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "the result's file %.200s: %s", path, buf ? strerror(errno) : "out of memory");
		free(buf);
		if (fd >= 0)
			close(fd);
		return CM_EIO;
	}
	len = (uint64_t)st.st_size;
	/* Its name first (a pass over it), then its pieces. */
	cm_sha256_init(&hash);
	while (at < len && (n = piece(fd, at, buf, PIECE)) > 0) {
		cm_sha256_update(&hash, buf, (size_t)n);
		at += (uint64_t)n;
	}
	cm_sha256_hex(&hash, sha);
	if (at != len)
		err = CM_EIO;
	pthread_mutex_lock(&v->fetching);
	if (err == CM_OK && !v->link && (rv = hub_link_new(v->cfg, 1, &v->link)) != 0) {
		snprintf(why, why_len, "cannot dial hub %s: %s", v->cfg->hub, nng_strerror(rv));
		err = CM_EUNAVAIL;
	}
	for (at = 0; err == CM_OK;) {
		if ((n = piece(fd, at, buf, PIECE)) < 0 || (n == 0 && at < len)) {
			err = CM_EIO;
			break;
		}
		err = put_piece(v, sha, at, buf, (size_t)n, at + (uint64_t)n >= len, why, why_len);
		if ((at += (uint64_t)n) >= len)
			break;
	}
	pthread_mutex_unlock(&v->fetching);
	if (err == CM_EIO && n <= 0)
		snprintf(why, why_len, "the result's file %.200s: cannot read it", path);
	close(fd);
	if (err == CM_OK)
		unlink(path);
	free(buf);
	return err;
}

int worker_values_take(worker_values *v, const char *sha, const char *take, char *why, size_t why_len)
{
	Strand__BlobFetch f = STRAND__BLOB_FETCH__INIT;
	Strand__BlobPart *part = NULL;
	int err = CM_OK, rv;

	f.worker_id = (char *)v->cfg->worker_id;
	f.pool_id = (char *)v->cfg->pool_id;
	f.sha256 = (char *)sha;
	f.value_grant = (char *)take;
	f.take = 1;
	pthread_mutex_lock(&v->fetching);
	if (!v->link && (rv = hub_link_new(v->cfg, 1, &v->link)) != 0) {
		snprintf(why, why_len, "cannot dial hub %s: %s", v->cfg->hub, nng_strerror(rv));
		err = CM_EUNAVAIL;
	}
	if (err == CM_OK)
		err = worker_blob_exchange(v->link, v->cfg, PROTO_BLOB_FETCH, &f.base, &part, why, why_len);
	pthread_mutex_unlock(&v->fetching);
	if (part)
		protobuf_c_message_free_unpacked(&part->base, NULL);
	return err;
}
