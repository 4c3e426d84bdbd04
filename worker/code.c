/* The pool's code package: fetched, checked, unpacked, entered; see code.h. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "proto/frame.h"
#include "worker/code.h"
#include "worker/hub_link.h"

#define EXCHANGE_MS 30000
/* What a package may unpack to: a zip of highly repetitive bytes (a "zip
 * bomb") fills no disk. */
#define UNPACKED_MIN_CAP ((int64_t)1 << 30)
#define UNPACKED_RATIO 32

static int is_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p, 0700 for what it makes. */
static int make_dirs(const char *path)
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

/* The cache's folder for packages: the first of STRAND_CACHE_DIR,
 * ~/.cache/strand and /tmp/strand-cache-UID this worker can write (in the
 * local backend's sandbox only /tmp can be). One in /tmp must be this
 * user's own: a folder another user made there could hand this worker
 * other code. */
static int cache_dir(char *out, size_t len)
{
	const char *set = getenv("STRAND_CACHE_DIR"), *home = getenv("HOME");
	struct stat st;

	if (set && set[0]) {
		snprintf(out, len, "%s/code", set);
		if (make_dirs(out) == 0 && access(out, W_OK) == 0)
			return 0;
	}
	if (home && home[0] && strcmp(home, "/") != 0) {
		snprintf(out, len, "%s/.cache/strand/code", home);
		if (make_dirs(out) == 0 && access(out, W_OK) == 0)
			return 0;
	}
	snprintf(out, len, "/tmp/strand-cache-%u", (unsigned)getuid());
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		return -1;
	if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
		errno = EPERM;
		return -1;
	}
	snprintf(out + strlen(out), len - strlen(out), "/code");
	return make_dirs(out);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
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

/* One piece of the package from offset: the hub's answer, decoded. */
static int fetch_piece(hub_link *link, const worker_config *cfg, uint64_t offset, Strand__CodePart **out, char *why,
                       size_t why_len)
{
	Strand__CodeFetch f = STRAND__CODE_FETCH__INIT;
	ProtobufCMessage *msg = NULL;
	uint8_t *frame = NULL, *reply = NULL;
	size_t len, reply_len;
	char detail[256];
	proto_header h;
	int rv;

	f.worker_id = (char *)cfg->worker_id;
	f.pool_id = (char *)cfg->pool_id;
	f.sha256 = (char *)cfg->code;
	f.offset = offset;
	if (proto_frame_encode(PROTO_CODE_FETCH, cfg->worker_id, cfg->secret, &f.base, &frame, &len) != CM_OK) {
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
	    proto_frame_decode(PROTO_BATCH, reply, reply_len, &msg, detail, sizeof(detail)) == CM_OK) {
		snprintf(why, why_len, "the hub refused: %s", ((Strand__Batch *)msg)->error);
		protobuf_c_message_free_unpacked(msg, NULL);
		free(reply);
		return CM_EPERM;
	}
	rv = proto_frame_decode(PROTO_CODE_PART, reply, reply_len, &msg, detail, sizeof(detail));
	free(reply);
	if (rv != CM_OK) {
		snprintf(why, why_len, "the hub's answer: %s", detail);
		return CM_EINVAL;
	}
	*out = (Strand__CodePart *)msg;
	if (!(*out)->ok) {
		snprintf(why, why_len, "%s", (*out)->error);
		protobuf_c_message_free_unpacked(msg, NULL);
		return CM_ENOENT;
	}
	return CM_OK;
}

/* The whole package into the file fd, checked against its name. */
static int fetch(const worker_config *cfg, int fd, int64_t *size, char *why, size_t why_len)
{
	hub_link *link = NULL;
	uint64_t offset = 0, total = 0;
	char got[CM_SHA256_HEX + 1];
	cm_sha256 hash;
	int64_t give_up = cm_now_ms() + (int64_t)cfg->gateway_timeout_s * 1000;
	int err = CM_OK, rv;

	if ((rv = hub_link_new(cfg, 0, &link)) != 0) {
		snprintf(why, why_len, "cannot dial hub %s: %s", cfg->hub, nng_strerror(rv));
		return CM_EUNAVAIL;
	}
	/* A gateway that restarts has the worker wait, as its pulls would. */
	while ((rv = hub_link_connect(link, 5000)) != 0 && cm_now_ms() < give_up)
		usleep(100 * 1000);
	cm_sha256_init(&hash);
	do {
		Strand__CodePart *part = NULL;
		if ((err = fetch_piece(link, cfg, offset, &part, why, why_len)) != CM_OK)
			break;
		if (offset == 0)
			total = part->size;
		if (part->size != total || (part->data.len == 0 && offset < total) || offset + part->data.len > total) {
			snprintf(why, why_len, "the hub's pieces of the package do not add up");
			err = CM_EINVAL;
		} else if (write_all(fd, part->data.data, part->data.len) != 0) {
			snprintf(why, why_len, "cannot write the package to the cache: %s", strerror(errno));
			err = CM_EIO;
		}
		cm_sha256_update(&hash, part->data.data, part->data.len);
		offset += part->data.len;
		protobuf_c_message_free_unpacked(&part->base, NULL);
	} while (err == CM_OK && offset < total);
	hub_link_free(link);
	cm_sha256_hex(&hash, got);
	if (err == CM_OK && strcmp(got, cfg->code) != 0) {
		snprintf(why, why_len, "the package fetched hashes to %s, not %s", got, cfg->code);
		err = CM_EINVAL;
	}
	*size = (int64_t)total;
	return err;
}

/* Whether a name in the zip stays inside the folder it unpacks into. */
static int name_inside(const char *name)
{
	if (!name || !name[0] || name[0] == '/')
		return 0;
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		p += *p == '/';
	}
	return 1;
}

/* The zip's files and folders into dir: nothing else (no links, no
 * devices), nothing outside it, no more than the unpacked cap. */
static int unpack(const char *zip, int64_t zip_size, const char *dir, char *why, size_t why_len)
{
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *e;
	int64_t total = 0, cap = zip_size * UNPACKED_RATIO;
	int err = CM_OK, r = ARCHIVE_FATAL;

	if (cap < UNPACKED_MIN_CAP)
		cap = UNPACKED_MIN_CAP;
	if (!in || !out) {
		snprintf(why, why_len, "out of memory");
		err = CM_ENOMEM;
		goto done;
	}
	archive_read_support_format_zip(in);
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                            ARCHIVE_EXTRACT_SECURE_SYMLINKS);
	if (archive_read_open_filename(in, zip, 1 << 16) != ARCHIVE_OK) {
		snprintf(why, why_len, "the package is not a zip: %s", archive_error_string(in));
		err = CM_EINVAL;
		goto done;
	}
	while (err == CM_OK && (r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		int folder = archive_entry_filetype(e) == AE_IFDIR;
		char path[2048];
		const void *buf;
		size_t len;
		la_int64_t at;

		/* A hard link would be a link to any file of this host. */
		if (!name_inside(name) || (!folder && archive_entry_filetype(e) != AE_IFREG) ||
		    archive_entry_hardlink(e)) {
			snprintf(why, why_len,
			         "the package holds '%.200s': only files and folders inside it are unpacked",
			         name ? name : "");
			err = CM_EINVAL;
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		archive_entry_set_pathname(e, path);
		archive_entry_set_perm(e, folder || (archive_entry_perm(e) & 0100) ? 0755 : 0644);
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			snprintf(why, why_len, "cannot unpack '%.200s': %s", name, archive_error_string(out));
			err = CM_EIO;
			break;
		}
		while (!folder && (r = archive_read_data_block(in, &buf, &len, &at)) == ARCHIVE_OK) {
			if ((total += (int64_t)len) > cap) {
				snprintf(why, why_len, "the package unpacks to over %lld bytes", (long long)cap);
				err = CM_ETOOBIG;
				break;
			}
			if (archive_write_data_block(out, buf, len, at) != ARCHIVE_OK) {
				snprintf(why, why_len, "cannot unpack '%.200s': %s", name, archive_error_string(out));
				err = CM_EIO;
				break;
			}
		}
		if (err == CM_OK && !folder && r != ARCHIVE_EOF) {
			snprintf(why, why_len, "the package's '%.200s' is damaged: %s", name, archive_error_string(in));
			err = CM_EINVAL;
		}
		if (err == CM_OK && archive_write_finish_entry(out) != ARCHIVE_OK) {
			snprintf(why, why_len, "cannot unpack '%.200s': %s", name, archive_error_string(out));
			err = CM_EIO;
		}
	}
	if (err == CM_OK && r != ARCHIVE_EOF) {
		snprintf(why, why_len, "the package is damaged: %s", archive_error_string(in));
		err = CM_EINVAL;
	}
done:
	if (out) {
		archive_write_close(out);
		archive_write_free(out);
	}
	if (in)
		archive_read_free(in);
	return err;
}

/* Fetches and unpacks the package into dir (in cache), unless another
 * worker of this user did it first: a lock file makes the others wait. */
static int obtain(const worker_config *cfg, const char *cache, const char *dir, char *why, size_t why_len)
{
	char lock_path[1100], zip[1100], temp[1100];
	int64_t size = 0;
	int lock, fd, err;

	snprintf(lock_path, sizeof(lock_path), "%s/%s.lock", cache, cfg->code);
	if ((lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || flock(lock, LOCK_EX) != 0) {
		snprintf(why, why_len, "cannot lock %s: %s", lock_path, strerror(errno));
		if (lock >= 0)
			close(lock);
		return CM_EIO;
	}
	if (is_dir(dir)) {
		close(lock);
		return CM_OK;
	}
	snprintf(zip, sizeof(zip), "%s/.%s.%d.zip", cache, cfg->code, (int)getpid());
	snprintf(temp, sizeof(temp), "%s/.%s.%d", cache, cfg->code, (int)getpid());
	remove_tree(temp);
	if ((fd = open(zip, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		snprintf(why, why_len, "cannot write %s: %s", zip, strerror(errno));
		close(lock);
		return CM_EIO;
	}
	err = fetch(cfg, fd, &size, why, why_len);
	close(fd);
	if (err == CM_OK && mkdir(temp, 0700) != 0) {
		snprintf(why, why_len, "cannot make %s: %s", temp, strerror(errno));
		err = CM_EIO;
	}
	if (err == CM_OK)
		err = unpack(zip, size, temp, why, why_len);
	if (err == CM_OK && rename(temp, dir) != 0) {
		snprintf(why, why_len, "cannot make %s: %s", dir, strerror(errno));
		err = CM_EIO;
	}
	if (err == CM_OK)
		cm_info("code package %.12s: %lld bytes fetched and unpacked in %s", cfg->code, (long long)size, dir);
	unlink(zip);
	remove_tree(temp);
	close(lock);
	return err;
}

int worker_code_enter(worker_config *cfg, char *why, size_t why_len)
{
	static char hub[1100], code_dir[1100], modules[1200];
	char cache[1024], here[1024], *path = NULL;
	const char *old = getenv("PYTHONPATH");
	int err;

	if (!cm_sha256_name_valid(cfg->code)) {
		snprintf(why, why_len, "STRAND_CODE is not a code package's SHA-256: %.80s", cfg->code);
		return CM_EINVAL;
	}
	if (cache_dir(cache, sizeof(cache)) != 0) {
		snprintf(why, why_len, "no cache folder for code packages (%s): %s", cache, strerror(errno));
		return CM_EIO;
	}
	snprintf(code_dir, sizeof(code_dir), "%s/%s", cache, cfg->code);
	if (!is_dir(code_dir) && (err = obtain(cfg, cache, code_dir, why, why_len)) != CM_OK)
		return err;
	/* The hub is dialed again later, from the package's folder. */
	if (strncmp(cfg->hub, "ipc://", 6) == 0 && cfg->hub[6] != '/' && getcwd(here, sizeof(here))) {
		snprintf(hub, sizeof(hub), "ipc://%s/%s", here, cfg->hub + 6);
		cfg->hub = hub;
	}
	if (chdir(code_dir) != 0) {
		snprintf(why, why_len, "cannot enter %s: %s", code_dir, strerror(errno));
		return CM_EIO;
	}
	snprintf(modules, sizeof(modules), "%s/" WORKER_CODE_MODULES, code_dir);
	if (asprintf(&path, "%s%s%s%s%s", code_dir, is_dir(modules) ? ":" : "", is_dir(modules) ? modules : "",
	             old && old[0] ? ":" : "", old && old[0] ? old : "") < 0) {
		snprintf(why, why_len, "out of memory");
		return CM_ENOMEM;
	}
	setenv("PYTHONPATH", path, 1);
	setenv("STRAND_CODE_DIR", code_dir, 1);
	free(path);
	return CM_OK;
}
