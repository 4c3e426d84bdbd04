/* The local backend's sandbox over bubblewrap; see sandbox.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/backend/sandbox.h"
#include "gateway/backend/spawn.h"

#define HIDDEN_MAX 16
#define CACHES_SPACE_MIN ((uint64_t)1 << 30) /* free in /dev/shm for the caches to go there */
#define GPU_DEVICES_MAX 80
#define GROUPS_HELD_MAX 4096 /* groups running at once with a uid or a cache of their own */

typedef struct group_held {
	char group[24];
	uid_t uid; /* 0: the gateway's own */
	int programs; /* 0: a free slot */
} group_held;

struct sandbox {
	char bwrap[256];
	char hidden[HIDDEN_MAX][1100];
	size_t nhidden;
	char visible[HIDDEN_MAX][1100];
	size_t nvisible;
	int unprivileged; /* bwrap runs as another user than root: it needs a user namespace */
	uid_t uid_first, uid_count; /* 0 uids: every program as the gateway's user */
	char caches[1100]; /* where each group's cache folder is made; "": none */
	group_held held[GROUPS_HELD_MAX];
};

/* The host's whole file system, read-only: the root of every sandbox but
 * those with a volume at a path this host lacks (root_read). */
static const char *const whole_root[] = {"--ro-bind", "/", "/"};

/* What every sandbox has after its root, before the paths of each
 * program's own. */
static const char *const base_args[] = {
        "--dev",
        "/dev", /* its own devices, */
        "--tmpfs",
        "/dev/shm", /* shared memory, */
        "--proc",
        "/proc", /* processes, */
        "--tmpfs",
        "/tmp", /* and scratch space; */
        "--tmpfs",
        "/var/tmp",
        "--unshare-pid", /* it sees no process outside, */
        "--unshare-ipc", /* no System V object, */
        "--unshare-uts", /* may set its host name, */
        "--unshare-cgroup-try", /* and sees only its own cgroup */
};
#define BASE_ARGS (sizeof(base_args) / sizeof(base_args[0]))

/* The paths of the host's root that are the sandbox's own (base_args). */
static int root_own(const char *name)
{
	return strcmp(name, "dev") == 0 || strcmp(name, "proc") == 0 || strcmp(name, "tmp") == 0;
}

/* A volume at a path this host lacks ("emptyDir:/scratch",
 * "/srv/data:/data") needs a root bwrap can make its mount point in: the
 * host's root is then bound read-only one top-level entry at a time onto
 * the sandbox's own root (a tmpfs bwrap makes), and --remount-ro / makes
 * that root read-only too once every mount is in place (ROOT_END). It
 * costs each start about 2 ms more than whole_root (17.5 against 15.5 ms
 * a bwrap here), so only such sandboxes have it. Reads the entries into
 * names: for each, 'b' or 's', its path, and a symbolic link's target,
 * each NUL-terminated. Returns their count, or -1 when out of memory or
 * "/" cannot be read. */
static long root_read(cm_buf *names)
{
	DIR *d = opendir("/");
	struct dirent *e;
	long n = 0;
	char target[4096];

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || root_own(e->d_name))
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/%.280s", e->d_name);
		ssize_t len = e->d_type == DT_LNK || e->d_type == DT_UNKNOWN
		                      ? readlink(path, target, sizeof(target) - 1)
		                      : -1;
		if (len >= 0)
			target[len] = '\0';
		if (cm_buf_append(names, len >= 0 ? "s" : "b", 1) != CM_OK ||
		    cm_buf_append(names, path, strlen(path) + 1) != CM_OK ||
		    (len >= 0 && cm_buf_append(names, target, (size_t)len + 1) != CM_OK)) {
			closedir(d);
			return -1;
		}
		n++;
	}
	closedir(d);
	return n;
}

/* The arguments (3 an entry) that make root_read's n entries. */
static size_t root_put(char **out, const char *names, long n)
{
	size_t k = 0;

	for (long i = 0; i < n; i++) {
		const char *path = names + 1;
		if (names[0] == 's') {
			const char *target = path + strlen(path) + 1;
			out[k++] = "--symlink";
			out[k++] = (char *)target;
			out[k++] = (char *)path;
			names = target + strlen(target) + 1;
		} else {
			out[k++] = "--ro-bind-try"; /* gone since it was read: nothing to see */
			out[k++] = (char *)path;
			out[k++] = (char *)path;
			names = path + strlen(path) + 1;
		}
	}
	return k;
}
#define ROOT_END_ARGS 2 /* after the last mount */
#define ROOT_END "--remount-ro", "/"

/* Whether bwrap runs a program in such a sandbox here (a container without
 * the right to make namespaces cannot). */
static int works(const char *bwrap, char *why, size_t why_len)
{
	char *argv[3 + BASE_ARGS + 3];
	size_t n = 0;
	pid_t pid;
	int status = 0, null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char detail[256];

	argv[n++] = (char *)bwrap;
	for (size_t i = 0; i < 3; i++)
		argv[n++] = (char *)whole_root[i];
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
/* path as bwrap must be given it: absolute. A relative one (--db
 * strand.db, the default ./strand.db) is under the gateway's working
 * directory, its leading "./" dropped; bwrap took "strand.db" as a path in
 * the sandbox's read-only root and refused to start anything. */
static void absolute(const char *path, char *out, size_t len)
{
	char here[1024];

	while (path[0] == '.' && path[1] == '/')
		for (path += 2; path[0] == '/'; path++)
			;
	if (path[0] == '/' || !getcwd(here, sizeof(here)))
		snprintf(out, len, "%s", path);
	else
		snprintf(out, len, "%s/%s", here, path);
}

static int under_private(const char *path)
{
	return strncmp(path, "/tmp/", 5) == 0 || strncmp(path, "/var/tmp/", 9) == 0;
}

/* The caches' folder made, or found made by us (/dev/shm is everyone's:
 * one someone else made, or a link, is refused): the gateway's user's,
 * others passing through only, to their own group's. */
static int caches_folder(const char *path)
{
	struct stat st;

	if (mkdir(path, 0711) != 0 && errno != EEXIST)
		return -1;
	if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		errno = EPERM;
		return -1;
	}
	return chmod(path, 0711);
}

/* Where the groups' cache folders are made: in /dev/shm, memory as each
 * sandbox's own /tmp was (a package of 442 files unpacked on this host's
 * disk took 0.35 s, in memory 0.03 s), in a folder of this gateway's,
 * named by its user and key (its database's path). Every sandbox has a
 * /dev/shm of its own: none sees it but through its group's bind. None
 * where /dev/shm is no tmpfs or is small (a container's 64 MiB). */
static void choose_caches(sandbox *s, const char *key)
{
	char named[sizeof(s->caches) + 1100], hex[CM_SHA256_HEX + 1];
	struct statfs fs;
	cm_sha256 h;

	if (!key || !key[0])
		return;
	absolute(key, named, sizeof(named));
	if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC ||
	    (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize < CACHES_SPACE_MIN) {
		cm_info("local backend: /dev/shm is no tmpfs of 1 GiB free: each worker fetches its own code and "
		        "values");
		return;
	}
	cm_sha256_init(&h);
	cm_sha256_update(&h, named, strlen(named));
	cm_sha256_hex(&h, hex);
	snprintf(named, sizeof(named), "/dev/shm/strand-cache-%u-%.16s", (unsigned)geteuid(), hex);
	if (caches_folder(named) != 0) {
		cm_warn("cannot make %s (each worker fetches its own code and values): %s", named, strerror(errno));
		return;
	}
	memcpy(s->caches, named, strlen(named) + 1); /* "/dev/shm/strand-cache-UID-HASH": it fits */
}

int sandbox_new(const char *mode, const char *const *hidden, size_t nhidden, const char *const *visible,
                size_t nvisible, const char *uids, const char *caches_key, const char *const *needs, size_t nneeds,
                sandbox **out, char *detail, size_t detail_len)
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
			absolute(hidden[i], s->hidden[s->nhidden++], sizeof(s->hidden[0]));
	for (size_t i = 0; i < nvisible && s->nvisible < HIDDEN_MAX; i++) {
		if (!visible[i] || !visible[i][0])
			continue;
		absolute(visible[i], s->visible[s->nvisible], sizeof(s->visible[0]));
		if (under_private(s->visible[s->nvisible]))
			s->nvisible++;
	}
	s->unprivileged = geteuid() != 0;
	choose_uids(s, uids, needs, nneeds);
	choose_caches(s, caches_key);
	if (s->uid_count)
		cm_info("local backend: each pool and process runs as a uid of its own, from %u to %u",
		        (unsigned)s->uid_first, (unsigned)(s->uid_first + s->uid_count - 1));
	*out = s;
	return CM_OK;
}

/* Whether group may name a folder: a pool's or a Process's id. */
static int group_name_valid(const char *group)
{
	size_t n = group ? strlen(group) : 0;

	if (n == 0 || n >= SANDBOX_GROUP_MAX)
		return 0;
	return strspn(group, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* Its group's cache folder for a program of group, into cache ("" none):
 * made, the group's uid's own, where it is not there yet. */
static void group_cache(const sandbox *s, const group_held *g, char *cache, size_t cache_len)
{
	if (cache_len)
		cache[0] = '\0';
	if (!s->caches[0] || !group_name_valid(g->group) || !cache_len)
		return;
	snprintf(cache, cache_len, "%s/%s", s->caches, g->group);
	if (mkdir(cache, 0700) != 0 && errno != EEXIST) {
		cm_warn("cannot make %s (its workers each fetch their own): %s", cache, strerror(errno));
		cache[0] = '\0';
		return;
	}
	if (g->uid && chown(cache, g->uid, g->uid) != 0) {
		cm_warn("cannot give %s to uid %u: %s", cache, (unsigned)g->uid, strerror(errno));
		cache[0] = '\0';
	}
}

/* The held slot of group, or a free one (its group "") when none holds it;
 * NULL when every slot is held. */
static group_held *group_slot(sandbox *s, const char *group)
{
	group_held *free_slot = NULL;

	for (size_t i = 0; i < GROUPS_HELD_MAX; i++) {
		group_held *g = &s->held[i];
		if (g->programs && strcmp(g->group, group) == 0)
			return g;
		if (!g->programs && !free_slot)
			free_slot = g;
	}
	if (free_slot)
		free_slot->group[0] = '\0';
	return free_slot;
}

/* The first uid from group's own choice on that no running group holds;
 * 0 when the sandbox gives none. */
static uid_t free_uid(const sandbox *s, const char *group)
{
	unsigned h = 2166136261u; /* FNV-1a of the group: its first choice */

	for (const char *p = group; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (uid_t k = 0; k < s->uid_count && k < GROUPS_HELD_MAX + 1; k++) {
		uid_t uid = s->uid_first + (uid_t)((h + k) % s->uid_count);
		int taken = 0;
		for (size_t i = 0; i < GROUPS_HELD_MAX && !taken; i++)
			taken = s->held[i].programs && s->held[i].uid == uid;
		if (!taken)
			return uid;
	}
	return 0;
}

uid_t sandbox_group_take(sandbox *s, const char *group, char *cache, size_t cache_len)
{
	group_held *g;

	if (cache_len)
		cache[0] = '\0';
	if (!s || !group || !group[0] || strlen(group) >= SANDBOX_GROUP_MAX || !(g = group_slot(s, group)))
		return 0; /* more groups at once than slots: the gateway's uid, a cache of its own */
	if (!g->programs) {
		snprintf(g->group, sizeof(g->group), "%s", group);
		g->uid = free_uid(s, group);
	}
	g->programs++;
	group_cache(s, g, cache, cache_len);
	return g->uid;
}

void sandbox_group_give(sandbox *s, const char *group)
{
	char cache[1200];

	for (size_t i = 0; s && group && i < GROUPS_HELD_MAX; i++) {
		group_held *g = &s->held[i];
		if (!g->programs || strcmp(g->group, group) != 0)
			continue;
		/* Its last program gone: what they cached goes with them. */
		if (--g->programs == 0 && s->caches[0] && group_name_valid(group)) {
			snprintf(cache, sizeof(cache), "%s/%s", s->caches, group);
			cm_remove_tree(cache);
		}
		return;
	}
}

/* The group of pid, a sandbox of this gateway found running, by the cache
 * folder its bwrap binds ("--bind CACHES/GROUP"), and the uid it runs as:
 * 1, or 0 when it is none of ours. */
static int running_group(const sandbox *s, const char *pid, char group[SANDBOX_GROUP_MAX], uid_t *uid)
{
	char path[64], args[16384], line[256];
	size_t n, prefix = strlen(s->caches);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	if (!(f = fopen(path, "rb")))
		return 0;
	n = fread(args, 1, sizeof(args) - 1, f);
	fclose(f);
	args[n] = '\0';
	for (size_t at = 0; at < n; at += strlen(args + at) + 1) {
		const char *arg = args + at, *next = at + strlen(arg) + 1 < n ? arg + strlen(arg) + 1 : "";
		if (strcmp(arg, "--bind") != 0 || strncmp(next, s->caches, prefix) != 0 || next[prefix] != '/' ||
		    !group_name_valid(next + prefix + 1))
			continue;
		snprintf(group, SANDBOX_GROUP_MAX, "%s", next + prefix + 1);
		*uid = 0;
		snprintf(path, sizeof(path), "/proc/%s/status", pid);
		if ((f = fopen(path, "r"))) {
			unsigned long real;
			while (fgets(line, sizeof(line), f))
				if (sscanf(line, "Uid: %lu", &real) == 1)
					*uid = (uid_t)real;
			fclose(f);
		}
		return 1;
	}
	return 0;
}

size_t sandbox_find_running(sandbox *s, pid_t *pids, char (*groups)[SANDBOX_GROUP_MAX], size_t max)
{
	DIR *d;
	struct dirent *e;
	size_t found = 0;
	char group[SANDBOX_GROUP_MAX], cache[sizeof(s->caches) + sizeof(e->d_name) + 1];
	uid_t uid;

	if (!s || !s->caches[0] || !(d = opendir("/proc")))
		return 0;
	while (found < max && (e = readdir(d))) {
		/* The bwrap the backend started leads its group (spawn.h); the
		 * one it forked inside has the same command line. */
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0 || getpgid(pid) != pid || !running_group(s, e->d_name, group, &uid))
			continue;
		group_held *g = group_slot(s, group);
		if (!g)
			break;
		if (!g->programs) {
			snprintf(g->group, sizeof(g->group), "%s", group);
			/* The uid it runs as stays its group's: no new group gets it. */
			g->uid = uid >= s->uid_first && uid - s->uid_first < s->uid_count ? uid : 0;
		}
		g->programs++;
		pids[found] = pid;
		snprintf(groups[found++], SANDBOX_GROUP_MAX, "%s", group);
	}
	closedir(d);
	/* The folders of groups that nothing runs for any more: a gateway that
	 * stopped, or was killed, left them. */
	if ((d = opendir(s->caches))) {
		while ((e = readdir(d))) {
			int held = 0;
			if (!group_name_valid(e->d_name))
				continue;
			for (size_t i = 0; i < GROUPS_HELD_MAX && !held; i++)
				held = s->held[i].programs && strcmp(s->held[i].group, e->d_name) == 0;
			if (!held) {
				snprintf(cache, sizeof(cache), "%s/%s", s->caches, e->d_name);
				cm_remove_tree(cache);
			}
		}
		closedir(d);
	}
	return found;
}

void sandbox_free(sandbox *s)
{
	/* Empty once every group's last program is gone; else what still runs
	 * keeps it for the next start to adopt. */
	if (s && s->caches[0])
		rmdir(s->caches);
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

/* Whether path is in one of the sandbox's own folders (base_args). */
static int in_own_folder(const char *path)
{
	static const char *const own[] = {"/tmp", "/var/tmp", "/dev"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		size_t m = strlen(own[i]);
		if (strncmp(path, own[i], m) == 0 && (path[m] == '\0' || path[m] == '/'))
			return 1;
	}
	return 0;
}

/* The first folder on path's way (path resolved) that lets no one but
 * its owner and group in, into blocked; 0 when there is none. */
static int closed_on_the_way(const char *path, char *blocked, size_t blocked_len)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(path, real))
		return 0; /* stat found it: the start will say */
	for (char *slash = strchr(real + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		int closed = stat(real, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH);
		if (closed && slash) {
			snprintf(blocked, blocked_len, "%.250s", real);
			return 1;
		}
		if (!slash)
			return 0;
		*slash = '/';
	}
}

/* Whether path, which this host lacks, is inside one of its folders (the
 * nearest into folder), not right in the root (the sandbox's own when it
 * needs one, where bwrap makes folders). */
static int host_folder_above(const char *path, char *folder, size_t folder_len)
{
	struct stat st;
	char *slash;

	if (lstat(path, &st) == 0)
		return 0;
	snprintf(folder, folder_len, "%s", path);
	while ((slash = strrchr(folder, '/')) && slash != folder) {
		*slash = '\0';
		if (lstat(folder, &st) == 0)
			return 1;
	}
	return 0;
}

int sandbox_volumes_check(const pool_spec *spec, const char *uids, char *detail, size_t detail_len)
{
	struct stat st;
	/* As root with a uid range, each pool's bwrap runs as a uid of its
	 * own, which owns no folder of the host. */
	int as_other = geteuid() == 0 && uids && uids[0];

	for (int i = 0; i < spec->nvolumes; i++) {
		char source[SPEC_VOLUME_MAX], target[SPEC_VOLUME_MAX], folder[SPEC_VOLUME_MAX];
		if (spec_volume_split(spec->volumes[i], source, target) < 0)
			continue;
		if (source[0] == '/' && stat(source, &st) != 0) {
			snprintf(detail, detail_len, "field 'volumes[%d]': host path '%.200s' is not on this host (%s)",
			         i, source, strerror(errno));
			return CM_EUNSUPPORTED;
		}
		if (source[0] == '/' && as_other && closed_on_the_way(source, folder, sizeof(folder))) {
			snprintf(detail, detail_len,
			         "field 'volumes[%d]': host path '%.100s' is out of the pool's reach: it runs as a uid "
			         "of its own, and '%.100s' lets only its owner and group in",
			         i, source, folder);
			return CM_EUNSUPPORTED;
		}
		if (!in_own_folder(target) && host_folder_above(target, folder, sizeof(folder))) {
			snprintf(detail, detail_len,
			         "field 'volumes[%d]': the sandbox cannot make '%.100s': this host's '%.100s' "
			         "is read-only there (choose a path this host has, one under /tmp, or one "
			         "whose first folder this host lacks)",
			         i, target, folder);
			return CM_EUNSUPPORTED;
		}
	}
	return CM_OK;
}

/* Whether a volume of spec is at a path this host lacks (root_read). */
static int needs_own_root(const pool_spec *spec)
{
	struct stat st;

	for (int i = 0; spec && i < spec->nvolumes; i++) {
		char source[SPEC_VOLUME_MAX], target[SPEC_VOLUME_MAX];
		if (spec_volume_split(spec->volumes[i], source, target) >= 0 &&
		    (source[0] == '/' || strcmp(source, "emptyDir") == 0) && !in_own_folder(target) &&
		    lstat(target, &st) != 0)
			return 1;
	}
	return 0;
}

char **sandbox_wrap(const sandbox *s, char *const *argv, size_t argc, const pool_spec *spec, int gpus,
                    const char *cache, size_t *argc_out, char **held)
{
	size_t nvol = spec ? (size_t)spec->nvolumes : 0;
	int own_root = needs_own_root(spec);
	cm_buf root;
	cm_buf_init(&root);
	long nroot = own_root ? root_read(&root) : 0;
	size_t cap = 2 + 3 + 3 * (size_t)(nroot > 0 ? nroot : 0) + BASE_ARGS + 6 * HIDDEN_MAX + 3 + 3 * nvol +
	             3 * GPU_DEVICES_MAX + ROOT_END_ARGS + 1 + argc + 1;
	char **out = nroot < 0 ? NULL : calloc(cap, sizeof(char *));
	/* Strings made here: the volumes' halves, the devices' names, and
	 * the root's entries last. */
	size_t root_at = nvol * 2 * SPEC_VOLUME_MAX + GPU_DEVICES_MAX * 64;
	char *store = out ? malloc(root_at + root.len) : NULL;
	size_t n = 0, at = 0;
	struct stat st;

	if (!out || !store) {
		free(out);
		free(store);
		cm_buf_fini(&root);
		return NULL;
	}
	if (root.len)
		memcpy(store + root_at, root.data, root.len);
	cm_buf_fini(&root);
	out[n++] = (char *)s->bwrap;
	if (own_root) {
		n += root_put(out + n, store + root_at, nroot);
	} else {
		for (size_t i = 0; i < 3; i++)
			out[n++] = (char *)whole_root[i];
	}
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
	/* Its group's cache, shared by the group's programs only: bound from
	 * the host's /dev/shm, which no sandbox sees (each has its own). */
	if (cache && cache[0]) {
		out[n++] = "--bind";
		out[n++] = (char *)cache;
		out[n++] = SANDBOX_CACHE_DIR;
	}
	/* The pool's host paths (the operator allowed them, policy.c), and its
	 * scratch space. Named volumes are Docker's and Kubernetes'. */
	for (size_t i = 0; i < nvol; i++) {
		char *source = store + at, *target = source + SPEC_VOLUME_MAX;
		int read_only = spec_volume_split(spec->volumes[i], source, target);
		if (read_only < 0)
			continue;
		at += 2 * SPEC_VOLUME_MAX;
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
	static const char *const end[] = {ROOT_END};
	for (size_t i = 0; own_root && i < ROOT_END_ARGS; i++)
		out[n++] = (char *)end[i];
	out[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		out[n++] = argv[i];
	*argc_out = n;
	*held = store;
	return out;
}
