#ifndef STRAND_STORE_WAL_WRITES_H
#define STRAND_STORE_WAL_WRITES_H

/* The name of an SQLite VFS that writes each commit's frames of the
 * write-ahead log at once, over SQLite's "unix-excl" (exclusive: the
 * process holds the database alone, store.h) or over the default VFS
 * (SQLite's "unix"; the default at the first call, which registers both);
 * NULL where it cannot be made (then SQLite's own serves). Other files
 * pass straight through. */
const char *store_wal_writes_vfs(int exclusive);

#endif
