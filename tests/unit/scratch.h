/*
 * scratch.h - a unit test's own temporary directory: made fresh under
 * $TMPDIR (default /tmp), then removed with everything in it.  Included
 * by the tests that write files (static: no object of its own).
 */
#ifndef COWRUN_TEST_SCRATCH_H
#define COWRUN_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Make a new directory "cowrun-TAG-XXXXXX" and put its path in dir.
 * Returns 0, or -1 (the path does not fit, or mkdtemp failed). */
static int scratch_make(char *dir, size_t size, const char *tag)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(dir, size, "%s/cowrun-%s-XXXXXX", tmp ? tmp : "/tmp", tag);

	return n > 0 && (size_t)n < size && mkdtemp(dir) != NULL ? 0 : -1;
}

static int scratch_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove dir and all it holds, links not followed.  Returns 0 or -1. */
static int scratch_remove(const char *dir)
{
	return nftw(dir, scratch_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
