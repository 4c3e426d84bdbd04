/* Processes that are not our children. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/common.h"

int cm_process_running(pid_t pid)
{
	char path[64], stat[512];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')', comm may hold anything. */
	const char *end = strrchr(stat, ')');
	return end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}
