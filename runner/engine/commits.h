/*
 * commits.h - the reports fork workers hand over, committed by the pool's
 * parent.  A worker closes a report kept as a file under its temporary
 * name and sends its result as WIRE_RESULT_TO_COMMIT (worker.c); the
 * parent (pool.c) has the report fsync'd on a thread of its own
 * (os/fsyncahead.h) and holds the result here; once the fsync has ended
 * the report is renamed into place and only then is the result counted.
 * No worker waits for the disk, and a worker that dies meanwhile loses
 * nothing: the report and its result are the parent's.
 */
#ifndef COWRUN_COMMITS_H
#define COWRUN_COMMITS_H

#include "batch.h"

#include <stddef.h>

/* What becomes of a commit: `why` NULL when the report is in place (then
 * count the result), else why the task failed (nothing is left of its
 * report).  Returns 0, or -1 on a fatal error. */
typedef int commit_done_fn(void *ctx, const struct attempt *a, const void *record, size_t len,
			   const char *why);

struct commits;

/* A table for batch b's commits, fsync'd on up to `threads` threads,
 * `done` called with `ctx` as each ends.  Returns NULL if that cannot be
 * (then the workers commit their own reports, as in serial mode). */
struct commits *commits_open(struct batch *b, unsigned threads, commit_done_fn *done,
			     void *ctx);

/* The report of attempt `a` (its task, and its worker's pid, which names
 * the temporary file), with its result: its fsync started and the result
 * held (returns 1), or, where that cannot be, committed and `done` called
 * now (returns 0); -1 on a fatal error. */
int commits_take(struct commits *c, const struct attempt *a, const void *record, size_t len);

/* Readable once a commit's fsync has ended; -1 when none is in flight. */
int commits_poll_fd(const struct commits *c);

/* Finish the commits whose fsync has ended (with `wait`: at least one, if
 * any is in flight), calling `done` for each.  Returns 0, or -1. */
int commits_finish(struct commits *c, int wait);

size_t commits_in_flight(const struct commits *c);

/* The threads that fsync (NULL: none).  They take no lock a forked child
 * could need: a fork beside them is still a fork of one thread. */
unsigned commits_threads(const struct commits *c);

/* Finish every commit in flight, then free the table (NULL: nothing). */
void commits_close(struct commits *c);

#endif
