/* Code packages on disk; see blob_store.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/blob_store.h"

#define TEMP_PREFIX ".upload-"

struct blob_store {
	char dir[1100];
	int dir_fd; /* for openat, and synced after each rename */
	const blob_kind *kind;
	int64_t max_bytes, max_total;
	pthread_mutex_t mu;
	int64_t total; /* under mu: blobs held and uploads' bytes so far */
};

struct blob_upload {
	blob_store *store;
	char name[CM_SHA256_HEX + 1];
	char temp[32];
	int fd;
	int64_t len;
	cm_sha256 hash;
};

const blob_kind blob_kind_code = {"code package", "--max-code-bytes", NULL};
const blob_kind blob_kind_value = {"value", "--max-value-bytes", "--max-values-total"};

/* Removes the temporary files of uploads a stop cut off (nothing names
 * them) and counts the bytes of the blobs held. */
static void tidy_and_count(blob_store *s)
{
	int fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0)
			unlinkat(s->dir_fd, e->d_name, 0);
		else if (cm_sha256_name_valid(e->d_name) &&
		         fstatat(s->dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			s->total += st.st_size;
	}
	closedir(d);
}

int blob_store_open(const char *dir, const blob_kind *kind, int64_t max_bytes, int64_t max_total, blob_store **out,
                    char *detail, size_t detail_len)
{
	blob_store *s = calloc(1, sizeof(*s));

	if (!s)
		return CM_ENOMEM;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->kind = kind;
	s->max_bytes = max_bytes;
	s->max_total = max_total;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(detail, detail_len, "cannot make the %s folder %s: %s", kind->what, dir, strerror(errno));
		free(s);
		return CM_EIO;
	}
	if ((s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(detail, detail_len, "cannot open the %s folder %s: %s", kind->what, dir, strerror(errno));
		free(s);
		return CM_EIO;
	}
	pthread_mutex_init(&s->mu, NULL);
	tidy_and_count(s);
	*out = s;
	return CM_OK;
}

void blob_store_free(blob_store *s)
{
	if (!s)
		return;
	close(s->dir_fd);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int64_t blob_store_max_bytes(const blob_store *s)
{
	return s->max_bytes;
}

int64_t blob_store_total(blob_store *s)
{
	pthread_mutex_lock(&s->mu);
	int64_t total = s->total;
	pthread_mutex_unlock(&s->mu);
	return total;
}

/* Counts len more bytes if the total cap allows them. */
static int take_room(blob_store *s, int64_t len)
{
	int ok;

	pthread_mutex_lock(&s->mu);
	ok = !s->max_total || s->total + len <= s->max_total;
	if (ok)
		s->total += len;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

static void give_room(blob_store *s, int64_t len)
{
	pthread_mutex_lock(&s->mu);
	s->total -= len;
	pthread_mutex_unlock(&s->mu);
}

static void say_total_cap(const blob_store *s, char *detail, size_t detail_len)
{
	snprintf(detail, detail_len, "the gateway holds %lld bytes of %ss at most (%s): remove some first",
	         (long long)s->max_total, s->kind->what, s->kind->total_flag ? s->kind->total_flag : "");
}

static void say_cap(const blob_store *s, char *detail, size_t detail_len)
{
	snprintf(detail, detail_len, "a %s is over the gateway's %lld byte cap (%s)", s->kind->what,
	         (long long)s->max_bytes, s->kind->cap_flag);
}

int blob_store_stat(blob_store *s, const char *sha256, int64_t *size)
{
	struct stat st;

	if (!cm_sha256_name_valid(sha256))
		return CM_EINVAL;
	if (fstatat(s->dir_fd, sha256, &st, 0) != 0 || !S_ISREG(st.st_mode))
		return CM_ENOENT;
	*size = st.st_size;
	return CM_OK;
}

int blob_store_read(blob_store *s, const char *sha256, uint64_t offset, void *buf, size_t cap, size_t *got,
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

int blob_store_open_blob(blob_store *s, const char *sha256, int *fd, int64_t *size)
{
	struct stat st;

	if (!cm_sha256_name_valid(sha256))
		return CM_EINVAL;
	if ((*fd = openat(s->dir_fd, sha256, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? CM_ENOENT : CM_EIO;
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(*fd);
		*fd = -1;
		return CM_EIO;
	}
	*size = st.st_size;
	return CM_OK;
}

int blob_store_remove(blob_store *s, const char *sha256)
{
	struct stat st;

	if (!cm_sha256_name_valid(sha256))
		return CM_EINVAL;
	pthread_mutex_lock(&s->mu);
	int err = fstatat(s->dir_fd, sha256, &st, AT_SYMLINK_NOFOLLOW) != 0 ? CM_ENOENT
	          : unlinkat(s->dir_fd, sha256, 0) != 0                     ? CM_EIO
	                                                                    : CM_OK;
	if (err == CM_OK)
		s->total -= st.st_size;
	pthread_mutex_unlock(&s->mu);
	return err;
}

int blob_upload_begin(blob_store *s, const char *sha256, int64_t expected, blob_upload **out, char *detail,
                      size_t detail_len)
{
	blob_upload *u;

	if (!cm_sha256_name_valid(sha256)) {
		snprintf(detail, detail_len, "a %s is named by the SHA-256 of its bytes: 64 lowercase hex digits",
		         s->kind->what);
		return CM_EINVAL;
	}
	if (expected > s->max_bytes) {
		snprintf(detail, detail_len, "the %s's %lld bytes are over the gateway's %lld byte cap (%s)",
		         s->kind->what, (long long)expected, (long long)s->max_bytes, s->kind->cap_flag);
		return CM_ETOOBIG;
	}
	if (expected > 0 && s->max_total && blob_store_total(s) + expected > s->max_total) {
		say_total_cap(s, detail, detail_len);
		return CM_EQUOTA;
	}
	if (!(u = calloc(1, sizeof(*u))))
		return CM_ENOMEM;
	u->store = s;
	memcpy(u->name, sha256, sizeof(u->name));
	/* A name of its own in the folder (O_EXCL); never one a blob has. */
	for (int tries = 0;; tries++) {
		char suffix[17];
		cm_random_hex(suffix, 8);
		snprintf(u->temp, sizeof(u->temp), TEMP_PREFIX "%s", suffix);
		u->fd = openat(s->dir_fd, u->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (u->fd >= 0)
			break;
		if (errno != EEXIST || tries == 3) {
			snprintf(detail, detail_len, "cannot store a %s in %s: %s", s->kind->what, s->dir,
			         strerror(errno));
			free(u);
			return CM_EIO;
		}
	}
	cm_sha256_init(&u->hash);
	*out = u;
	return CM_OK;
}

int blob_upload_write(blob_upload *u, const void *data, size_t len, char *detail, size_t detail_len)
{
	const char *p = data;

	if (u->len + (int64_t)len > u->store->max_bytes) {
		say_cap(u->store, detail, detail_len);
		return CM_ETOOBIG;
	}
	if (!take_room(u->store, (int64_t)len)) {
		say_total_cap(u->store, detail, detail_len);
		return CM_EQUOTA;
	}
	cm_sha256_update(&u->hash, data, len);
	u->len += (int64_t)len;
	while (len) {
		ssize_t n = write(u->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(detail, detail_len, "cannot store a %s in %s: %s", u->store->kind->what, u->store->dir,
			         strerror(errno));
			return CM_EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return CM_OK;
}

void blob_upload_abort(blob_upload *u)
{
	if (!u)
		return;
	close(u->fd);
	unlinkat(u->store->dir_fd, u->temp, 0);
	give_room(u->store, u->len);
	cm_sha256_discard(&u->hash);
	free(u);
}

int blob_upload_finish(blob_upload *u, int64_t *size, char *detail, size_t detail_len)
{
	char got[CM_SHA256_HEX + 1];
	blob_store *s = u->store;
	struct stat st;

	cm_sha256_hex(&u->hash, got);
	if (strcmp(got, u->name) != 0) {
		snprintf(detail, detail_len, "the body's SHA-256 is %s, not the %s its path names", got, u->name);
		blob_upload_abort(u);
		return CM_EINVAL;
	}
	/* Its bytes on disk before its name: a crash leaves a whole blob or
	 * only a temporary file. The same blob stored meanwhile by another
	 * upload is replaced by these same bytes, counted once. */
	if (fsync(u->fd) != 0) {
		snprintf(detail, detail_len, "cannot store a %s in %s: %s", s->kind->what, s->dir, strerror(errno));
		blob_upload_abort(u);
		return CM_EIO;
	}
	pthread_mutex_lock(&s->mu);
	int64_t before = fstatat(s->dir_fd, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_size : 0;
	int renamed = renameat(s->dir_fd, u->temp, s->dir_fd, u->name) == 0;
	if (renamed)
		s->total -= before;
	pthread_mutex_unlock(&s->mu);
	if (!renamed || fsync(s->dir_fd) != 0) {
		snprintf(detail, detail_len, "cannot store a %s in %s: %s", s->kind->what, s->dir, strerror(errno));
		if (renamed) { /* named, but perhaps not durably: it stays, counted */
			close(u->fd);
			free(u);
		} else
			blob_upload_abort(u);
		return CM_EIO;
	}
	*size = u->len;
	close(u->fd);
	free(u);
	return CM_OK;
}
