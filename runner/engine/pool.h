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
	uint64_t tasks_per_worker; /* --tasks-per-worker: a worker that has run
				    * this many tasks leaves, and a fresh fork of
				    * the parent takes its place; 0: no limit */
	int catch_frozen_writes; /* the setup arena is frozen: name writers */
	int measure_memory;      /* workers read their Pss (--stats, --verbose) */
	size_t memfree;          /* --memfree SIZE in bytes; 0: off */
	int reap_later;          /* a worker's exit after its last frame is not
				  * waited for: pool_reap_later() reaps it */
};

struct pool_stats {
	size_t workers;          /* size of the worker table */
	size_t forks;            /* workers forked, replacements included */
	size_t standby;          /* workers taken from a standby instead */
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

/* The workers pool_run() left exiting (opt->reap_later): wait for them.
 * A served batch's leader calls it after its reply, so that no client
 * waits for a worker's page tables to be torn down. */
void pool_reap_later(void);

/*
 * A standby worker: forked ahead of its batch (by a served batch's spare
 * leader, while no client waits), it sleeps until this process's next
 * pool_run() hands it slot 0 of its pool, so that the fork of a big
 * setup's page tables is paid before anyone waits (issue 23).  The
 * handover gives it the batch's task list and options, the result pipe,
 * standard output and error and the output directory as they are in the
 * parent then, and the parent's user, groups and name.  w and state are
 * the setup's, as the batch will have them (a batch with other ones
 * forks its workers as before); the standby closes the ndrop descriptors
 * in drop (its parent's that no worker may hold).  Returns 0, or -1 with
 * errno (no standby: the batch forks its workers).
 */
int pool_standby_fork(const struct cowrun_workload *w, void *state, const int *drop,
		      size_t ndrop);

/* Kill and reap a standby no pool_run() took.  No standby: nothing. */
void pool_standby_drop(void);

/* Most workers this process can keep (file descriptors, processes). */
size_t pool_max_workers(void);

#endif
