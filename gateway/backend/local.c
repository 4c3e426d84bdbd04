/*
 * The local backend: strand-worker processes (and Processes' programs)
 * started on this host as children of the gateway (spawn.h). Each leads its
 * own process group: a Ctrl-C in the gateway's terminal reaches only the
 * gateway, which then stops them in order, and a stop or the end of one
 * reaches everything it started.
 * The handle is the pid; a worker adopted after a restart of the gateway is
 * not its child, and is alive as long as its pid is and is no zombie (its
 * new parent, init or a subreaper, reaps it when it will: seconds, or
 * never). A Process writes its output to a log file the engine names.
 *
 * Each program runs in a sandbox (sandbox.h) unless the operator or the
 * host said no: its handle is then its bwrap's pid, whose process group
 * holds everything inside.
 *
 * Resources: memory_mb becomes RLIMIT_AS; gpu gets that many distinct
 * devices of this host (configured, or the /dev/nvidiaN found) through
 * CUDA_VISIBLE_DEVICES, given back when the process is released; a request
 * that cannot be met now is refused with the count free. cpu is recorded,
 * not pinned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/backend.h"
#include "gateway/backend/sandbox.h"
#include "gateway/backend/spawn.h"

#define MAX_GPUS 64
#define ADOPTED_MAX 4096 /* sandboxes found running at a start */

typedef struct local {
	backend base; /* first: the engine holds a backend * */
	sandbox *sandbox; /* NULL: programs run as the gateway's children, unsandboxed */
	int gpus;
	pid_t holder[MAX_GPUS]; /* the pid using each device, 0: free */
	/* The sandboxed programs and their groups (sandbox_group_take). */
	struct {
		pid_t pid;
		char group[SANDBOX_GROUP_MAX];
	} * programs;
	size_t nprograms, capprograms;
} local;

/* Picks n free devices for a process yet to start; writes their ids
 * ("0,2") into list. Returns CM_OK or CM_EUNAVAIL with the reason. */
static int gpu_pick(local *l, int n, int *picked, char *list, size_t list_len, char *detail, size_t detail_len)
{
	int free_now = 0, k = 0;
	size_t o = 0;

	for (int i = 0; i < l->gpus; i++)
		free_now += l->holder[i] == 0;
	if (n > free_now) {
		snprintf(detail, detail_len, "needs %d GPU%s; this host has %d, %d free now", n, n == 1 ? "" : "s",
		         l->gpus, free_now);
		return CM_EUNAVAIL;
	}
	list[0] = '\0';
	for (int i = 0; i < l->gpus && k < n; i++) {
		if (l->holder[i] == 0) {
			picked[k++] = i;
			o += (size_t)snprintf(list + o, list_len - o, "%s%d", o ? "," : "", i);
		}
	}
	return CM_OK;
}

/* Whether execve would run path: 0, or its errno (EACCES for what is not
 * a file, ENOEXEC for a file that is neither a program nor a script). */
static int runnable(const char *path)
{
	char head[4] = "";
	struct stat st;
	int fd;

	if (stat(path, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0; /* executable, not readable: execve may still run it */
	ssize_t n = read(fd, head, sizeof(head));
	close(fd);
	return n >= 2 && (memcmp(head, "#!", 2) == 0 || (n == 4 && memcmp(head,
	                                                                  "\x7f"
	                                                                  "ELF",
	                                                                  4) == 0))
	               ? 0
	               : ENOEXEC;
}

static int local_run(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                     size_t detail_len)
{
	local *l = (local *)b;
	int gpu = spec->spec ? spec->spec->gpu : 0;
	int picked[MAX_GPUS];
	char devices[4 * MAX_GPUS] = "", cuda[4 * MAX_GPUS + 32];
	char **env = calloc(spec->nenv + 3, sizeof(char *)); /* and CUDA_VISIBLE_DEVICES, STRAND_CACHE_DIR */
	spawn_options o = {.argv = spec->argv,
	                   .argc = spec->argc,
	                   .env = env,
	                   .nenv = spec->nenv,
	                   .output_fd = -1,
	                   .pid_in_env = 1};
	pid_t pid;
	int err;

	if (!env) {
		snprintf(detail, detail_len, "out of memory");
		return CM_ENOMEM;
	}
	/* A worker's secret goes through a pipe, out of every environment
	 * /proc shows (its sandbox's and its own). */
	o.nenv = 0;
	for (size_t i = 0; i < spec->nenv; i++) {
		if (strncmp(spec->env[i], "STRAND_SECRET=", 14) == 0)
			o.secret = spec->env[i] + 14;
		else
			env[o.nenv++] = spec->env[i];
	}
	if (gpu > 0 && gpu_pick(l, gpu, picked, devices, sizeof(devices), detail, detail_len) != CM_OK) {
		free(env);
		return CM_EUNAVAIL;
	}
	if (gpu > 0) {
		snprintf(cuda, sizeof(cuda), "CUDA_VISIBLE_DEVICES=%s", devices);
		env[o.nenv++] = cuda;
	}
	if (spec->spec && spec->spec->memory_mb > 0)
		o.memory_bytes = (unsigned long long)spec->spec->memory_mb << 20;
	if (spec->log_path &&
	    (o.output_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(detail, detail_len, "cannot open log %s: %s", spec->log_path, strerror(errno));
		free(env);
		return CM_EIO;
	}
	char **wrapped = NULL, *held = NULL, program[4096];
	/* A program that could not run fails now, as execve would fail it,
	 * not inside its sandbox. */
	if (l->sandbox && (err = spawn_resolve(spec->argv[0], program, sizeof(program))) == 0)
		err = runnable(program);
	if (l->sandbox && err != 0) {
		snprintf(detail, detail_len, "cannot run %s: %s", spec->argv[0], strerror(err));
		if (o.output_fd >= 0)
			close(o.output_fd);
		free(env);
		return CM_EUNAVAIL;
	}
	if (l->sandbox && l->nprograms == l->capprograms) {
		size_t cap = l->capprograms ? 2 * l->capprograms : 16;
		void *more = realloc(l->programs, cap * sizeof(*l->programs));
		if (more) {
			l->programs = more;
			l->capprograms = cap;
		}
	}
	/* Its group's uid, and the cache its group's programs share: the code
	 * package one worker unpacked, the others use. */
	char cache[1200] = "";
	o.uid = l->sandbox ? sandbox_group_take(l->sandbox, spec->group, cache, sizeof(cache)) : 0;
	if (cache[0])
		env[o.nenv++] = (char *)"STRAND_CACHE_DIR=" SANDBOX_CACHE_DIR;
	if (l->sandbox &&
	    (l->nprograms == l->capprograms ||
	     !(wrapped = sandbox_wrap(l->sandbox, spec->argv, spec->argc, spec->spec, gpu, cache, &o.argc, &held)))) {
		snprintf(detail, detail_len, "out of memory");
		err = CM_ENOMEM;
	} else {
		if (wrapped)
			o.argv = wrapped;
		err = spawn_process(&o, &pid, detail, detail_len);
	}
	if (l->sandbox && err != CM_OK)
		sandbox_group_give(l->sandbox, spec->group);
	else if (l->sandbox) {
		l->programs[l->nprograms].pid = pid;
		snprintf(l->programs[l->nprograms++].group, SANDBOX_GROUP_MAX, "%s", spec->group ? spec->group : "");
	}
	free(wrapped);
	free(held);
	if (o.output_fd >= 0)
		close(o.output_fd);
	free(env);
	if (err != CM_OK)
		return err;
	for (int i = 0; i < gpu; i++)
		l->holder[picked[i]] = pid;
	snprintf(handle, BACKEND_HANDLE_MAX, "%d", (int)pid);
	return CM_OK;
}

static int local_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	(void)b;
	(void)handle;
	return cm_read_tail(log_path, max, out);
}

static int local_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	pid_t pid = (pid_t)atoi(handle);
	int status;
	pid_t r;

	(void)b;
	if (detail_len)
		detail[0] = '\0';
	if (pid <= 0) {
		*exit_code = -1;
		return 1;
	}
	r = waitpid(pid, &status, WNOHANG);
	if (r == 0)
		return 0;
	if (r < 0) {
		if (errno == ECHILD && cm_process_running(pid))
			return 0; /* adopted, not our child: alive */
		*exit_code = -1;
		return 1;
	}
	*exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 1;
}

/* The whole group: what the program started stops with it. */
static void local_stop(backend *b, const char *handle, int hard)
{
	(void)b;
	spawn_signal_group((pid_t)atoi(handle), hard ? SIGKILL : SIGTERM);
}

static void local_release(backend *b, const char *handle)
{
	local *l = (local *)b;
	pid_t pid = (pid_t)atoi(handle);

	/* What it started and left running dies with it; its pid cannot have
	 * been reused while that group lives. Then its GPUs are free again. */
	spawn_signal_group(pid, SIGKILL);
	for (int i = 0; i < l->gpus; i++)
		if (l->holder[i] == pid)
			l->holder[i] = 0;
	for (size_t i = 0; i < l->nprograms; i++)
		if (l->programs[i].pid == pid) {
			sandbox_group_give(l->sandbox, l->programs[i].group);
			l->programs[i] = l->programs[--l->nprograms];
			break;
		}
}

static void local_free(backend *b)
{
	local *l = (local *)b;

	/* The gateway stops: what ended gives its group's place back (its
	 * cache goes with the group's last); what still runs keeps it for the
	 * next start to adopt. */
	for (size_t i = 0; i < l->nprograms; i++)
		if (!cm_process_running(l->programs[i].pid))
			sandbox_group_give(l->sandbox, l->programs[i].group);
	sandbox_free(l->sandbox);
	free(l->programs);
	free(l);
}

static const backend_ops local_ops = {
        .name = "local",
        .native = 1,
        .run = local_run,
        .logs = local_logs,
        .poll = local_poll,
        .stop = local_stop,
        .release = local_release,
        .free = local_free,
};

backend *backend_local_new(int gpus, sandbox *sb)
{
	local *l = calloc(1, sizeof(*l));
	backend *b = &l->base;

	if (!l) {
		sandbox_free(sb);
		return NULL;
	}
	l->sandbox = sb;
	/* What a restart adopts keeps its group's uid and cache. */
	if (sb && (l->programs = calloc(ADOPTED_MAX, sizeof(*l->programs)))) {
		pid_t pids[ADOPTED_MAX];
		char(*groups)[SANDBOX_GROUP_MAX] = malloc(ADOPTED_MAX * SANDBOX_GROUP_MAX);
		size_t n = groups ? sandbox_find_running(sb, pids, groups, ADOPTED_MAX) : 0;
		for (size_t i = 0; i < n; i++) {
			l->programs[i].pid = pids[i];
			snprintf(l->programs[i].group, SANDBOX_GROUP_MAX, "%s", groups[i]);
		}
		l->nprograms = n;
		l->capprograms = ADOPTED_MAX;
		free(groups);
	}
	l->gpus = gpus < 0 ? 0 : gpus > MAX_GPUS ? MAX_GPUS : gpus;
	b->ops = &local_ops;
	return b;
}
