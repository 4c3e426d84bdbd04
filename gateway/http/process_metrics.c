/* The gateway process's figures; see process_metrics.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gateway/http/process_metrics.h"

/* /proc/self/stat's fields from the state on (the third), after the last
 * ')' of the command's name; n of them into f. Returns how many were read. */
static int stat_fields(unsigned long long *f, int n)
{
	char text[1024], *at;
	FILE *file = fopen("/proc/self/stat", "re");
	size_t len = file ? fread(text, 1, sizeof(text) - 1, file) : 0;
	int got = 0;

	if (file)
		fclose(file);
	text[len] = '\0';
	if (!(at = strrchr(text, ')')) || !(at = strchr(at, ' ')))
		return 0;
	at += 3; /* " S ": the state is not a number */
	while (got < n) {
		char *end;
		f[got] = strtoull(at, &end, 10);
		if (end == at)
			break;
		got++;
		at = end;
	}
	return got;
}

/* When the host started, in seconds since the epoch (/proc/stat's btime). */
static long long boot_time(void)
{
	char line[256];
	long long btime = 0;
	FILE *f = fopen("/proc/stat", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	if (f)
		fclose(f);
	return btime;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

int process_metrics_write(cm_buf *b)
{
	/* proc(5)'s fields 4 on: field k is f[k - 4]: utime 14, stime 15,
	 * num_threads 20, starttime 22 (ticks after boot), vsize 23, rss 24
	 * (pages). */
	unsigned long long f[21] = {0};
	double tick = (double)sysconf(_SC_CLK_TCK);
	struct rlimit files = {0};

	if (stat_fields(f, 21) < 21 || tick <= 0)
		return CM_EIO;
	getrlimit(RLIMIT_NOFILE, &files);
	return cm_buf_printf(
	        b,
	        "# HELP strand_build_info The gateway's version (value 1).\n# TYPE strand_build_info gauge\n"
	        "strand_build_info{version=\"%s\"} 1\n"
	        "# HELP process_cpu_seconds_total CPU time the gateway used, user and system.\n"
	        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
	        "# HELP process_resident_memory_bytes The gateway's resident memory.\n"
	        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n"
	        "# HELP process_virtual_memory_bytes The gateway's virtual memory.\n"
	        "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n"
	        "# HELP process_open_fds The gateway's open file descriptors.\n"
	        "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n"
	        "# HELP process_max_fds How many file descriptors the gateway may open.\n"
	        "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n"
	        "# HELP process_threads The gateway's threads.\n# TYPE process_threads gauge\nprocess_threads %llu\n"
	        "# HELP process_start_time_seconds When the gateway started, in seconds since the epoch.\n"
	        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n",
	        STRAND_VERSION, (double)(f[14 - 4] + f[15 - 4]) / tick,
	        f[24 - 4] * (unsigned long long)sysconf(_SC_PAGESIZE), f[23 - 4], open_fds(),
	        (unsigned long long)files.rlim_cur, f[20 - 4], (double)boot_time() + (double)f[22 - 4] / tick);
}
