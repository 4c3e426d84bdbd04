/*
 * The pool's code package (STRAND_CODE: the SHA-256 of a zip the client
 * uploaded to the gateway): fetched from the hub once per host and user,
 * unpacked into a cache folder named by that SHA-256, and made the working
 * directory of everything the worker runs, its runtime and its commands
 * included, and the first entries of their PYTHONPATH.
 */
#ifndef WORKER_CODE_H
#define WORKER_CODE_H

#include <stddef.h>

#include "worker/worker.h"

/* Where packages are cached: STRAND_CACHE_DIR, else ~/.cache/strand, else
 * /tmp/strand-cache-UID (a container's user may have no home). */
#define WORKER_CODE_MODULES ".strand-py-modules" /* in a package: the modules from outside its folder */

/* Fetches (unless cached), unpacks and enters cfg->code. An ipc:// hub's
 * relative path is made absolute first (cfg->hub may change). Returns
 * CM_OK, or an error with the reason in why. */
int worker_code_enter(worker_config *cfg, char *why, size_t why_len);

#endif
