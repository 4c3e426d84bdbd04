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
#include <sys/syscall.h>
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

/* What the child needs, prepared by the parent: the child reads it from
 * the parent's memory, which it shares until execve. */
typedef struct child_args {
	const spawn_options *o;
	const char *path;
	char **argv, **envp;
	int null_fd, err_fd, secret_fd;
	char *pid_env;
} child_args;

/* The child runs on the parent's memory and stack (vfork, which glibc
 * makes a clone with CLONE_VM and CLONE_VFORK): a fork would copy the
 * gateway's page tables and make every page of it copy-on-write, so that
 * each of its threads' next writes took a page fault and a TLB flush of
 * every CPU, for each worker started (perf of a gateway starting pools:
 * the engine thread spent a third of its time in those faults). So the
 * child makes system calls only, directly: libc's wrappers may touch
 * state it shares with the parent (errno excepted: the parent thread,
 * suspended until execve, sets its own again): setuid's, for one, takes
 * libc's lock on the list of the gateway's threads and signals each of
 * them to change its uid too. A sanitizer's bookkeeping is the parent's
 * too: none is compiled in. (ThreadSanitizer makes vfork a fork, and
 * starts a thread of its own in the child: an exit ends every thread.) */
#define RAW __attribute__((no_sanitize("address", "thread", "undefined")))

RAW static long sys(long nr, long a, long b, long c, long d)
{
	return syscall(nr, a, b, c, d);
}

RAW static int raw_errno(long rv)
{
	return rv < 0 ? errno : 0;
}

/* Writes the child's pid after PID_ENV in pid_env (room for 20 digits). */
RAW static void put_pid(char *pid_env)
{
	char digits[24];
	int n = 0;
	unsigned long v = (unsigned long)sys(SYS_getpid, 0, 0, 0, 0);

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 20);
	char *at = pid_env + sizeof(PID_ENV) - 1;
	while (n)
		*at++ = digits[--n];
	*at = '\0';
}

/* fd as the child's fd to, inherited across execve (dup3 refuses a move
 * onto itself, so that one only loses close-on-exec). */
RAW static void move_fd(int fd, int to)
{
	if (fd == to)
		sys(SYS_fcntl, to, F_SETFD, 0, 0);
	else
		sys(SYS_dup3, fd, to, 0, 0);
}

/* The kernel's struct sigaction: SIG_DFL, no flags, an empty mask. */
struct kernel_sigaction {
	unsigned long handler, flags, restorer, mask;
};

/* In the child, until execve. */
RAW __attribute__((noreturn)) static void child(const child_args *a)
{
	const spawn_options *o = a->o;
	struct kernel_sigaction dfl = {0};
	unsigned long none = 0;
	int e;

	if (a->pid_env)
		put_pid(a->pid_env);
	sys(SYS_setpgid, 0, 0, 0, 0);
	sys(SYS_umask, 022, 0, 0, 0); /* the gateway's own 077 is for its files, not a program's */
	/* the gateway ignores SIGPIPE; a program must not inherit that */
	sys(SYS_rt_sigaction, SIGPIPE, (long)&dfl, 0, sizeof(none));
	if (o->output_fd >= 0) {
		move_fd(a->null_fd, 0);
		move_fd(o->output_fd, 1);
		move_fd(o->error_fd > 0 ? o->error_fd : o->output_fd, 2);
	}
	/* Nothing of the gateway's (its database, sockets, pipes) leaks in; the
	 * error pipe stays open until execve closes it. */
	sys(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC, 0);
	if (a->secret_fd >= 0)
		sys(SYS_fcntl, a->secret_fd, F_SETFD, 0, 0); /* the one fd it inherits */
	if (o->memory_bytes) {
		struct rlimit rl = {.rlim_cur = o->memory_bytes, .rlim_max = o->memory_bytes};
		sys(SYS_prlimit64, 0, RLIMIT_AS, (long)&rl, 0);
	}
	/* A uid of its own: groups first, the uid last (it takes the right to
	 * change the others). A step that fails fails the start. */
	if (o->uid && ((e = raw_errno(sys(SYS_setgroups, 0, 0, 0, 0))) != 0 ||
	               (e = raw_errno(sys(SYS_setgid, (long)o->uid, 0, 0, 0))) != 0 ||
	               (e = raw_errno(sys(SYS_setuid, (long)o->uid, 0, 0, 0))) != 0)) {
		while (sys(SYS_write, a->err_fd, (long)&e, sizeof(e), 0) < 0 && errno == EINTR)
			;
		for (;;)
			sys(SYS_exit_group, 127, 0, 0, 0);
	}
	/* The gateway's threads block every signal (its main thread takes
	 * them with sigwait); the program's mask is empty. Last, so that no
	 * signal comes to this child before it is the program. */
	sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof(none));
	e = raw_errno(sys(SYS_execve, (long)a->path, (long)a->argv, (long)a->envp, 0));
	while (sys(SYS_write, a->err_fd, (long)&e, sizeof(e), 0) < 0 && errno == EINTR)
		;
	for (;;)
		sys(SYS_exit_group, 127, 0, 0, 0);
}

/* The child started, apart from spawn_process so that none of its
 * variables lives through vfork's second return. This thread waits until
 * the child has called execve or exited. */
__attribute__((noinline)) static pid_t start_child(const child_args *a)
{
	pid_t pid = vfork();
	if (pid == 0)
		child(a);
	return pid;
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
	child_args args = {.o = o,
	                   .path = path,
	                   .argv = argv,
	                   .envp = envp,
	                   .null_fd = null_fd,
	                   .err_fd = pipe_fd[1],
	                   .secret_fd = secret_fd[0],
	                   .pid_env = o->pid_in_env ? pid_env : NULL};
	pid = start_child(&args);
	if (pid < 0) {
		snprintf(detail, detail_len, "vfork: %s", strerror(errno));
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
