/*
 * joblog.h - the --joblog file, in GNU Parallel's format, so the tools and
 * habits operators have for it work unchanged:
 *
 *   Seq Host Starttime JobRuntime Send Receive Exitval Signal Command
 *
 * tab-separated, one line per attempt, written and flushed when the
 * attempt ends.  Seq is the task index + 1; Host is ":" (this machine);
 * Receive is the result record's size; Command is "WORKLOAD TASKNAME".
 * Exitval is 0 for success, 1 when the task returned an error, -1 when it
 * timed out, else the exit status of a worker that left mid-task; Signal
 * is the signal that killed the worker, if one did.
 */
#ifndef COWRUN_JOBLOG_H
#define COWRUN_JOBLOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How one attempt at one task went. */
struct attempt {
	size_t task;
	unsigned worker;     /* worker slot or thread number */
	long pid;            /* process that ran it */
	uint64_t start_ns;   /* CLOCK_MONOTONIC */
	uint64_t end_ns;
	int exitval;
	int signal;
	size_t received;     /* result bytes */
};

struct joblog {
	FILE *f;
	double epoch_minus_monotonic; /* turns CLOCK_MONOTONIC into epoch */
};

/*
 * Open `path` (a leading '+' means append, as GNU Parallel's --joblog
 * +FILE), writing the header unless appending to a non-empty file.
 * Returns 0 or -1 after a message naming the file.
 */
int joblog_open(struct joblog *j, const char *path);

/* One line for attempt `a` of task `name` of `workload`; flushed. */
void joblog_write(struct joblog *j, const struct attempt *a, const char *workload,
		  const char *name);

/*
 * Check that an existing joblog is one of this workload's: every line's
 * Command must start with "WORKLOAD ".  A missing file passes.  Returns 0
 * or -1 after a message.
 */
int joblog_check_workload(const char *path, const char *workload);

/* Close it.  Returns 0 or -1 after a message (a lost write). */
int joblog_close(struct joblog *j);

#endif
