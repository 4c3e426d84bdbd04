/* Processes that are not our children, as /proc says them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int cm_process_stat(pid_t pid, char *comm, size_t comm_len, char *state, pid_t *ppid)
{
	char path[64], stat[512];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	/* "pid (comm) S ppid ...": the state follows the last ')', comm may hold anything. */
	const char *open = strchr(stat, '('), *end = strrchr(stat, ')');
	if (!open || !end || end < open || end[1] != ' ' || !end[2])
		return -1;
	snprintf(comm, comm_len, "%.*s", (int)(end - open - 1), open + 1);
	*state = end[2];
	*ppid = (pid_t)atoi(end + 3);
	return 0;
}

int cm_process_running(pid_t pid)
{
	char comm[64], state;
	pid_t ppid;

	return cm_process_stat(pid, comm, sizeof(comm), &state, &ppid) == 0 && state != 'Z' && state != 'X';
}
