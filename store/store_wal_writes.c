/*
 * A VFS over SQLite's own that turns a commit's writes to the write-ahead
 * log into one write. SQLite writes each frame of the log as two pwrite()s
 * (its 24-byte header, then the page): an apply's commit was 14 system
 * calls, and on a virtual machine where a system call costs microseconds
 * those were a fifth of the engine's time on an apply.
 *
 * Frames appended to a -wal file are gathered while they follow one
 * another and written at once when the commit frame's page arrives (a frame
 * header whose "database size after commit" field is non-zero), before
 * SQLite publishes the commit to readers in the shared index. Everything
 * else goes straight through, after what was gathered: the log's own
 * header (a new log), and rewrites below the end of the log (a page that a
 * large transaction had spilled and changed again, the frame headers whose
 * checksums SQLite then writes anew, after the commit frame). So does any
 * other use of the file (a read, a sync, a size, a truncate, a file
 * control, the close): SQLite sees exactly the file it would have seen, a
 * failed write is reported by the call that made it, inside the
 * transaction, which then rolls back, and when SQLite publishes a commit
 * all of it is in the file. Nothing gathered is lost that SQLite had
 * counted on: a process that dies with frames gathered had not committed
 * them.
 *
 * Other files pass straight through.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_wal_writes.h"

/* SQLite's unix VFS writes at most 128 KiB - 1 in one call (it masks the
 * length to 17 bits): a larger commit goes in writes of about that size,
 * some 31 frames of 4 KiB each. */
#define GATHER_MAX ((128u << 10) - 1)
#define FRAME_HEADER 24

typedef struct wal_file {
	sqlite3_file base;
	sqlite3_file *real; /* SQLite's own file, right after this struct */
	int is_wal;
	unsigned char *buf; /* GATHER_MAX bytes, from the first frame gathered */
	size_t len;
	sqlite3_int64 at; /* where buf[0] goes in the file */
	sqlite3_int64 end; /* the end of the log as written (gathered included) */
	int commit_frame; /* the last write was a commit frame's header: its page ends the commit */
} wal_file;

/* Over the default VFS and over "unix-excl" (store_wal_writes_vfs). */
static sqlite3_vfs gathering_vfs[2];

/* Writes what was gathered. */
static int flush(wal_file *f)
{
	int rc;

	if (f->len == 0)
		return SQLITE_OK;
	rc = f->real->pMethods->xWrite(f->real, f->buf, (int)f->len, f->at);
	f->len = 0;
	return rc;
}

static int gather(wal_file *f, const void *data, int n, sqlite3_int64 off)
{
	/* x_write keeps len + n within GATHER_MAX */
	if (!f->buf && !(f->buf = malloc(GATHER_MAX)))
		return SQLITE_NOMEM;
	if (f->len == 0)
		f->at = off;
	memcpy(f->buf + f->len, data, (size_t)n);
	f->len += (size_t)n;
	return SQLITE_OK;
}

static int is_commit_header(const void *data, int n, sqlite3_int64 off)
{
	const unsigned char *h = data;

	/* The log's own header is 32 bytes at 0; a frame's is 24, its bytes 4
	 * to 7 the database's size once committed (0 in other frames). */
	return n == FRAME_HEADER && off > 0 && (h[4] | h[5] | h[6] | h[7]) != 0;
}

/* Writes through, after what was gathered. */
static int write_through(wal_file *f, const void *data, int n, sqlite3_int64 off)
{
	int rc = flush(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xWrite(f->real, data, n, off);
}

static int x_write(sqlite3_file *file, const void *data, int n, sqlite3_int64 off)
{
	wal_file *f = (wal_file *)file;
	int ends_commit, rc;

	if (!f->is_wal)
		return f->real->pMethods->xWrite(f->real, data, n, off);
	ends_commit = f->commit_frame; /* this write is the commit frame's page */
	f->commit_frame = 0;
	if (off == 0 || off < f->end || (size_t)n > GATHER_MAX) {
		/* The log's header (a new log), a rewrite, or too long to gather. */
		rc = write_through(f, data, n, off);
		if (off == 0 || off + n > f->end)
			f->end = off + n;
		return rc;
	}
	if (f->len && (off != f->at + (sqlite3_int64)f->len || f->len + (size_t)n > GATHER_MAX) &&
	    (rc = flush(f)) != SQLITE_OK)
		return rc;
	f->end = off + n;
	if (gather(f, data, n, off) != SQLITE_OK) /* no memory to gather: write as SQLite would */
		return write_through(f, data, n, off);
	f->commit_frame = is_commit_header(data, n, off);
	return ends_commit ? flush(f) : SQLITE_OK;
}

static int x_close(sqlite3_file *file)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);
	int crc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;

	free(f->buf);
	f->buf = NULL;
	return rc != SQLITE_OK ? rc : crc;
}

/* The methods that see the file: what was gathered is written first. */
static int x_read(sqlite3_file *file, void *out, int n, sqlite3_int64 off)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xRead(f->real, out, n, off);
}

static int x_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	if (size < f->end)
		f->end = size;
	return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int x_sync(sqlite3_file *file, int flags)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int x_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int x_file_control(sqlite3_file *file, int op, void *arg)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

/* The rest is SQLite's own. */
static int x_lock(sqlite3_file *file, int level)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xLock(r, level);
}

static int x_unlock(sqlite3_file *file, int level)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xUnlock(r, level);
}

static int x_check_reserved_lock(sqlite3_file *file, int *out)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xCheckReservedLock(r, out);
}

static int x_sector_size(sqlite3_file *file)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xSectorSize(r);
}

static int x_device_characteristics(sqlite3_file *file)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xDeviceCharacteristics(r);
}

static int x_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xShmMap(r, region, size, extend, out);
}

static int x_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xShmLock(r, offset, n, flags);
}

static void x_shm_barrier(sqlite3_file *file)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	r->pMethods->xShmBarrier(r);
}

static int x_shm_unmap(sqlite3_file *file, int delete_flag)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->xShmUnmap(r, delete_flag);
}

/* Memory-mapped reads, where SQLite's file has them (methods version 3);
 * without, SQLite reads as usual. */
static int x_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **out)
{
	wal_file *f = (wal_file *)file;
	int rc = flush(f);

	*out = NULL;
	if (rc != SQLITE_OK || f->real->pMethods->iVersion < 3)
		return rc;
	return f->real->pMethods->xFetch(f->real, off, n, out);
}

static int x_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = ((wal_file *)file)->real;
	return r->pMethods->iVersion < 3 ? SQLITE_OK : r->pMethods->xUnfetch(r, off, p);
}

static const sqlite3_io_methods gathering_methods = {
        .iVersion = 3,
        .xClose = x_close,
        .xRead = x_read,
        .xWrite = x_write,
        .xTruncate = x_truncate,
        .xSync = x_sync,
        .xFileSize = x_file_size,
        .xLock = x_lock,
        .xUnlock = x_unlock,
        .xCheckReservedLock = x_check_reserved_lock,
        .xFileControl = x_file_control,
        .xSectorSize = x_sector_size,
        .xDeviceCharacteristics = x_device_characteristics,
        .xShmMap = x_shm_map,
        .xShmLock = x_shm_lock,
        .xShmBarrier = x_shm_barrier,
        .xShmUnmap = x_shm_unmap,
        .xFetch = x_fetch,
        .xUnfetch = x_unfetch,
};

static int x_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
	sqlite3_vfs *under = vfs->pAppData;
	wal_file *f = (wal_file *)file;
	int rc;

	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
	rc = under->xOpen(under, name, f->real, flags, out_flags);
	/* SQLite closes a file only if its methods are set, and the real
	 * file needs closing only if its own open set them. */
	if (f->real->pMethods)
		f->base.pMethods = &gathering_methods;
	return rc;
}

static const char *registered[2];

static void register_over(int exclusive)
{
	sqlite3_vfs *under = sqlite3_vfs_find(exclusive ? "unix-excl" : NULL);
	sqlite3_vfs *v = &gathering_vfs[exclusive];

	/* Only over SQLite's own unix VFSes, whose files all have methods of
	 * version 3 (shared memory, memory maps), as gathering_methods says. */
	if (!under || strncmp(under->zName, "unix", 4) != 0)
		return;
	*v = *under;
	v->zName = exclusive ? "strand-gathered-wal-excl" : "strand-gathered-wal";
	v->szOsFile = (int)sizeof(wal_file) + under->szOsFile;
	v->pAppData = under;
	v->pNext = NULL;
	v->xOpen = x_open;
	if (sqlite3_vfs_register(v, 0) == SQLITE_OK)
		registered[exclusive] = v->zName;
}

static void register_once(void)
{
	register_over(0);
	register_over(1);
}

const char *store_wal_writes_vfs(int exclusive)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_once);
	return registered[exclusive != 0];
}
