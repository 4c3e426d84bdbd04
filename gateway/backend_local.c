/*
 * The local backend: strand-worker processes forked on this host, children
 * of the gateway. Each runs in its own process group so that a Ctrl-C in the
 * gateway's terminal reaches the gateway, which then stops them in order.
 * The handle is the pid; a worker adopted after a restart of the gateway is
 * not its child, and is alive as long as its pid is.
 *
 * Resources: memory_mb becomes RLIMIT_AS; cpu and gpu are recorded but this
 * backend does not pin cores or hand out GPUs yet.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend.h"

static int local_spawn(backend *b, const backend_worker_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                       size_t detail_len)
{
	pid_t pid;

	(void)b;
	if (access(spec->worker_bin, X_OK) != 0) {
		snprintf(detail, detail_len, "cannot run worker binary %s: %s", spec->worker_bin, strerror(errno));
		return CM_EUNAVAIL;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(detail, detail_len, "fork: %s", strerror(errno));
		return CM_EUNAVAIL;
	}
	if (pid == 0) {
		char *argv[] = {(char *)spec->worker_bin, NULL};
		sigset_t none;
		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv("STRAND_HUB", spec->hub, 1);
		setenv("STRAND_POOL_ID", spec->pool_id, 1);
		setenv("STRAND_WORKER_ID", spec->worker_id, 1);
		setenv("STRAND_SECRET", spec->secret, 1);
		if (spec->plugin_path && spec->plugin_path[0])
			setenv("STRAND_PLUGIN_PATH", spec->plugin_path, 1);
		if (spec->spec && spec->spec->memory_mb > 0) {
			struct rlimit rl;
			rl.rlim_cur = rl.rlim_max = (rlim_t)spec->spec->memory_mb << 20;
			setrlimit(RLIMIT_AS, &rl);
		}
		execv(spec->worker_bin, argv);
		_exit(127);
	}
	snprintf(handle, BACKEND_HANDLE_MAX, "%d", (int)pid);
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
	(void)b;
	(void)handle; /* a reaped process leaves nothing behind */
}

static void local_free(backend *b)
{
	free(b);
}

backend *backend_local_new(void)
{
	backend *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->name = "local";
	b->spawn = local_spawn;
	b->poll = local_poll;
	b->stop = local_stop;
	b->release = local_release;
	b->free = local_free;
	return b;
}
