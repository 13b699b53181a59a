/*
 * commits.h - the reports fork workers hand over, committed by the pool's
 * parent.  A worker closes a report kept as a file under its temporary
 * name and sends its result as WIRE_RESULT_TO_COMMIT (worker.c); the
 * parent starts the report's fsync in the background (os/fsyncahead.h),
 * holds the result, and when the fsync has ended renames the report into
 * place and only then counts the result.  No worker waits for the disk,
 * and a worker that dies meanwhile loses nothing: the report and its
 * result are the parent's.
 */
#ifndef COWRUN_COMMITS_H
#define COWRUN_COMMITS_H

#include "pool_internal.h"

/* Set p->parent_commits (and p->commits) when the parent can commit in the
 * background; else workers commit their own reports, as in serial mode.
 * Before the first fork.  Returns 0 (nothing here fails a run). */
int commits_open(struct pool *p);

/* Worker i's frame `f` (WIRE_RESULT_TO_COMMIT, its attempt `a`): its
 * report's fsync started, its result held; or, where no fsync can be
 * started in the background, committed and counted now.  Returns 0, or -1
 * on a fatal error (as batch_attempt_ok()). */
int commits_take(struct pool *p, const struct wire_frame *f, const struct attempt *a);

/* The descriptor that is readable once a commit's fsync has ended (-1:
 * none in flight), for the pool's poll(). */
int commits_poll_fd(const struct pool *p);

/* Finish the commits whose fsync has ended (with `wait`: at least one, if
 * any is in flight): rename, then count each result, or fail its task.
 * Returns 0, or -1 on a fatal error. */
int commits_finish(struct pool *p, int wait);

/* How many reports are being committed. */
size_t commits_in_flight(const struct pool *p);

/* Finish every commit in flight, then free what commits_open() made. */
void commits_close(struct pool *p);

/* pool.c's: a failed attempt counted, its retry queued if it has one. */
void pool_attempt_failed(struct pool *p, const struct attempt *a, const char *why);

#endif
