/* Code packages on disk; see code_store.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/code_store.h"

#define TEMP_PREFIX ".upload-"

struct code_store {
	char dir[1100];
	int dir_fd; /* for openat, and synced after each rename */
	int64_t max_bytes;
};

struct code_upload {
	code_store *store;
	char name[CM_SHA256_HEX + 1];
	char temp[32];
	int fd;
	int64_t len;
	cm_sha256 hash;
};

/* Temporary files of uploads a stop cut off: nothing names them. */
static void remove_leftovers(code_store *s)
{
	int fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strncmp(e->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0)
			unlinkat(s->dir_fd, e->d_name, 0);
	closedir(d);
}

int code_store_open(const char *dir, int64_t max_bytes, code_store **out, char *detail, size_t detail_len)
{
	code_store *s = calloc(1, sizeof(*s));

	if (!s)
		return CM_ENOMEM;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->max_bytes = max_bytes;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(detail, detail_len, "cannot make the code folder %s: %s", dir, strerror(errno));
		free(s);
		return CM_EIO;
	}
	if ((s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(detail, detail_len, "cannot open the code folder %s: %s", dir, strerror(errno));
		free(s);
		return CM_EIO;
	}
	remove_leftovers(s);
	*out = s;
	return CM_OK;
}

void code_store_free(code_store *s)
{
	if (!s)
		return;
	close(s->dir_fd);
	free(s);
}

int64_t code_store_max_bytes(const code_store *s)
{
	return s->max_bytes;
}

int code_store_stat(code_store *s, const char *sha256, int64_t *size)
{
	struct stat st;

	if (!cm_sha256_name_valid(sha256))
		return CM_EINVAL;
	if (fstatat(s->dir_fd, sha256, &st, 0) != 0 || !S_ISREG(st.st_mode))
		return CM_ENOENT;
	*size = st.st_size;
	return CM_OK;
}

int code_store_read(code_store *s, const char *sha256, uint64_t offset, void *buf, size_t cap, size_t *got,
                    int64_t *size)
{
	struct stat st;
	int fd;
	ssize_t n;

	*got = 0;
	if (!cm_sha256_name_valid(sha256))
		return CM_EINVAL;
	if ((fd = openat(s->dir_fd, sha256, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? CM_ENOENT : CM_EIO;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return CM_EIO;
	}
	*size = st.st_size;
	while (offset < (uint64_t)st.st_size && *got < cap) {
		n = pread(fd, (char *)buf + *got, cap - *got, (off_t)(offset + *got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	close(fd);
	return CM_OK;
}

int code_upload_begin(code_store *s, const char *sha256, code_upload **out, char *detail, size_t detail_len)
{
	code_upload *u;

	if (!cm_sha256_name_valid(sha256)) {
		snprintf(detail, detail_len,
		         "a code package is named by the SHA-256 of its bytes: 64 lowercase hex digits");
		return CM_EINVAL;
	}
	if (!(u = calloc(1, sizeof(*u))))
		return CM_ENOMEM;
	u->store = s;
	memcpy(u->name, sha256, sizeof(u->name));
	/* A name of its own in the folder (O_EXCL); never one a package has. */
	for (int tries = 0;; tries++) {
		char suffix[17];
		cm_random_hex(suffix, 8);
		snprintf(u->temp, sizeof(u->temp), TEMP_PREFIX "%s", suffix);
		u->fd = openat(s->dir_fd, u->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (u->fd >= 0)
			break;
		if (errno != EEXIST || tries == 3) {
			snprintf(detail, detail_len, "cannot store a code package in %s: %s", s->dir, strerror(errno));
			free(u);
			return CM_EIO;
		}
	}
	cm_sha256_init(&u->hash);
	*out = u;
	return CM_OK;
}

int code_upload_write(code_upload *u, const void *data, size_t len, char *detail, size_t detail_len)
{
	const char *p = data;

	if (u->len + (int64_t)len > u->store->max_bytes) {
		snprintf(detail, detail_len, "a code package is over the gateway's %lld byte cap (--max-code-bytes)",
		         (long long)u->store->max_bytes);
		return CM_ETOOBIG;
	}
	cm_sha256_update(&u->hash, data, len);
	u->len += (int64_t)len;
	while (len) {
		ssize_t n = write(u->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(detail, detail_len, "cannot store a code package in %s: %s", u->store->dir,
			         strerror(errno));
			return CM_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return CM_OK;
}

void code_upload_abort(code_upload *u)
{
	if (!u)
		return;
	close(u->fd);
	unlinkat(u->store->dir_fd, u->temp, 0);
	free(u);
}

int code_upload_finish(code_upload *u, int64_t *size, char *detail, size_t detail_len)
{
	char got[CM_SHA256_HEX + 1];
	code_store *s = u->store;

	cm_sha256_hex(&u->hash, got);
	if (strcmp(got, u->name) != 0) {
		snprintf(detail, detail_len, "the body's SHA-256 is %s, not the %s its path names", got, u->name);
		code_upload_abort(u);
		return CM_EINVAL;
	}
	/* Its bytes on disk before its name: a crash leaves a whole package or
	 * only a temporary file. */
	if (fsync(u->fd) != 0 || renameat(s->dir_fd, u->temp, s->dir_fd, u->name) != 0 || fsync(s->dir_fd) != 0) {
		snprintf(detail, detail_len, "cannot store a code package in %s: %s", s->dir, strerror(errno));
		code_upload_abort(u);
		return CM_EIO;
	}
	*size = u->len;
	close(u->fd);
	free(u);
	return CM_OK;
}
