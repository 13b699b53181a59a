/*
 * fsyncahead.h - fsyncs running in the background while this process goes
 * on: the fork pool's parent makes each report a worker wrote durable
 * without stopping its loop (engine/commits.c), and learns that one has
 * ended from a descriptor it polls beside the workers' pipes.
 *
 * Where the kernel cannot run them (no Linux AIO, its limits reached, a
 * file system without it), fsync_ahead_open() or fsync_ahead_start() says
 * so and the caller fsyncs as before.
 */
#ifndef COWRUN_FSYNCAHEAD_H
#define COWRUN_FSYNCAHEAD_H

#include <stdint.h>

struct fsync_ahead {
	unsigned long context;     /* the AIO context; 0: none */
	int ended_fd;              /* an eventfd, readable once one has ended */
	unsigned in_flight, capacity;
};

/* Room for `capacity` fsyncs in flight.  Returns 0, or -1 with errno (the
 * caller fsyncs itself; *a is still safe to pass to the others). */
int fsync_ahead_open(struct fsync_ahead *a, unsigned capacity);

/* Start fsync(fd) in the background; `tag` comes back when it ends.  The
 * caller keeps fd open until then.  Returns 1 if it is in flight, or 0 if
 * it could not be started (full, refused): the caller fsyncs itself. */
int fsync_ahead_start(struct fsync_ahead *a, int fd, uint64_t tag);

/* Up to `max` fsyncs that have ended: their tags, and 0 or the errno
 * fsync() would have set.  With `wait`, waits for at least one if any is
 * in flight.  Returns how many, or -1 with errno. */
int fsync_ahead_ended(struct fsync_ahead *a, uint64_t *tags, int *errs, unsigned max, int wait);

void fsync_ahead_close(struct fsync_ahead *a);

#endif
