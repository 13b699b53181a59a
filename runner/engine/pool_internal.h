/*
 * pool_internal.h - what the fork pool's parent (pool.c) and its workers
 * (worker.c) share: the layout of the MAP_SHARED area through which tasks
 * are handed out, and the pool's own table, which each worker inherits
 * copy-on-write at fork and only reads.
 */
#ifndef COWRUN_POOL_INTERNAL_H
#define COWRUN_POOL_INTERNAL_H

#include "batch.h"
#include "commits.h"
#include "pool.h"
#include "os/procstat.h"
#include "files/wire.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define NO_TASK UINT64_MAX
/* A requeue entry a worker has taken: the task index with this bit set. */
#define REQUEUE_TAKEN (UINT64_C(1) << 63)

/* Worker exit codes for the runner's own failures (a task's failure is a
 * WIRE_FAILED frame, not an exit code). */
enum {
	WORKER_EXIT_PIPE = 120,    /* the result pipe failed */
	WORKER_EXIT_NOMEM = 121,
	WORKER_EXIT_ORPHAN = 122,  /* the parent died before the worker started */
	WORKER_EXIT_FROZEN = 123,  /* a task wrote to the frozen setup arena */
	WORKER_EXIT_STANDBY = 124, /* a standby could not take its place */
};

/* What one worker is doing.  Written by the worker, read by the parent
 * (for timeouts while it runs; for its claims after reaping it).  One
 * cache line each, so workers never contend. */
struct shared_slot {
	_Atomic uint64_t current;       /* task being run, NO_TASK between */
	_Atomic uint64_t current_start; /* CLOCK_MONOTONIC when it began */
	_Atomic uint64_t chunk_start;   /* claimed positions whose results */
	_Atomic uint64_t chunk_end;     /* may still be unsent */
	_Atomic uint64_t claimed;       /* tasks this worker has claimed since its fork */
	_Atomic int live;               /* set by the parent: a worker holds the slot */
	_Atomic int supervisor;         /* its running command's supervisor, 0: none */
	char fault[192];                /* why it exited WORKER_EXIT_FROZEN */
} __attribute__((aligned(64)));

struct shared_area {
	/* Next unclaimed position in the batch's task list. */
	_Atomic uint64_t next_task __attribute__((aligned(64)));
	/* Tasks to run again (retries, leftovers of dead workers): task
	 * indices appended by the parent, taken by workers, mostly in order
	 * (an entry taken out of order gets REQUEUE_TAKEN).  requeue_taken:
	 * every entry before it is taken; requeue_claimed: entries taken. */
	_Atomic uint64_t requeue_taken __attribute__((aligned(64)));
	_Atomic uint64_t requeue_count;
	_Atomic uint64_t requeue_claimed;
	/* Where in the map the per-task masks of the slots that failed each
	 * task lie (set before any fork; a standby finds them here too). */
	uint64_t failed_off;
	/* Set by the parent: claim nothing more (--halt, SIGINT). */
	_Atomic int stop;
	/* Set by the parent while memory is short (--memfree): claim
	 * nothing yet, look again every HOLD_POLL_MS. */
	_Atomic int hold;
};

#define HOLD_POLL_MS 20

/* Slot i's bit in a task's mask of the slots that failed it.  Slots 64
 * apart share a bit: a slot may then pass over a retry another slot
 * failed, never take one its own slot failed while another could. */
static inline uint64_t slot_bit(size_t slot)
{
	return UINT64_C(1) << (slot % 64);
}

/* The masks, one per task, in the shared map. */
static inline _Atomic uint64_t *failed_slots(void *shared_map)
{
	const struct shared_area *sh = shared_map;

	return (_Atomic uint64_t *)((char *)shared_map + sh->failed_off);
}

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

/* A task's retry: queued (or running), or held by the parent until its
 * --retry-delay has passed. */
enum { RETRY_QUEUED = 1, RETRY_HELD = 2 };
/* ... or its result came and its report is being committed (commits.h):
 * not to be run again if its worker dies. */
enum { COMMIT_IN_FLIGHT = 3 };

/* The parent's view of one worker. */
struct worker_slot {
	enum slot_state state;
	pid_t pid;
	int fd;                   /* read end of the worker's result pipe */
	int corrupt;              /* stream unreadable: ignore until EOF */
	struct wire_reader reader;
	struct wire_timing timing;/* the last WIRE_TIMING frame */
	int has_timing;
	uint64_t timed_out_task;  /* task we sent SIGTERM for, or NO_TASK */
	uint64_t kill_at_ns;      /* SIGKILL if still alive then; 0: no */
	int stopped_by_us;        /* killed for --halt now or a second signal */
	int memfree_killed;       /* killed for --memfree: its task is requeued */
	uint64_t fork_ns;         /* how long its fork() took */
	int said_goodbye;         /* its last frame (WIRE_STATS) arrived */
};

struct pool {
	struct batch *batch;
	size_t nworkers, live;
	struct worker_slot *slots;
	struct pollfd *pollfds;   /* one per worker, plus the signal pipe */
	size_t *poll_slot;
	void *shared_map;
	size_t shared_size;
	int shared_fd;            /* the map's memfd when a standby may join; else -1 */
	size_t selected_off;      /* there: a copy of the task list; 0: none */
	struct shared_area *shared;
	struct shared_slot *shared_slots;
	_Atomic uint64_t *requeue; /* task indices, in the shared map */
	size_t requeue_cap;
	unsigned char *retry_queued; /* per task: RETRY_QUEUED, RETRY_HELD,
				      * COMMIT_IN_FLIGHT or 0 */
	int parent_commits;        /* workers hand their reports over (commits.h) */
	struct commits *commits;   /* the reports being committed */
	struct held_retry {       /* retries waiting out --retry-delay */
		size_t task;
		uint64_t due_ns;
	} *held;
	size_t nheld;
	pid_t parent_pid;
	size_t deaths_since_progress;
	uint64_t timeout_ns;      /* --timeout, 0: none */
	uint64_t tasks_per_worker; /* --tasks-per-worker: a worker's quota; 0: none */
	int send_timing;          /* workers send WIRE_TIMING frames */
	uint64_t fork_started_ns; /* when the parent called fork() for it */
	int catch_frozen_writes;  /* workers trap writes to the setup arena */
	int measure_memory;       /* workers read their Pss at the end */
	size_t memfree;           /* --memfree bytes; 0: off */
	uint64_t memory_seen_ns;  /* when the parent last looked */
	int memfree_killing;      /* a worker killed for --memfree not reaped yet */
	int reap_later;           /* opt->reap_later */
	struct pool_stats *stats;
};

/* The child side of fork(): runs tasks until none are left, then _exits.
 * Never returns. */
void worker_main(struct pool *p, size_t slot, int fd) __attribute__((noreturn));

/* standby.c, the parent's side: whether this process holds a standby that
 * fits batch b, and handing it slot i of p with `result_fd`, the write end
 * of its result pipe (p's shared map must be a memfd, p->shared_fd).
 * Returns the standby's pid (its fork's duration in *fork_ns), or -1 if
 * it is gone (the caller forks instead); either way the standby is no
 * longer this process's to hand. */
int standby_fits(const struct batch *b);
pid_t standby_hand(struct pool *p, size_t i, int result_fd, uint64_t *fork_ns);

#endif
