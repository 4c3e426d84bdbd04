/* A test's own deadline; see deadline.h. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/deadline.h"

static const pid_t *watched;
static size_t nwatched;
static int seconds;

/* What process pid is doing: each thread's stack. */
static void stacks(pid_t pid, const char *what)
{
	char cmd[200];

	fprintf(stderr, "--- the stacks of %s (pid %d):\n", what, (int)pid);
	fflush(stderr);
	snprintf(cmd, sizeof(cmd), "gdb -batch -p %d -ex 'thread apply all bt' 2>&1 | grep -v '^\\[' >&2", (int)pid);
	if (system(cmd) != 0)
		fprintf(stderr, "(no gdb to show them)\n");
}

static void *watch(void *arg)
{
	struct timespec left = {.tv_sec = seconds};

	(void)arg;
	while (nanosleep(&left, &left) != 0)
		;
	fprintf(stderr, "--- the test's deadline (%d s) passed; where it is:\n", seconds);
	stacks(getpid(), "the test");
	for (size_t i = 0; i < nwatched; i++) {
		pid_t pid = watched[i];
		char fd[64], log[PATH_MAX], cmd[PATH_MAX + 64];
		ssize_t len;
		if (pid <= 0)
			continue;
		stacks(pid, "a gateway it runs");
		snprintf(fd, sizeof(fd), "/proc/%d/fd/2", (int)pid);
		if ((len = readlink(fd, log, sizeof(log) - 1)) > 0) { /* its log is its stderr */
			log[len] = '\0';
			fprintf(stderr, "--- its log (%s) ends:\n", log);
			fflush(stderr);
			snprintf(cmd, sizeof(cmd), "tail -40 '%s' >&2", log);
			if (system(cmd) != 0)
				fprintf(stderr, "(unreadable)\n");
		}
		kill(pid, SIGKILL);
	}
	fflush(NULL);
	_exit(1);
}

static void start(void)
{
	const char *env = getenv("STRAND_TEST_DEADLINE");
	pthread_t t;

	if (!env || (seconds = atoi(env)) <= 0 || pthread_create(&t, NULL, watch, NULL) != 0)
		return;
	pthread_detach(t);
}

void deadline_arm(const pid_t *gateways, size_t n)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	watched = gateways;
	nwatched = n;
	pthread_once(&once, start);
}
