/*
 * taskout.c - run()'s standard output goes to standard error during the
 * task phase.  See taskout.h.
 */
#define _GNU_SOURCE
#include "taskout.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int taskout_begin(void)
{
	fflush(stdout);
	int saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);

	if (saved < 0)
		return -1;
	if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		close(saved);
		return -1;
	}
	return saved;
}

void taskout_end(int saved)
{
	if (saved < 0)
		return;
	fflush(stdout);
	/* A write error here was run()'s, on stderr: not the summary's. */
	clearerr(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
}
