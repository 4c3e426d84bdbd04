/*
 * The local backend: strand-worker processes forked on this host, children
 * of the gateway. Each runs in its own process group so that a Ctrl-C in the
 * gateway's terminal reaches the gateway, which then stops them in order.
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

static int local_spawn(const backend_worker_spec *spec, int64_t *handle, char *detail, size_t detail_len)
{
	pid_t pid;

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
		if (spec->resources && spec->resources->memory_mb > 0) {
			struct rlimit rl;
			rl.rlim_cur = rl.rlim_max = (rlim_t)spec->resources->memory_mb << 20;
			setrlimit(RLIMIT_AS, &rl);
		}
		execv(spec->worker_bin, argv);
		_exit(127);
	}
	*handle = pid;
	return CM_OK;
}

static int local_poll(int64_t handle, int *exit_code)
{
	int status;
	pid_t r = waitpid((pid_t)handle, &status, WNOHANG);

	if (r == 0)
		return 0;
	if (r < 0) {
		/* Not our child: a worker adopted after a restart of the gateway.
		 * It is alive as long as the pid is. */
		if (errno == ECHILD && kill((pid_t)handle, 0) == 0)
			return 0;
		*exit_code = -1;
		return 1;
	}
	*exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 1;
}

static void local_stop(int64_t handle, int hard)
{
	kill((pid_t)handle, hard ? SIGKILL : SIGTERM);
}

const backend_ops backend_local = {
        .name = "local",
        .spawn = local_spawn,
        .poll = local_poll,
        .stop = local_stop,
};

const backend_ops *backend_find(const char *name)
{
	if (strcmp(name, "local") == 0)
		return &backend_local;
	return NULL;
}
