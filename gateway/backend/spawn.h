/*
 * spawn: starting a program the way libuv does. Everything the child needs
 * (its path, argv, environment) is prepared before the child is made, since
 * the gateway is multi-threaded; the child runs on the gateway's memory
 * until execve, as posix_spawn's does (vfork), and makes system calls
 * only (spawn.c says why). An exec that fails is reported to the parent
 * over a close-on-exec pipe, so a missing program fails the spawn at once
 * with its errno rather than as an exit 127 later. Each program leads a
 * process group of its own, so a stop reaches everything it started.
 */
#ifndef GATEWAY_BACKEND_SPAWN_H
#define GATEWAY_BACKEND_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

typedef struct spawn_options {
	char *const *argv; /* argv[0]: a path, or a name looked up in PATH */
	size_t argc;
	char *const *env; /* "NAME=value": added to the gateway's environment, replacing a same name */
	size_t nenv;
	int env_only; /* env is the whole environment: nothing of the gateway's */
	int output_fd; /* stdout and stderr go here (stdin is /dev/null); -1: the gateway's */
	int error_fd; /* with output_fd: stderr goes here instead; 0: with stdout */
	unsigned long long memory_bytes; /* RLIMIT_AS; 0: none */
	uid_t uid; /* 0: the gateway's; else it runs as this uid and gid, with no other group */
	/* A secret for it to read from a pipe, never from its environment
	 * (which /proc shows): its fd's number is in STRAND_SECRET_FD. NULL:
	 * none. */
	const char *secret;
	/* STRAND_HOST_PID holds its pid as the host sees it, which a sandbox
	 * of its own pid namespace hides from it (a Process's pid, both in
	 * the caller and in current_process()). */
	int pid_in_env;
} spawn_options;

/* Finds name in PATH as execvp would (a name with a slash as it is) into
 * out. Returns 0, or an errno (ENOENT, EACCES). */
int spawn_resolve(const char *name, char *out, size_t out_len);

/* Starts the program. Returns CM_OK with *pid, or an error with the reason
 * ("cannot run NAME: No such file or directory") in detail. */
int spawn_process(const spawn_options *o, pid_t *pid, char *detail, size_t detail_len);

/* Sends sig to pid's process group, or to pid alone when it leads none (a
 * program started by an older gateway). Returns 0, or -1 with errno. */
int spawn_signal_group(pid_t pid, int sig);

#endif
