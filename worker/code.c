/* The pool's code package: fetched, checked, unpacked, entered; see code.h. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "proto/frame.h"
#include "worker/code.h"
#include "worker/blobs.h"
#include "worker/library.h"

/* What a package may unpack to: a zip of highly repetitive bytes (a "zip
 * bomb") fills no disk. */
#define UNPACKED_MIN_CAP ((int64_t)1 << 30)
#define UNPACKED_RATIO 32

static int is_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
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

/* libarchive, loaded when a package is first unpacked (library.h): most
 * workers find theirs unpacked by another, and libarchive's 13 libraries
 * (ICU's among them, through libxml2) were about half of a worker's start.
 * Its functions used here. */
#define ARCHIVE_FUNCTIONS(X)                                                                                           \
	X(archive_, read_new)                                                                                          \
	X(archive_, write_disk_new)                                                                                    \
	X(archive_, read_support_format_zip)                                                                           \
	X(archive_, write_disk_set_options)                                                                            \
	X(archive_, read_open_filename)                                                                                \
	X(archive_, error_string)                                                                                      \
	X(archive_, read_next_header)                                                                                  \
	X(archive_, entry_pathname)                                                                                    \
	X(archive_, entry_filetype)                                                                                    \
	X(archive_, entry_hardlink)                                                                                    \
	X(archive_, entry_set_pathname)                                                                                \
	X(archive_, entry_set_perm)                                                                                    \
	X(archive_, entry_perm)                                                                                        \
	X(archive_, write_header)                                                                                      \
	X(archive_, read_data_block)                                                                                   \
	X(archive_, write_data_block)                                                                                  \
	X(archive_, write_finish_entry)                                                                                \
	X(archive_, write_close)                                                                                       \
	X(archive_, write_free)                                                                                        \
	X(archive_, read_free)

static struct {
	ARCHIVE_FUNCTIONS(LIBRARY_MEMBER)
} la;

/* Loads libarchive's functions into la, once; or says why not. */
static int archive_load(char *why, size_t why_len)
{
#define SLOT(prefix, name) (void **)&la.name,
	static const char *const names[] = {ARCHIVE_FUNCTIONS(LIBRARY_NAME)};
	void **const slots[] = {ARCHIVE_FUNCTIONS(SLOT)};
#undef SLOT
	static int loaded;

	if (!loaded && library_load("libarchive.so.13", "libarchive13", names, slots, sizeof(names) / sizeof(*names),
	                            why, why_len) == 0)
		loaded = 1;
	return loaded ? 0 : -1;
}

/* The zip's files and folders into dir: nothing else (no links, no
 * devices), nothing outside it, no more than the unpacked cap. */
static int unpack(const char *zip, int64_t zip_size, const char *dir, char *why, size_t why_len)
{
	if (archive_load(why, why_len) != 0)
		return CM_EUNAVAIL;
	struct archive *in = la.read_new(), *out = la.write_disk_new();
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
	la.read_support_format_zip(in);
	la.write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                       ARCHIVE_EXTRACT_SECURE_SYMLINKS);
	if (la.read_open_filename(in, zip, 1 << 16) != ARCHIVE_OK) {
		snprintf(why, why_len, "the package is not a zip: %s", la.error_string(in));
		err = CM_EINVAL;
		goto done;
	}
	while (err == CM_OK && (r = la.read_next_header(in, &e)) == ARCHIVE_OK) {
		const char *name = la.entry_pathname(e);
		int folder = la.entry_filetype(e) == AE_IFDIR;
		char path[2048];
		const void *buf;
		size_t len;
		la_int64_t at;

		/* A hard link would be a link to any file of this host. */
		if (!name_inside(name) || (!folder && la.entry_filetype(e) != AE_IFREG) || la.entry_hardlink(e)) {
			snprintf(why, why_len,
			         "the package holds '%.200s': only files and folders inside it are unpacked",
			         name ? name : "");
			err = CM_EINVAL;
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		la.entry_set_pathname(e, path);
		la.entry_set_perm(e, folder || (la.entry_perm(e) & 0100) ? 0755 : 0644);
		if (la.write_header(out, e) != ARCHIVE_OK) {
			snprintf(why, why_len, "cannot unpack '%.200s': %s", name, la.error_string(out));
			err = CM_EIO;
			break;
		}
		while (!folder && (r = la.read_data_block(in, &buf, &len, &at)) == ARCHIVE_OK) {
			if ((total += (int64_t)len) > cap) {
				snprintf(why, why_len, "the package unpacks to over %lld bytes", (long long)cap);
				err = CM_ETOOBIG;
				break;
			}
			if (la.write_data_block(out, buf, len, at) != ARCHIVE_OK) {
				snprintf(why, why_len, "cannot unpack '%.200s': %s", name, la.error_string(out));
				err = CM_EIO;
				break;
			}
		}
		if (err == CM_OK && !folder && r != ARCHIVE_EOF) {
			snprintf(why, why_len, "the package's '%.200s' is damaged: %s", name, la.error_string(in));
			err = CM_EINVAL;
		}
		if (err == CM_OK && la.write_finish_entry(out) != ARCHIVE_OK) {
			snprintf(why, why_len, "cannot unpack '%.200s': %s", name, la.error_string(out));
			err = CM_EIO;
		}
	}
	if (err == CM_OK && r != ARCHIVE_EOF) {
		snprintf(why, why_len, "the package is damaged: %s", la.error_string(in));
		err = CM_EINVAL;
	}
done:
	if (out) {
		la.write_close(out);
		la.write_free(out);
	}
	if (in)
		la.read_free(in);
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
	if ((lock = cm_lock_file(lock_path)) < 0) {
		snprintf(why, why_len, "cannot lock %s: %s", lock_path, strerror(errno));
		return CM_EIO;
	}
	if (is_dir(dir)) {
		close(lock);
		return CM_OK;
	}
	snprintf(zip, sizeof(zip), "%s/.%s.%d.zip", cache, cfg->code, (int)getpid());
	snprintf(temp, sizeof(temp), "%s/.%s.%d", cache, cfg->code, (int)getpid());
	cm_remove_tree(temp);
	if ((fd = open(zip, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		snprintf(why, why_len, "cannot write %s: %s", zip, strerror(errno));
		close(lock);
		return CM_EIO;
	}
	hub_link *link = NULL;
	int rv = hub_link_new(cfg, 0, &link);
	if (rv != 0) {
		snprintf(why, why_len, "cannot dial hub %s: %s", cfg->hub, nng_strerror(rv));
		err = CM_EUNAVAIL;
	} else
		err = worker_blob_fetch(link, cfg, cfg->code, NULL, fd, &size, why, why_len);
	hub_link_free(link);
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
	cm_remove_tree(temp);
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
	if (worker_cache_dir("code", cache, sizeof(cache)) != 0) {
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
