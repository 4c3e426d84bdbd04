/* Folders removed whole. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void cm_remove_tree(const char *path)
{
	/* FTW_PHYS: a link inside is removed, never followed out of the tree. */
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int cm_lock_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}
