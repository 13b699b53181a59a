/*
 * pool.h - fork mode: a fixed table of forked workers that share the
 * parent's setup copy-on-write, claim tasks dynamically from a counter in
 * shared memory, and send result records back through one pipe each.
 */
#ifndef COWRUN_POOL_H
#define COWRUN_POOL_H

#include "batch.h"

#include <stddef.h>
#include <stdint.h>

#include "os/procstat.h"

struct pool_options {
	uint64_t timeout_ns;     /* --timeout per task; 0: none */
	int catch_frozen_writes; /* the setup arena is frozen: name writers */
	int measure_memory;      /* workers read their Pss (--stats, --verbose) */
	size_t memfree;          /* --memfree SIZE in bytes; 0: off */
};

struct pool_stats {
	size_t workers;          /* size of the worker table */
	size_t forks;            /* workers forked, replacements included */
	size_t worker_deaths;    /* workers that died abnormally */
	uint64_t fork_ns_total;  /* parent-side time inside fork() */
	uint64_t fork_ns_max;
	size_t threads_at_fork;  /* most threads the parent had at a fork */
	struct worker_stats *per_worker; /* one per worker that reported; */
	size_t nper_worker;              /* the caller frees per_worker */
};

/*
 * Run the batch's selected tasks on `workers` forked workers (1 <= workers
 * <= batch_count(b)).  A worker that dies mid-task fails that attempt (a
 * retry is queued if --retries allows), unfinished tasks it had claimed go
 * back to the queue, and a fresh worker is forked from this (pristine)
 * parent.  Stops early on --halt or SIGINT/SIGTERM (batch_stopping()).
 * With opt->memfree: while the memory available (mem_available_bytes())
 * is below it, no task is handed out; below half of it, the worker that
 * started its task last is killed and that task requeued (never the only
 * worker running one; it spends no --retries, and the joblog shows the
 * killed attempt).
 * Returns 0 once every task is resolved (or the run stopped) and every
 * worker is reaped, or -1 on an error of the runner itself (pipe, fork,
 * memory) after killing and reaping all workers.
 */
int pool_run(struct batch *b, size_t workers, const struct pool_options *opt,
	     struct pool_stats *stats);

/* Most workers this process can keep (file descriptors, processes). */
size_t pool_max_workers(void);

#endif
