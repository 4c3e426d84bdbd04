/* Folders removed whole. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

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
