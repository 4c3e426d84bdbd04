/*
 * The local backend: strand-worker processes forked on this host, children
 * of the gateway. Each runs in its own process group so that a Ctrl-C in the
 * gateway's terminal reaches the gateway, which then stops them in order.
 * The handle is the pid; a worker adopted after a restart of the gateway is
 * not its child, and is alive as long as its pid is. A Process writes its
 * output to a log file the engine names.
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
#include "gateway/backend.h"

#define MAX_GPUS 64

typedef struct local {
	backend base; /* first: the engine holds a backend * */
	int gpus;
	pid_t holder[MAX_GPUS]; /* the pid using each device, 0: free */
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

static int local_run(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                     size_t detail_len)
{
	local *l = (local *)b;
	int log_fd = -1;
	int gpu = spec->spec ? spec->spec->gpu : 0;
	int picked[MAX_GPUS];
	char devices[4 * MAX_GPUS] = "";
	pid_t pid;

	if (gpu > 0 && gpu_pick(l, gpu, picked, devices, sizeof(devices), detail, detail_len) != CM_OK)
		return CM_EUNAVAIL;
	if (spec->argc == 0) {
		snprintf(detail, detail_len, "nothing to run");
		return CM_EINVAL;
	}
	if (strchr(spec->argv[0], '/') && access(spec->argv[0], X_OK) != 0) {
		snprintf(detail, detail_len, "cannot run %s: %s", spec->argv[0], strerror(errno));
		return CM_EUNAVAIL;
	}
	if (spec->log_path && (log_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(detail, detail_len, "cannot open log %s: %s", spec->log_path, strerror(errno));
		return CM_EIO;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(detail, detail_len, "fork: %s", strerror(errno));
		if (log_fd >= 0)
			close(log_fd);
		return CM_EUNAVAIL;
	}
	if (pid == 0) {
		char **argv = calloc(spec->argc + 1, sizeof(char *));
		sigset_t none;
		setpgid(0, 0);
		umask(022); /* the gateway's own 077 is for its files, not a task's */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (log_fd >= 0) {
			int in = open("/dev/null", O_RDONLY);
			if (in >= 0)
				dup2(in, 0);
			dup2(log_fd, 1);
			dup2(log_fd, 2);
		}
		/* Nothing of the gateway's (its database, sockets, pipes) leaks in. */
		close_range(3, ~0u, 0);
		for (size_t i = 0; i < spec->nenv; i++)
			putenv(spec->env[i]);
		if (gpu > 0)
			setenv("CUDA_VISIBLE_DEVICES", devices, 1);
		if (spec->spec && spec->spec->memory_mb > 0) {
			struct rlimit rl;
			rl.rlim_cur = rl.rlim_max = (rlim_t)spec->spec->memory_mb << 20;
			setrlimit(RLIMIT_AS, &rl);
		}
		for (size_t i = 0; argv && i < spec->argc; i++)
			argv[i] = spec->argv[i];
		if (argv)
			execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", spec->argv[0], strerror(errno));
		_exit(127);
	}
	if (log_fd >= 0)
		close(log_fd);
	for (int i = 0; i < gpu; i++)
		l->holder[picked[i]] = pid;
	snprintf(handle, BACKEND_HANDLE_MAX, "%d", (int)pid);
	return CM_OK;
}

static int local_spawn(backend *b, const backend_worker_spec *w, char handle[BACKEND_HANDLE_MAX], char *detail,
                       size_t detail_len)
{
	char env[7][600];
	char *envp[8];
	char *argv[] = {(char *)w->worker_bin};
	char *ca = NULL;
	size_t n = 0;
	backend_run_spec run = {.argv = argv, .argc = 1, .env = envp, .spec = w->spec};
	int err;

	snprintf(env[n++], sizeof(env[0]), "STRAND_HUB=%s", w->hub);
	snprintf(env[n++], sizeof(env[0]), "STRAND_POOL_ID=%s", w->pool_id);
	snprintf(env[n++], sizeof(env[0]), "STRAND_WORKER_ID=%s", w->worker_id);
	snprintf(env[n++], sizeof(env[0]), "STRAND_SECRET=%s", w->secret);
	if (w->plugin_path && w->plugin_path[0])
		snprintf(env[n++], sizeof(env[0]), "STRAND_PLUGIN_PATH=%.500s", w->plugin_path);
	if (w->spec && w->spec->manager[0])
		snprintf(env[n++], sizeof(env[0]), "STRAND_MANAGER_TYPE=%s", w->spec->manager);
	if (w->hub_server_name)
		snprintf(env[n++], sizeof(env[0]), "STRAND_HUB_SERVER_NAME=%.255s", w->hub_server_name);
	for (size_t i = 0; i < n; i++)
		envp[i] = env[i];
	/* A certificate chain does not fit the fixed entries. */
	if (w->hub_ca_pem && asprintf(&ca, "STRAND_HUB_CA_PEM=%s", w->hub_ca_pem) > 0)
		envp[n++] = ca;
	run.nenv = n;
	err = local_run(b, &run, handle, detail, detail_len);
	free(ca);
	return err;
}

static int local_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	FILE *f;
	long size;
	char chunk[65536];
	size_t n;

	(void)b;
	(void)handle;
	if (!log_path || !(f = fopen(log_path, "rb")))
		return CM_ENOENT;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)max)
		fseek(f, size - (long)max, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (cm_buf_append(out, chunk, n) != CM_OK)
			break;
	fclose(f);
	return CM_OK;
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
		if (errno == ECHILD && kill(pid, 0) == 0)
			return 0; /* adopted, not our child: alive */
		*exit_code = -1;
		return 1;
	}
	*exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 1;
}

static void local_stop(backend *b, const char *handle, int hard)
{
	pid_t pid = (pid_t)atoi(handle);

	(void)b;
	if (pid > 0)
		kill(pid, hard ? SIGKILL : SIGTERM);
}

static void local_release(backend *b, const char *handle)
{
	local *l = (local *)b;
	pid_t pid = (pid_t)atoi(handle);

	/* A reaped process leaves nothing behind but its GPUs. */
	for (int i = 0; i < l->gpus; i++)
		if (l->holder[i] == pid)
			l->holder[i] = 0;
}

static void local_free(backend *b)
{
	free(b);
}

backend *backend_local_new(int gpus)
{
	local *l = calloc(1, sizeof(*l));
	backend *b = &l->base;

	if (!l)
		return NULL;
	if (gpus < 0) {
		char dev[32];
		gpus = 0;
		for (int i = 0; i < MAX_GPUS; i++) {
			snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
			if (access(dev, F_OK) == 0)
				gpus = i + 1;
		}
	}
	l->gpus = gpus > MAX_GPUS ? MAX_GPUS : gpus;
	b->name = "local";
	b->spawn = local_spawn;
	b->run = local_run;
	b->logs = local_logs;
	b->poll = local_poll;
	b->stop = local_stop;
	b->release = local_release;
	b->free = local_free;
	return b;
}
