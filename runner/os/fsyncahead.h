/*
 * fsyncahead.h - one fsync left running in the background while this
 * process goes on: a fork worker starts its report's fsync, runs its next
 * task, and renames the report once the fsync has ended (worker.c), so a
 * report's durability costs the batch no waiting on the disk.
 *
 * At most one fsync is in flight per process.  Where the kernel cannot
 * run one (no Linux AIO, its limits reached, a file system without it),
 * fsync_ahead_start() says so and the caller fsyncs as before.
 */
#ifndef COWRUN_FSYNCAHEAD_H
#define COWRUN_FSYNCAHEAD_H

/* Start fsync(fd) in the background.  Returns 1 if it is in flight (`fd`
 * may be closed at once: the kernel holds the file), or 0 if it could not
 * be started (the caller calls fsync() itself), as when one is in flight
 * already: fsync_ahead_wait() ends each before the next starts. */
int fsync_ahead_start(int fd);

/* Wait for the fsync in flight.  Returns 0 if it succeeded (or none was in
 * flight), or -1 with errno as fsync() would have set it. */
int fsync_ahead_wait(void);

#endif
