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
	FILE *f;             /* open for writing (joblog_open) */
	int fd;              /* the locked file, -1 when not held */
	int created;         /* this run created the file (joblog_lock) */
	int written;         /* joblog_open ran: the file is this run's now */
	long long keep;      /* --resume: bytes of complete lines (joblog_read) */
	const char *path;    /* borrowed, the leading '+' dropped */
	double epoch_minus_monotonic; /* turns CLOCK_MONOTONIC into epoch */
};

/* How long a second run waits for the joblog's lock before refusing it: a
 * lock on a network filesystem may outlive a dead node for a while.
 * COWRUN_LOCK_WAIT (seconds) overrides it. */
#define JOBLOG_LOCK_WAIT_S 5.0

/*
 * Open `path` (a leading '+' dropped) for reading and writing, creating it
 * if missing but never truncating it, and take an exclusive flock() on it,
 * held until joblog_close(): one run per joblog.  Polls for up to `wait_s`
 * seconds; still held by another run: refused.  Returns 0, or -1 after one
 * message ("--joblog: 'x' is in use by another cowrun run (pid N)").
 */
int joblog_lock(struct joblog *j, const char *path, double wait_s);

/*
 * --resume: read the locked joblog and check every line: the header, then
 * 9 tab-separated fields, numbers where GNU Parallel has numbers, and a
 * Command of this workload ("WORKLOAD TASK").  A last line cut off (no
 * final newline, or too few fields: a write the disk did not take) is
 * dropped, said in one line on stderr; j->keep is then where it began, so
 * joblog_open() cuts it away.  Any other bad line refuses the joblog with
 * its line number and why.  Returns 0 or -1 after one message.
 */
int joblog_read(struct joblog *j, const char *workload);

/* Is the joblog at `path` (a leading '+' dropped) missing, or without one
 * complete line: nothing any run wrote? */
int joblog_is_empty(const char *path);

/* The same for the joblog open on `fd` (read from its start, by pread). */
int joblog_is_empty_fd(int fd);

/* The same lock on a descriptor the caller opened (a served batch: the
 * client's joblog, passed with its request), which this then owns: closed
 * by joblog_close(), or here on failure.  `name` is for messages.  Returns
 * 0 or -1 after a message. */
int joblog_lock_fd(struct joblog *j, int fd, const char *name, double wait_s);

/*
 * Start writing the locked joblog: truncated to nothing (a fresh run), to
 * j->keep (`resume`: what joblog_read() kept), or left as it is (`append`,
 * +FILE); the header is written when the file is then empty.  Returns 0
 * or -1 after a message naming the file.
 */
int joblog_open(struct joblog *j, int append, int resume);

/* One line for attempt `a` of task `name` of `workload`; flushed. */
void joblog_write(struct joblog *j, const struct attempt *a, const char *workload,
		  const char *name);

/* Close it and release the lock; a joblog this run created but never
 * wrote (a refused run) is removed.  Returns 0 or -1 after a message (a
 * lost write).  Safe to call again. */
int joblog_close(struct joblog *j);

#endif
