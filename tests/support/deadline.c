/* A test's own deadline; see deadline.h. A process of its own watches, not
 * a thread: a test that forks (a client held, then killed) must stay one
 * thread, as ThreadSanitizer's fork requires. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "tests/support/deadline.h"

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

/* Whether pid is a gateway the test started: its child named so. */
static int test_gateway(pid_t pid, pid_t test)
{
	char comm[64], state;
	pid_t parent;

	return cm_process_stat(pid, comm, sizeof(comm), &state, &parent) == 0 && parent == test &&
	       strcmp(comm, "strand-gateway") == 0;
}

/* The watcher: the test's end, or its deadline; then where it is. */
static void watch(pid_t test, int seconds)
{
	for (long left = seconds * 5L; left > 0; left--) {
		struct timespec tick = {.tv_nsec = 200000000};
		nanosleep(&tick, NULL);
		if (getppid() != test)
			_exit(0); /* the test ended */
	}
	fprintf(stderr, "--- the test's deadline (%d s) passed; where it is:\n", seconds);
	stacks(test, "the test");
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);
		char fd[64], log[PATH_MAX], cmd[PATH_MAX + 64];
		ssize_t len;
		if (pid <= 0 || !test_gateway(pid, test))
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
	if (d)
		closedir(d);
	kill(test, SIGKILL);
	_exit(1);
}

void deadline_arm(void)
{
	static int armed;
	const char *env = getenv("STRAND_TEST_DEADLINE");
	int seconds = env ? atoi(env) : 0;
	pid_t test = getpid();

	if (armed || seconds <= 0)
		return;
	armed = 1;
	fflush(NULL);
	if (fork() == 0)
		watch(test, seconds); /* never returns */
}
