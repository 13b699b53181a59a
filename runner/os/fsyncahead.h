/*
 * fsyncahead.h - fsyncs run by threads of this process while it goes on:
 * the fork pool's parent makes each report a worker wrote durable without
 * stopping its loop (engine/commits.h), and learns that one has ended
 * from a descriptor it polls beside the workers' pipes.
 *
 * The threads only call fsync() and write to that descriptor: a fork by
 * the main thread meanwhile (a replacement worker) leaves the child
 * nothing of theirs to use.  They block every signal.
 */
#ifndef COWRUN_FSYNCAHEAD_H
#define COWRUN_FSYNCAHEAD_H

#include <stdint.h>

struct fsync_ahead;

/* Up to `threads` fsyncs at once (threads started by the first
 * fsync_ahead_start()), `capacity` queued or ended but not yet collected.
 * Returns NULL (the caller fsyncs itself). */
struct fsync_ahead *fsync_ahead_open(unsigned threads, unsigned capacity);

/* Readable once an fsync has ended. */
int fsync_ahead_fd(const struct fsync_ahead *a);

/* Queue fsync(fd); `tag` comes back when it ends.  The caller keeps fd
 * open until then.  Returns 1 if queued, or 0 if it is full or no thread
 * could start (the caller fsyncs itself). */
int fsync_ahead_start(struct fsync_ahead *a, int fd, uint64_t tag);

/* Up to `max` fsyncs that have ended: their tags, and 0 or the errno
 * fsync() set.  With `wait`, waits for at least one if any is queued.
 * Returns how many. */
unsigned fsync_ahead_ended(struct fsync_ahead *a, uint64_t *tags, int *errs, unsigned max,
			   int wait);

/* The threads running (0 before the first job). */
unsigned fsync_ahead_threads(const struct fsync_ahead *a);

/* Queued and not yet collected. */
unsigned fsync_ahead_pending(const struct fsync_ahead *a);

/* Let the queued fsyncs end, stop the threads, free (NULL: nothing). */
void fsync_ahead_close(struct fsync_ahead *a);

#endif
