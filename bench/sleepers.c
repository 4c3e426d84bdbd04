/*
 * bench/hosts' baseline: the sleeps of its maps with no strand at all.
 * PROCESSES processes each sleep MS milliseconds COUNT times in a row;
 * prints the seconds until the last one ends and the CPU seconds they
 * took (the kernel's, mostly: each sleep is a timer, a wake-up and two
 * context switches). What a map of as many sleeps on as many workers
 * could take on this host at best.
 *   strand-bench-sleepers PROCESSES COUNT MS
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long processes = argc == 4 ? atol(argv[1]) : 0, count = argc == 4 ? atol(argv[2]) : 0;
	double ms = argc == 4 ? atof(argv[3]) : 0;
	struct rusage ru;

	if (processes < 1 || processes > 100000 || count < 1 || ms <= 0 || ms > 60000) {
		fprintf(stderr, "usage: strand-bench-sleepers PROCESSES (1 to 100000) COUNT MS (up to 60000)\n");
		return 64;
	}
	double began = now_s();
	for (long i = 0; i < processes; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("strand-bench-sleepers: fork");
			return 1; /* those started end by themselves */
		}
		if (pid == 0) {
			long ns = (long)(ms * 1e6);
			struct timespec ts = {ns / 1000000000, ns % 1000000000};
			for (long k = 0; k < count; k++)
				nanosleep(&ts, NULL);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	double took = now_s() - began;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("%.3f %.3f\n", took,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
