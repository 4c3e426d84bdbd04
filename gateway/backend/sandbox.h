/*
 * The local backend's sandbox: each worker and Process runs inside
 * Debian's bubblewrap (bwrap) with pid, IPC and UTS namespaces of its own,
 * the whole file system read-only, a private /tmp, /var/tmp and /dev, and
 * the gateway's secrets (its database and log, token, code packages, TLS
 * key, Kubernetes credentials) out of sight. A task then cannot read the
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
 * so. */
int sandbox_new(const char *mode, const char *const *hidden, size_t nhidden, const char *const *visible,
                size_t nvisible, const char *uids, const char *const *needs, size_t nneeds, sandbox **out, char *detail,
                size_t detail_len);
void sandbox_free(sandbox *s);

/* The argv that runs argv (argc entries) in the sandbox, with the host
 * paths of spec's volumes bound in ("/host:/path[:ro]"; emptyDir:/path a
 * tmpfs) and, with gpus, the GPU devices. A new array whose strings are
 * argv's or the sandbox's own, and *held, which the caller frees after
 * the start (with the array). NULL when out of memory. */
char **sandbox_wrap(const sandbox *s, char *const *argv, size_t argc, const pool_spec *spec, int gpus, size_t *argc_out,
                    char **held);

/* The uid group's programs run as (0: as the gateway's own), taken for one
 * more program of it; sandbox_uid_give when that program is gone. Two
 * groups running at once never share one. */
uid_t sandbox_uid_take(sandbox *s, const char *group);
void sandbox_uid_give(sandbox *s, uid_t uid);

#endif
