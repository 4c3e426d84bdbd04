#define _GNU_SOURCE
#include "gateway/backend/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"

extern char **environ;

int spawn_resolve(const char *name, char *out, size_t out_len)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, out_len, "%s", name);
		return access(out, X_OK) == 0 ? 0 : errno;
	}
	if (!path || !path[0])
		path = "/usr/local/bin:/usr/bin:/bin";
	int found = ENOENT;
	for (const char *p = path; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		struct stat sb;
		snprintf(out, out_len, "%.*s/%s", (int)len, len ? p : ".", name);
		if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			found = EACCES;
		}
		p = colon ? colon + 1 : p + len;
	}
	return found;
}

/* The gateway's environment with env's names replaced or added, or env
 * alone. */
static char **environment(char *const *env, size_t nenv, int env_only)
{
	size_t n = 0, k = 0;
	char **out;

	while (!env_only && environ[n])
		n++;
	if (!(out = calloc(n + nenv + 1, sizeof(char *))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t name_len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int replaced = 0;
		for (size_t j = 0; j < nenv && !replaced; j++)
			replaced = strncmp(env[j], environ[i], name_len) == 0 && env[j][name_len] == '=';
		if (!replaced)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < nenv; j++)
		out[k++] = env[j];
	return out;
}

#define PID_ENV "STRAND_HOST_PID="

/* Writes the child's pid after PID_ENV in pid_env (room for 20 digits):
 * by hand, as snprintf is not async-signal-safe. */
static void put_pid(char *pid_env)
{
	char digits[24];
	int n = 0;
	unsigned long v = (unsigned long)getpid();

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 20);
	char *at = pid_env + sizeof(PID_ENV) - 1;
	while (n)
		*at++ = digits[--n];
	*at = '\0';
}

/* In the child, between fork and execve: async-signal-safe calls only. */
static void child(const spawn_options *o, const char *path, char **argv, char **envp, int null_fd, int err_fd,
                  int secret_fd, char *pid_env)
{
	sigset_t none;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	int e;

	if (pid_env)
		put_pid(pid_env);
	setpgid(0, 0);
	umask(022); /* the gateway's own 077 is for its files, not a program's */
	sigaction(SIGPIPE, &dfl, NULL); /* the gateway ignores it; a program must not inherit that */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (o->output_fd >= 0) {
		dup2(null_fd, 0);
		dup2(o->output_fd, 1);
		dup2(o->error_fd > 0 ? o->error_fd : o->output_fd, 2);
	}
	/* Nothing of the gateway's (its database, sockets, pipes) leaks in; the
	 * error pipe stays open until execve closes it. */
	close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
	if (secret_fd >= 0)
		fcntl(secret_fd, F_SETFD, 0); /* the one fd it inherits */
	if (o->memory_bytes) {
		struct rlimit rl = {.rlim_cur = o->memory_bytes, .rlim_max = o->memory_bytes};
		setrlimit(RLIMIT_AS, &rl);
	}
	/* A uid of its own: groups first, the uid last (it takes the right to
	 * change the others). A step that fails fails the start. */
	if (o->uid && (setgroups(0, NULL) != 0 || setgid((gid_t)o->uid) != 0 || setuid(o->uid) != 0)) {
		e = errno;
		while (write(err_fd, &e, sizeof(e)) < 0 && errno == EINTR)
			;
		_exit(127);
	}
	execve(path, argv, envp);
	e = errno;
	while (write(err_fd, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

int spawn_process(const spawn_options *o, pid_t *pid_out, char *detail, size_t detail_len)
{
	char path[4096], secret_env[32], pid_env[sizeof(PID_ENV) + 21] = PID_ENV;
	char **argv = NULL, **envp = NULL;
	int pipe_fd[2] = {-1, -1}, secret_fd[2] = {-1, -1}, null_fd = -1, err, child_errno = 0;
	ssize_t n;
	pid_t pid;

	if (o->argc == 0) {
		snprintf(detail, detail_len, "nothing to run");
		return CM_EINVAL;
	}
	if ((err = spawn_resolve(o->argv[0], path, sizeof(path))) != 0) {
		snprintf(detail, detail_len, "cannot run %s: %s", o->argv[0], strerror(err));
		return CM_EUNAVAIL;
	}
	/* The secret waits in a pipe it reads at start: 64 bytes fit its buffer. */
	if (o->secret) {
		size_t len = strlen(o->secret);
		if (pipe2(secret_fd, O_CLOEXEC) != 0 || write(secret_fd[1], o->secret, len) != (ssize_t)len) {
			snprintf(detail, detail_len, "cannot start %s: %s", o->argv[0], strerror(errno));
			for (int i = 0; i < 2; i++)
				if (secret_fd[i] >= 0)
					close(secret_fd[i]);
			return CM_EUNAVAIL;
		}
		close(secret_fd[1]);
		secret_fd[1] = -1;
		snprintf(secret_env, sizeof(secret_env), "STRAND_SECRET_FD=%d", secret_fd[0]);
	}
	size_t extra = (o->secret != NULL) + (o->pid_in_env != 0);
	char **env = extra ? calloc(o->nenv + extra, sizeof(char *)) : NULL;
	if (env) {
		memcpy(env, o->env, o->nenv * sizeof(char *));
		if (o->secret)
			env[o->nenv] = secret_env;
		if (o->pid_in_env)
			env[o->nenv + extra - 1] = pid_env; /* its digits written in the child */
	}
	if (!(argv = calloc(o->argc + 1, sizeof(char *))) || (extra && !env) ||
	    !(envp = environment(env ? env : o->env, o->nenv + (env ? extra : 0), o->env_only))) {
		free(argv);
		free(env);
		if (secret_fd[0] >= 0)
			close(secret_fd[0]);
		snprintf(detail, detail_len, "out of memory");
		return CM_ENOMEM;
	}
	free(env); /* environment() copied its pointers */
	memcpy(argv, o->argv, o->argc * sizeof(char *));
	if (pipe2(pipe_fd, O_CLOEXEC) != 0 ||
	    (o->output_fd >= 0 && (null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)) {
		snprintf(detail, detail_len, "cannot start %s: %s", o->argv[0], strerror(errno));
		err = CM_EUNAVAIL;
		goto out;
	}
	pid = fork();
	if (pid == 0)
		child(o, path, argv, envp, null_fd, pipe_fd[1], secret_fd[0], o->pid_in_env ? pid_env : NULL);
	if (pid < 0) {
		snprintf(detail, detail_len, "fork: %s", strerror(errno));
		err = CM_EUNAVAIL;
		goto out;
	}
	setpgid(pid, pid); /* also here: a stop right after this must reach the group */
	close(pipe_fd[1]);
	pipe_fd[1] = -1;
	while ((n = read(pipe_fd[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		snprintf(detail, detail_len, "cannot run %s: %s", o->argv[0], strerror(child_errno));
		err = CM_EUNAVAIL;
		goto out;
	}
	*pid_out = pid;
	err = CM_OK;
out:
	for (int i = 0; i < 2; i++)
		if (pipe_fd[i] >= 0)
			close(pipe_fd[i]);
	if (secret_fd[0] >= 0)
		close(secret_fd[0]);
	if (null_fd >= 0)
		close(null_fd);
	free(argv);
	free(envp);
	return err;
}

int spawn_signal_group(pid_t pid, int sig)
{
	if (pid <= 1) { /* never kill(-1) or kill(0): everything, or the gateway's own group */
		errno = EINVAL;
		return -1;
	}
	if (kill(-pid, sig) == 0)
		return 0;
	return kill(pid, sig);
}
