/*
 * Libraries the worker loads when it first needs them, not at its start:
 * the workers a backend starts by the thousand mostly never join (libcurl)
 * and find their pool's code package unpacked already (libarchive), and
 * each library linked in is dynamic loading on every start.
 */
#ifndef WORKER_LIBRARY_H
#define WORKER_LIBRARY_H

#include <stddef.h>

/* A library's functions are listed once, X(PREFIX, NAME) for each function
 * PREFIX##NAME: LIBRARY_MEMBER makes a member pointing to it, typed as the
 * library's header declares it; LIBRARY_NAME gives its symbol. */
#define LIBRARY_MEMBER(prefix, name) __typeof__(&prefix##name) name;
#define LIBRARY_NAME(prefix, name) #prefix #name,

/* Loads soname (Debian's package names it in why when it is missing) and
 * its n functions names[i] into *slots[i]. 0, or -1 with why. */
int library_load(const char *soname, const char *package, const char *const *names, void **const *slots, size_t n,
                 char *why, size_t why_len);

#endif
