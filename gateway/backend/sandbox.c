/* The local backend's sandbox over bubblewrap; see sandbox.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/sandbox.h"
#include "gateway/backend/spawn.h"

#define HIDDEN_MAX 16
#define GPU_DEVICES_MAX 80
#define UIDS_HELD_MAX 4096 /* groups running at once with a uid of their own */

typedef struct uid_held {
	char group[24];
	uid_t uid;
	int programs; /* 0: a free slot */
} uid_held;

struct sandbox {
	char bwrap[256];
	char hidden[HIDDEN_MAX][1100];
	size_t nhidden;
	char visible[HIDDEN_MAX][1100];
	size_t nvisible;
	int unprivileged; /* bwrap runs as another user than root: it needs a user namespace */
	uid_t uid_first, uid_count; /* 0 uids: every program as the gateway's user */
	uid_held held[UIDS_HELD_MAX];
};

/* What every sandbox has, before the paths of each program's own. */
static const char *const base_args[] = {
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--tmpfs",
        "/dev/shm",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
};
#define BASE_ARGS (sizeof(base_args) / sizeof(base_args[0]))

/* Whether bwrap runs a program in such a sandbox here (a container without
 * the right to make namespaces cannot). */
static int works(const char *bwrap, char *why, size_t why_len)
{
	char *argv[BASE_ARGS + 3];
	size_t n = 0;
	pid_t pid;
	int status = 0, null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char detail[256];

	argv[n++] = (char *)bwrap;
	for (size_t i = 0; i < BASE_ARGS; i++)
		argv[n++] = (char *)base_args[i];
	argv[n++] = "--";
	argv[n++] = "true";
	spawn_options o = {.argv = argv, .argc = n, .output_fd = null_fd};
	int err = spawn_process(&o, &pid, detail, sizeof(detail));
	if (null_fd >= 0)
		close(null_fd);
	if (err != CM_OK) {
		snprintf(why, why_len, "%s", detail);
		return 0;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, why_len, "%.200s cannot make namespaces here (a container without the right to?)", bwrap);
		return 0;
	}
	return 1;
}

/* Whether uid can reach each of needs (read and search, or run), tried in
 * a child that becomes it. */
static int reachable_as(uid_t uid, const char *const *needs, size_t nneeds)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid(uid) != 0)
			_exit(2);
		for (size_t i = 0; i < nneeds; i++)
			if (needs[i] && needs[i][0] && access(needs[i], R_OK) != 0 && access(needs[i], X_OK) != 0)
				_exit(1);
		_exit(0);
	}
	if (pid < 0)
		return 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The uid range, when the gateway is root and a uid of it can run the
 * worker; else none, saying why. */
static void choose_uids(sandbox *s, const char *uids, const char *const *needs, size_t nneeds)
{
	unsigned long first, last;
	char tail;

	if (geteuid() != 0 || !uids || !uids[0])
		return;
	if (sscanf(uids, "%lu-%lu%c", &first, &last, &tail) != 2 || first == 0 || last < first ||
	    last >= 4294967294ul) {
		cm_warn("--sandbox-uids '%s' is not FIRST-LAST: sandboxed programs run as root", uids);
		return;
	}
	if (!reachable_as((uid_t)first, needs, nneeds)) {
		cm_warn("uid %lu cannot read strand-worker, its plugins or its Python package (a folder only root may "
		        "enter?): sandboxed programs run as root; install strand (cmake --install) to give each pool a "
		        "uid of its own",
		        first);
		return;
	}
	s->uid_first = (uid_t)first;
	s->uid_count = (uid_t)(last - first + 1);
	s->unprivileged = 1;
}

/* Whether path lies in a folder every sandbox has its own of. */
static int under_private(const char *path)
{
	return strncmp(path, "/tmp/", 5) == 0 || strncmp(path, "/var/tmp/", 9) == 0;
}

int sandbox_new(const char *mode, const char *const *hidden, size_t nhidden, const char *const *visible,
                size_t nvisible, const char *uids, const char *const *needs, size_t nneeds, sandbox **out, char *detail,
                size_t detail_len)
{
	sandbox *s;
	char why[512] = "";

	*out = NULL;
	if (strcmp(mode, "off") == 0)
		return CM_OK;
	if (!(s = calloc(1, sizeof(*s))))
		return CM_ENOMEM;
	snprintf(s->bwrap, sizeof(s->bwrap), "/usr/bin/bwrap");
	if (access(s->bwrap, X_OK) != 0)
		snprintf(why, sizeof(why), "no %s (Debian's bubblewrap; deploy/install-deps.sh installs it)", s->bwrap);
	else
		works(s->bwrap, why, sizeof(why));
	if (why[0]) {
		free(s);
		if (strcmp(mode, "on") == 0) {
			snprintf(detail, detail_len, "--sandbox on: %s", why);
			return CM_EUNAVAIL;
		}
		cm_warn("local workers run unsandboxed: %s (--sandbox off says so on purpose)", why);
		return CM_OK;
	}
	for (size_t i = 0; i < nhidden && s->nhidden < HIDDEN_MAX; i++)
		if (hidden[i] && hidden[i][0])
			snprintf(s->hidden[s->nhidden++], sizeof(s->hidden[0]), "%s", hidden[i]);
	for (size_t i = 0; i < nvisible && s->nvisible < HIDDEN_MAX; i++)
		if (visible[i] && under_private(visible[i]))
			snprintf(s->visible[s->nvisible++], sizeof(s->visible[0]), "%s", visible[i]);
	s->unprivileged = geteuid() != 0;
	choose_uids(s, uids, needs, nneeds);
	if (s->uid_count)
		cm_info("local backend: each pool and process runs as a uid of its own, from %u to %u",
		        (unsigned)s->uid_first, (unsigned)(s->uid_first + s->uid_count - 1));
	*out = s;
	return CM_OK;
}

uid_t sandbox_uid_take(sandbox *s, const char *group)
{
	unsigned h = 2166136261u; /* FNV-1a of the group: its first choice */
	uid_held *free_slot = NULL;

	if (!s || !s->uid_count || !group)
		return 0;
	for (const char *p = group; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (size_t i = 0; i < UIDS_HELD_MAX; i++) {
		uid_held *u = &s->held[i];
		if (u->programs && strcmp(u->group, group) == 0) {
			u->programs++;
			return u->uid;
		}
		if (!u->programs && !free_slot)
			free_slot = u;
	}
	if (!free_slot)
		return 0; /* more groups at once than slots: run as the gateway's own */
	/* The first uid from its choice on that no running group holds. */
	for (uid_t k = 0; k < s->uid_count && k < UIDS_HELD_MAX + 1; k++) {
		uid_t uid = s->uid_first + (uid_t)((h + k) % s->uid_count);
		int taken = 0;
		for (size_t i = 0; i < UIDS_HELD_MAX && !taken; i++)
			taken = s->held[i].programs && s->held[i].uid == uid;
		if (!taken) {
			snprintf(free_slot->group, sizeof(free_slot->group), "%s", group);
			free_slot->uid = uid;
			free_slot->programs = 1;
			return uid;
		}
	}
	return 0;
}

void sandbox_uid_give(sandbox *s, uid_t uid)
{
	for (size_t i = 0; s && uid && i < UIDS_HELD_MAX; i++)
		if (s->held[i].programs && s->held[i].uid == uid) {
			s->held[i].programs--;
			return;
		}
}

void sandbox_free(sandbox *s)
{
	free(s);
}

/* The GPU devices of this host (/dev/nvidia*), into names (each 64 bytes). */
static size_t gpu_devices(char (*names)[64], size_t max)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	size_t n = 0;

	while (d && n < max && (e = readdir(d)))
		if (strncmp(e->d_name, "nvidia", 6) == 0 && strlen(e->d_name) < 58)
			snprintf(names[n++], 64, "/dev/%.57s", e->d_name);
	if (d)
		closedir(d);
	return n;
}

char **sandbox_wrap(const sandbox *s, char *const *argv, size_t argc, const pool_spec *spec, int gpus, size_t *argc_out,
                    char **held)
{
	size_t nvol = spec ? (size_t)spec->nvolumes : 0;
	size_t cap = 2 + BASE_ARGS + 6 * HIDDEN_MAX + 3 * nvol + 3 * GPU_DEVICES_MAX + 1 + argc + 1;
	char **out = calloc(cap, sizeof(char *));
	/* Strings made here: the volumes' halves and the devices' names. */
	char *store = malloc(nvol * 2 * 260 + GPU_DEVICES_MAX * 64);
	size_t n = 0, at = 0;
	struct stat st;

	if (!out || !store) {
		free(out);
		free(store);
		return NULL;
	}
	out[n++] = (char *)s->bwrap;
	for (size_t i = 0; i < BASE_ARGS; i++)
		out[n++] = (char *)base_args[i];
	/* Not root: only inside a user namespace of its own may it make the others. */
	if (s->unprivileged)
		out[n++] = "--unshare-user";
	/* strand's own files where /tmp was, read-only. */
	for (size_t i = 0; i < s->nvisible; i++) {
		out[n++] = "--ro-bind";
		out[n++] = (char *)s->visible[i];
		out[n++] = (char *)s->visible[i];
	}
	/* Out of sight: a folder becomes an empty one, a file an empty file. */
	for (size_t i = 0; i < s->nhidden; i++) {
		if (stat(s->hidden[i], &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			out[n++] = "--tmpfs";
		} else {
			out[n++] = "--ro-bind";
			out[n++] = "/dev/null";
		}
		out[n++] = (char *)s->hidden[i];
	}
	/* The pool's host paths (the operator allowed them, policy.c), and its
	 * scratch space. Named volumes are Docker's and Kubernetes'. */
	for (size_t i = 0; i < nvol; i++) {
		const char *v = spec->volumes[i], *colon = strchr(v, ':');
		if (!colon)
			continue;
		char *source = store + at, *target = source + 260;
		snprintf(source, 260, "%.*s", (int)(colon - v), v);
		snprintf(target, 260, "%s", colon + 1);
		char *ro = strstr(target, ":ro");
		int read_only = ro && ro[3] == '\0';
		if (ro && ro[3] == '\0')
			*ro = '\0';
		at += 520;
		if (strcmp(source, "emptyDir") == 0) {
			out[n++] = "--tmpfs";
		} else if (source[0] == '/') {
			out[n++] = read_only ? "--ro-bind" : "--bind";
			out[n++] = source;
		} else {
			continue;
		}
		out[n++] = target;
	}
	if (gpus > 0) {
		char(*names)[64] = (char(*)[64])(store + at);
		size_t ndev = gpu_devices(names, GPU_DEVICES_MAX);
		for (size_t i = 0; i < ndev; i++) {
			out[n++] = "--dev-bind";
			out[n++] = names[i];
			out[n++] = names[i];
		}
	}
	out[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		out[n++] = argv[i];
	*argc_out = n;
	*held = store;
	return out;
}
