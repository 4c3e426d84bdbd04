/* Programs on pipes: see child.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "worker/child.h"

extern char **environ;

/* In the child, after fork: write(2) only. */
static void say(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0)
		_exit(127);
}

int worker_child_start(char *const *argv, char *const *env, worker_child *c, char *why, size_t why_len)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};

	*c = (worker_child){.pid = -1, .in = -1, .out = -1, .err = -1};
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		snprintf(why, why_len, "pipe: %s", strerror(errno));
		goto fail;
	}
	if ((c->pid = fork()) < 0) {
		snprintf(why, why_len, "fork: %s", strerror(errno));
		goto fail;
	}
	if (c->pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvpe(argv[0], argv, env ? env : environ);
		const char *e = strerror(errno);
		say("cannot run ");
		say(argv[0]);
		say(": ");
		say(e);
		say("\n");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	c->in = in[1];
	c->out = out[0];
	c->err = err[0];
	return CM_OK;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	c->pid = -1;
	return CM_EIO;
}

void worker_child_close(worker_child *c)
{
	int *fds[3] = {&c->in, &c->out, &c->err};

	for (int i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
