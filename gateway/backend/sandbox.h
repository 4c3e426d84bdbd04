/*
 * The local backend's sandbox: each worker and Process runs inside
 * Debian's bubblewrap (bwrap) with pid, IPC and UTS namespaces of its own,
 * the whole file system read-only, a private /tmp, /var/tmp and /dev, and
 * the gateway's secrets (its database and log, token, code packages, TLS
 * key, Kubernetes credentials) out of sight. The programs of one group (a
 * pool's workers) share a cache folder (SANDBOX_CACHE_DIR: the code
 * package one of them fetched and unpacked, the values they fetched),
 * which no other group sees. A task then cannot read the
 * token, another pool's secrets or the gateway's memory, and cannot signal
 * or trace any process outside its own sandbox. The network stays: the
 * worker dials the hub.
 *
 * The sandbox's processes are in the process group of the bwrap the
 * backend started (its handle): a stop of that group reaches them all.
 */
#ifndef GATEWAY_BACKEND_SANDBOX_H
#define GATEWAY_BACKEND_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include "gateway/spec.h"

typedef struct sandbox sandbox;

#define SANDBOX_GROUP_MAX 24 /* a group's name (a pool's or a Process's id), its NUL included */
/* Where a program finds its group's cache folder (its STRAND_CACHE_DIR). */
#define SANDBOX_CACHE_DIR "/var/tmp/strand-cache"

/* mode: "on" (bwrap must work: else CM_EUNAVAIL with why), "auto" (used
 * where it works, else NULL with a warning logged) or "off" (NULL).
 * hidden: paths no sandboxed program may see (those that do not exist
 * when a program starts are skipped then). visible: what sandboxed programs
 * must see though under /tmp or /var/tmp, which are their own (strand's
 * own files in a build tree there, an ipc:// hub's folder). uids: "FIRST-LAST", the range a
 * gateway running as root gives each pool (and each Process) a uid of, so
 * that no two of them can touch each other's files or processes; used only
 * when a uid of it can run what needs to be run (needs: its paths must be
 * readable by others), else everything runs as root in its sandbox, saying
 * so. caches_key names this gateway's folder of the groups' caches (its
 * database's path: two gateways on a host keep theirs apart); NULL: none,
 * each program caches in its own /tmp. */
int sandbox_new(const char *mode, const char *const *hidden, size_t nhidden, const char *const *visible,
                size_t nvisible, const char *uids, const char *caches_key, const char *const *needs, size_t nneeds,
                sandbox **out, char *detail, size_t detail_len);
void sandbox_free(sandbox *s);

/* Whether a sandbox can bind each of spec's volumes on this host: its
 * host path exists (and, for a gateway run as root with uids, the
 * gateway's --sandbox-uids, no folder on its way shuts others out), and
 * bwrap can make its path (one that exists here, one in the sandbox's own
 * /tmp, /var/tmp or /dev, or one whose first folder this host lacks; the
 * rest of the host is read-only). CM_OK, or CM_EUNSUPPORTED with the
 * field and why. */
int sandbox_volumes_check(const pool_spec *spec, const char *uids, char *detail, size_t detail_len);

/* The argv that runs argv (argc entries) in the sandbox, with the host
 * paths of spec's volumes bound in ("/host:/path[:ro]"; emptyDir:/path a
 * tmpfs; at a path this host lacks, on a read-only root of the sandbox's
 * own that shows the host's top-level folders), with gpus the GPU devices and cache (its group's, from
 * sandbox_group_take; NULL or "": none) at SANDBOX_CACHE_DIR. A new array
 * whose strings are argv's, cache or the sandbox's own, and *held, which
 * the caller frees after the start (with the array). NULL when out of
 * memory. */
char **sandbox_wrap(const sandbox *s, char *const *argv, size_t argc, const pool_spec *spec, int gpus,
                    const char *cache, size_t *argc_out, char **held);

/* Takes a place for one more program of group, before it starts: the uid
 * it runs as (0: the gateway's own; two groups running at once never share
 * one) and, into cache, the host folder the group's programs share as
 * their cache (made with the group's first program, removed with its
 * last), or "" for none. sandbox_group_give once that program is gone. */
uid_t sandbox_group_take(sandbox *s, const char *group, char *cache, size_t cache_len);
void sandbox_group_give(sandbox *s, const char *group);
/* The sandboxes of this gateway's groups that run though it just started
 * (a restart adopts them): their pids and groups, at most max, each
 * holding its group's place (its uid too) as sandbox_group_take would;
 * then removes the cache folders of groups none of them is of. */
size_t sandbox_find_running(sandbox *s, pid_t *pids, char (*groups)[SANDBOX_GROUP_MAX], size_t max);

#endif
