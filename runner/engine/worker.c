/*
 * worker.c - the code that runs in a forked worker.
 *
 * A worker claims tasks from the shared area: a task someone requeued
 * first (but not a retry its own slot failed while another live slot has
 * not: a broken printer on one {%} must not take every retry), else a chunk of consecutive positions with one atomic add, sized
 * from how long its last chunk took (one task at a time for slow tasks, up
 * to CHUNK_MAX for trivial ones), so dispatch costs nanoseconds and a slow
 * task never holds others hostage.  It publishes what it claimed and what it
 * runs, so the parent can settle its tasks if it dies.  Results go back as
 * wire frames, buffered and flushed before every claim: whatever it has not
 * flushed lies in its current chunk.  A report kept as a file is closed
 * under its temporary name and left to the parent to fsync and rename
 * (commits.h), so no worker waits for the disk.  It leaves with _exit().
 */
#define _GNU_SOURCE
#include "pool_internal.h"
#include "os/command_run.h"
#include "os/setup_arena.h"
#include "os/signals.h"
#include "task.h"
#include "os/util.h"

#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PIPE_BUFFER_BYTES (64 * 1024)
#define CHUNK_TARGET_NS 200000u  /* a chunk of quick tasks lasts about this */
#define CHUNK_MAX 4096

/* What a worker claimed: one requeued task, or `count` positions. */
struct claim {
	int requeued;
	uint64_t first, count;
};

/* How many tasks to claim next: double while tasks are quick, down to one
 * when they are slow, and never more than a fair share of what is left so
 * the tail stays balanced. */
static uint64_t next_chunk_size(uint64_t last_size, uint64_t last_ns,
				uint64_t remaining, size_t workers)
{
	if (last_size == 0)
		return 1;
	uint64_t per_task = last_ns / last_size + 1;
	uint64_t want = 2 * last_size;

	if (want > CHUNK_TARGET_NS / per_task)
		want = CHUNK_TARGET_NS / per_task;
	if (want > remaining / (2 * workers))
		want = remaining / (2 * workers);
	if (want > CHUNK_MAX)
		want = CHUNK_MAX;
	return want ? want : 1;
}

static void publish_claim(struct shared_slot *me, uint64_t first, uint64_t end)
{
	atomic_store_explicit(&me->chunk_start, first, memory_order_relaxed);
	atomic_store_explicit(&me->chunk_end, end, memory_order_relaxed);
}

/* Whether slot `slot` leaves task k's retry to another slot: it failed
 * the task, and a live slot has not.  When every live slot has failed it,
 * any may take it (nothing starves). */
static int leaves_to_another(const struct pool *p, size_t slot, uint64_t k)
{
	uint64_t failed = atomic_load_explicit(&failed_slots(p->shared_map)[k],
					       memory_order_relaxed);

	if (!(failed & slot_bit(slot)))
		return 0;
	for (size_t i = 0; i < p->nworkers; i++)
		if (i != slot && !(failed & slot_bit(i)) &&
		    atomic_load_explicit(&p->shared_slots[i].live, memory_order_relaxed))
			return 1;
	return 0;
}

/* Move requeue_taken past the entries taken out of order. */
static void advance_taken(struct pool *p, uint64_t count)
{
	uint64_t taken = atomic_load(&p->shared->requeue_taken);

	while (taken < count && (atomic_load(&p->requeue[taken]) & REQUEUE_TAKEN))
		if (atomic_compare_exchange_weak(&p->shared->requeue_taken, &taken, taken + 1))
			taken++;
}

/* Take a requeued task this slot may run, the oldest first.  Returns 1
 * with *task, 0 if none is queued, or -1 if those queued are left to
 * other slots (leaves_to_another()). */
static int claim_requeued(struct pool *p, size_t slot, uint64_t *task)
{
	struct shared_area *sh = p->shared;
	uint64_t count = atomic_load_explicit(&sh->requeue_count, memory_order_acquire);
	int left = 0;

	for (uint64_t i = atomic_load(&sh->requeue_taken); i < count; i++) {
		uint64_t k = atomic_load(&p->requeue[i]);
		if (k & REQUEUE_TAKEN)
			continue;
		if (leaves_to_another(p, slot, k)) {
			left = 1;
			continue;
		}
		/* A failed exchange: another worker took it first. */
		if (atomic_compare_exchange_strong(&p->requeue[i], &k, k | REQUEUE_TAKEN)) {
			atomic_fetch_add(&sh->requeue_claimed, 1);
			advance_taken(p, count);
			*task = k;
			return 1;
		}
	}
	return left ? -1 : 0;
}

/* --memfree: while the parent holds back new tasks (too little memory
 * available), wait; its results are already flushed.  The parent looks
 * at the memory every HOLD_POLL_MS too. */
static void wait_while_held(struct pool *p)
{
	const struct timespec pause = { 0, HOLD_POLL_MS * 1000000L };

	while (atomic_load_explicit(&p->shared->hold, memory_order_relaxed) &&
	       !atomic_load_explicit(&p->shared->stop, memory_order_relaxed))
		nanosleep(&pause, NULL);
}

/* --tasks-per-worker: how many more tasks this worker may claim (all
 * it wants when there is no quota). */
static uint64_t quota_left(const struct pool *p, const struct shared_slot *me, uint64_t want)
{
	if (p->tasks_per_worker == 0)
		return want;
	uint64_t claimed = atomic_load_explicit(&me->claimed, memory_order_relaxed);
	uint64_t left = claimed < p->tasks_per_worker ? p->tasks_per_worker - claimed : 0;

	return want < left ? want : left;
}

/* Claim fresh positions.  Returns 1, or 0 if none is left. */
static int claim_positions(struct pool *p, struct shared_slot *me, uint64_t want,
			   struct claim *c)
{
	uint64_t count = batch_count(p->batch);

	if (atomic_load_explicit(&p->shared->next_task, memory_order_relaxed) >= count)
		return 0;
	uint64_t start = atomic_fetch_add(&p->shared->next_task, want);
	if (start >= count)
		return 0;
	c->requeued = 0;
	c->first = start;
	c->count = start + want < count ? want : count - start;
	publish_claim(me, start, start + c->count);
	return 1;
}

/* Claim work and publish the claim.  Returns 0 when nothing is left, or
 * when this worker has used its quota (a fresh fork takes its place).
 * While only retries this slot failed are queued, and another live slot
 * has not failed them, it waits for that slot to take them (or to
 * leave), looking every HOLD_POLL_MS. */
static int claim(struct pool *p, size_t slot, uint64_t want, struct claim *c)
{
	const struct timespec pause = { 0, HOLD_POLL_MS * 1000000L };
	struct shared_slot *me = &p->shared_slots[slot];

	if ((want = quota_left(p, me, want)) == 0)
		return 0;
	wait_while_held(p);
	for (;;) {
		if (atomic_load_explicit(&p->shared->stop, memory_order_relaxed))
			return 0;
		int requeued = claim_requeued(p, slot, &c->first);
		if (requeued == 1) {
			c->requeued = 1;
			c->count = 1;
			publish_claim(me, 0, 0);
			break;
		}
		if (claim_positions(p, me, want, c))
			break;
		if (requeued == 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	/* The parent reads it to know whether this worker can take more
	 * (pool.c's top_up()). */
	atomic_fetch_add_explicit(&me->claimed, c->count, memory_order_relaxed);
	return 1;
}

/* Run task k and queue its frames (timing first, for the parent's joblog
 * line).  Returns 1 if it succeeded, 0 if it failed, -1 if the pipe did. */
static int run_and_send(struct pool *p, size_t slot, struct cowrun_task *task,
			struct wire_writer *out, uint64_t k)
{
	struct shared_slot *me = &p->shared_slots[slot];
	uint64_t start = now_ns();
	int rc = 0;

	atomic_store_explicit(&me->current_start, start, memory_order_relaxed);
	atomic_store_explicit(&me->current, k, memory_order_release);
	/* A report kept as a file is closed here and committed by the parent
	 * (commits.h): the worker goes on without waiting for the disk. */
	int ok = task_run(task, p->batch->state, (size_t)k) == 0 &&
		 task_commit(task, p->parent_commits) == 0;
	fflush(stdout); /* run()'s prints, to stderr (taskout.h), before any _exit */
	if (p->send_timing) {
		struct wire_timing t = { start, now_ns(), (uint32_t)slot, ok };
		rc = wire_put(out, WIRE_TIMING, k, &t, sizeof t);
	}
	if (rc == 0 && ok)
		rc = wire_put(out, task->handed_over ? WIRE_RESULT_TO_COMMIT : WIRE_RESULT, k,
			      task->record, task->record_len);
	else if (rc == 0)
		rc = wire_put(out, WIRE_FAILED, k, task->error, strlen(task->error));
	atomic_store_explicit(&me->current, NO_TASK, memory_order_release);
	return rc != 0 ? -1 : ok;
}

/* The worker's last frame: what it cost. */
static int send_stats(struct wire_writer *out, uint64_t start_delay, uint64_t tasks,
		      int with_memory)
{
	struct worker_stats s = { .start_delay_ns = start_delay, .tasks = tasks };

	procstat_measure(&s, with_memory);
	return wire_put(out, WIRE_STATS, 0, &s, sizeof s);
}

/* Become a proper worker: die with the parent, leave the terminal's
 * signals to it, drop the descriptors it holds for other workers. */
static void become_worker(struct pool *p)
{
	/* Die with the parent, even if it died before prctl took effect. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != p->parent_pid)
		_exit(WORKER_EXIT_ORPHAN);
	setpgid(0, 0);
	signals_reset_in_worker();
	for (size_t i = 0; p->slots && i < p->nworkers; i++)   /* a standby has none */
		if (p->slots[i].state == SLOT_BUSY)
			close(p->slots[i].fd);
}

void worker_main(struct pool *p, size_t slot, int fd)
{
	uint64_t start_delay = now_ns() - p->fork_started_ns;
	struct shared_slot *me = &p->shared_slots[slot];
	struct wire_writer out;
	struct cowrun_task task;
	struct claim c;
	uint64_t last_size = 0, last_ns = 0, tasks = 0;

	become_worker(p);
	command_publish_to(&me->supervisor);
	if (p->catch_frozen_writes)   /* said through the shared slot */
		setup_arena_catch_frozen_writes(me->fault, sizeof me->fault, WORKER_EXIT_FROZEN, NULL);
	if (wire_writer_init(&out, fd, PIPE_BUFFER_BYTES) != 0)
		_exit(WORKER_EXIT_NOMEM);
	task_init(&task, p->batch->workload, batch_outdir_label(p->batch),
		  batch_outdir_fd(p->batch), &p->batch->route);
	task.slot = slot + 1;   /* {%}: a replacement takes its predecessor's */
	task_set_tasks_per_worker(p->tasks_per_worker);
	for (;;) {
		/* Flush before claiming: unsent results stay in one chunk. */
		if (wire_flush(&out) != 0)
			_exit(WORKER_EXIT_PIPE);
		uint64_t count = batch_count(p->batch);
		uint64_t next = atomic_load_explicit(&p->shared->next_task, memory_order_relaxed);
		if (!claim(p, slot, next_chunk_size(last_size, last_ns,
				next < count ? count - next : 0, p->nworkers), &c))
			break;
		uint64_t start = now_ns();
		for (uint64_t i = 0; i < c.count; i++) {
			if (atomic_load_explicit(&p->shared->stop, memory_order_relaxed))
				break; /* the rest of the chunk was never started */
			uint64_t k = c.requeued ? c.first : batch_task(p->batch, c.first + i);
			int ok = run_and_send(p, slot, &task, &out, k);
			if (ok < 0)
				_exit(WORKER_EXIT_PIPE);
			tasks++;
			/* A retry deserves a fresh fork of the pristine parent. */
			if (!ok && p->batch->retries > 0)
				goto leave;
		}
		last_size = c.count;
		last_ns = now_ns() - start;
	}
leave:
	if (send_stats(&out, start_delay, tasks, p->measure_memory) != 0 || wire_flush(&out) != 0)
		_exit(WORKER_EXIT_PIPE);
	/* The parent woken by that last frame often waits on this CPU: let
	 * it run before the exit tears down the page tables (a third of a
	 * millisecond for a 1 GiB setup). */
	sched_yield();
	_exit(0);
}
