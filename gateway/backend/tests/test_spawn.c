/*
 * spawn_process: what a started program inherits and what it does not. The
 * child runs on the gateway's memory until execve and makes only system
 * calls (spawn.c), so each thing the child sets is checked here from the
 * program's side: its process group, umask, signal dispositions and mask,
 * its descriptors (output, /dev/null in, the secret's pipe, nothing else),
 * its pid in STRAND_HOST_PID, its memory limit, and, as root, a uid and
 * gid of its own with no other group; and a program that cannot run fails
 * the spawn with its errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/backend/spawn.h"

/* What the program printed into a file, after it exited with code 0. */
static void run_and_read(spawn_options *o, char *out, size_t out_len)
{
	char path[] = "/tmp/strand-spawn-XXXXXX", detail[256] = "";
	int fd = mkstemp(path), status = 0;
	pid_t pid = 0;

	assert_true(fd >= 0);
	unlink(path);
	o->output_fd = fd;
	assert_int_equal(spawn_process(o, &pid, detail, sizeof(detail)), CM_OK);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ssize_t n = pread(fd, out, out_len - 1, 0);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
}

/* The value after "name:" on its line of text, as a string. */
static void field(const char *text, const char *name, char *out, size_t out_len)
{
	const char *at = strstr(text, name);
	assert_non_null(at);
	at += strlen(name);
	while (*at == ' ' || *at == '\t')
		at++;
	size_t n = strcspn(at, "\n");
	assert_true(n < out_len);
	memcpy(out, at, n);
	out[n] = '\0';
}

static void test_what_a_program_inherits(void **state)
{
	(void)state;
	char out[8192], value[256];
	/* The shell reports on itself, last its descriptors as ls, which it
	 * becomes, sees them: its own (the folder it reads) one more. */
	char *argv[] = {"/bin/sh", "-c",
	                "echo pid: $$; echo pgid: $(cut -d' ' -f5 /proc/$$/stat); echo umask: $(umask); "
	                "echo env: $STRAND_HOST_PID; echo secret: $(cat <&$STRAND_SECRET_FD) $STRAND_SECRET_FD; "
	                "echo vmem: $(ulimit -v); echo stdin: $(readlink /proc/$$/fd/0); "
	                "grep -E '^Sig(Ign|Blk):' /proc/$$/status; echo fds:; exec ls -1 /proc/self/fd"};
	char *env[] = {"STRAND_TEST_SPAWN=1"};
	spawn_options o = {.argv = argv,
	                   .argc = 3,
	                   .env = env,
	                   .nenv = 1,
	                   .secret = "hush",
	                   .pid_in_env = 1,
	                   .memory_bytes = 1ull << 33};
	sigset_t blocked, old;

	/* A gateway thread blocks signals (its main thread takes them with
	 * sigwait) and ignores SIGPIPE: a program inherits neither. */
	/* A number no descriptor of the program takes first. */
	int leaked = dup2(STDERR_FILENO, 100);
	assert_int_equal(leaked, 100);
	sigfillset(&blocked);
	pthread_sigmask(SIG_BLOCK, &blocked, &old);
	signal(SIGPIPE, SIG_IGN);
	umask(077);
	run_and_read(&o, out, sizeof(out));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(leaked);

	char pid[32], secret_fd[32];
	field(out, "pid:", pid, sizeof(pid));
	field(out, "pgid:", value, sizeof(value));
	assert_string_equal(value, pid); /* it leads a group of its own */
	field(out, "env:", value, sizeof(value));
	assert_string_equal(value, pid);
	field(out, "umask:", value, sizeof(value));
	assert_string_equal(value, "0022");
	field(out, "secret:", value, sizeof(value));
	assert_int_equal(sscanf(value, "hush %31s", secret_fd), 1);
	field(out, "vmem:", value, sizeof(value));
	assert_string_equal(value, "8388608"); /* KiB */
	field(out, "stdin:", value, sizeof(value));
	assert_string_equal(value, "/dev/null");
	/* 0, 1, 2, the secret's pipe and ls's folder: nothing of this
	 * process's (leaked below, not close-on-exec, it holds more). */
	const char *fds = strstr(out, "fds:\n");
	assert_non_null(fds);
	int n = 0, seen_secret = 0;
	for (const char *at = fds + 5; *at; at += strcspn(at, "\n") + 1, n++) {
		int fd = atoi(at);
		assert_true(fd != leaked);
		seen_secret |= fd == atoi(secret_fd);
		if (n < 3)
			assert_int_equal(fd, n);
	}
	assert_int_equal(n, 5);
	assert_true(seen_secret);
	field(out, "SigBlk:", value, sizeof(value));
	assert_string_equal(value, "0000000000000000");
	field(out, "SigIgn:", value, sizeof(value));
	assert_string_equal(value, "0000000000000000");
}

static void test_a_uid_of_its_own(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char out[1024], value[64];
	char *argv[] = {"/bin/sh", "-c", "echo uid: $(id -u) gid: $(id -g); echo groups: $(id -G)"};
	spawn_options o = {.argv = argv, .argc = 3, .uid = 61234};

	run_and_read(&o, out, sizeof(out));
	field(out, "uid:", value, sizeof(value));
	assert_string_equal(value, "61234 gid: 61234");
	field(out, "groups:", value, sizeof(value));
	assert_string_equal(value, "61234");
}

static void test_what_cannot_run_fails_the_spawn(void **state)
{
	(void)state;
	char detail[256] = "";
	pid_t pid = 0;
	char *missing[] = {"/nonexistent/strand-program"};
	spawn_options o = {.argv = missing, .argc = 1, .output_fd = -1};

	assert_int_equal(spawn_process(&o, &pid, detail, sizeof(detail)), CM_EUNAVAIL);
	assert_string_equal(detail, "cannot run /nonexistent/strand-program: No such file or directory");

	/* Found, but execve refuses it (a file that is not a program). */
	char path[] = "/tmp/strand-spawn-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\x7f" "ELF garbage", 12), 12);
	close(fd);
	chmod(path, 0755);
	char *bad[] = {path};
	o.argv = bad;
	assert_int_equal(spawn_process(&o, &pid, detail, sizeof(detail)), CM_EUNAVAIL);
	char want[256];
	snprintf(want, sizeof(want), "cannot run %s: Exec format error", path);
	assert_string_equal(detail, want);
	unlink(path);

	/* As root, a uid that may not enter the program's folder. */
	if (geteuid() == 0) {
		char folder[] = "/tmp/strand-spawn-XXXXXX", prog[64];
		assert_non_null(mkdtemp(folder));
		snprintf(prog, sizeof(prog), "%s/true", folder);
		assert_int_equal(symlink("/bin/true", prog), 0);
		chmod(folder, 0700);
		char *locked[] = {prog};
		o.argv = locked;
		o.uid = 61234;
		assert_int_equal(spawn_process(&o, &pid, detail, sizeof(detail)), CM_EUNAVAIL);
		snprintf(want, sizeof(want), "cannot run %s: Permission denied", prog);
		assert_string_equal(detail, want);
		unlink(prog);
		rmdir(folder);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_what_a_program_inherits),
	        cmocka_unit_test(test_a_uid_of_its_own),
	        cmocka_unit_test(test_what_cannot_run_fails_the_spawn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
