/*
 * omprun.h - OpenMP mode: the same tasks in one process, on threads, with a
 * dynamic schedule.  For comparison with fork mode: it shares the setup
 * without copying page tables, but every workload's run() must then be
 * thread-safe.
 */
#ifndef COWRUN_OMPRUN_H
#define COWRUN_OMPRUN_H

#include "batch.h"

/* Run the batch's tasks on `threads` OpenMP threads.  Outcomes are merged
 * in task order under a lock, as they complete.  A task that crashes takes
 * the whole process with it (threads share it).  Returns 0, or -1 if the
 * runner ran out of memory. */
int omp_run(struct batch *b, size_t threads);

#endif
