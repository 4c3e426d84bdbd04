#ifndef STRAND_STORE_WAL_WRITES_H
#define STRAND_STORE_WAL_WRITES_H

/* The name of an SQLite VFS over the default one (the default at the first
 * call, which registers it) that writes each commit's frames of the
 * write-ahead log at once, or NULL where it cannot be made (then the
 * default VFS serves). Other files pass straight through. */
const char *store_wal_writes_vfs(void);

#endif
