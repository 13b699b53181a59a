/*
 * parallel.c - cowrun_parallel(): a setup's blocks on a few threads.  See
 * cowrun.h and parallel.h.
 *
 * pthreads, not OpenMP: libgomp keeps its thread pool alive after a
 * parallel region, and the runner must fork from a single-threaded parent.
 * Threads are created per call and joined before it returns; the calling
 * thread takes blocks too, so a failed pthread_create() only means fewer
 * helpers, never a failed setup.
 */
#define _GNU_SOURCE
#include "parallel.h"
#include "cowrun.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

static unsigned setup_threads = 1;
static unsigned most_used;   /* threads of the widest call since the reset */
static unsigned most_forked; /* cowrun_setup_forked()'s widest since the reset */
static unsigned most_own;    /* cowrun_setup_threaded()'s widest since the reset */

void setup_threads_set(unsigned threads)
{
	setup_threads = threads ? threads : 1;
}

unsigned setup_threads_used(void)
{
	return most_used;
}

void setup_threads_used_reset(void)
{
	most_used = most_forked = most_own = 0;
}

void cowrun_setup_forked(unsigned processes)
{
	if (processes > most_forked)
		most_forked = processes;
}

unsigned setup_processes_used(void)
{
	return most_forked;
}

void cowrun_setup_threaded(unsigned threads)
{
	if (threads > most_own)
		most_own = threads;
}

unsigned setup_own_threads_used(void)
{
	return most_own;
}

unsigned cowrun_setup_threads(void)
{
	return setup_threads;
}

/* One call's shared state: the next block to hand out and the lowest
 * block that failed (nblocks while none has). */
struct job {
	cowrun_block_fn fn;
	void *ctx;
	size_t nblocks;
	atomic_size_t next;
	atomic_size_t first_failed;
};

struct helper {
	struct job *job;
	unsigned thread;
	pthread_t id;
};

/* Lower *at to value if value is lower. */
static void lower_to(atomic_size_t *at, size_t value)
{
	size_t seen = atomic_load(at);

	while (value < seen && !atomic_compare_exchange_weak(at, &seen, value))
		;
}

/* Take blocks in increasing order until none is left, or every block left
 * is above one that failed. */
static void take_blocks(struct job *job, unsigned thread)
{
	for (;;) {
		size_t block = atomic_fetch_add(&job->next, 1);
		if (block >= job->nblocks || block > atomic_load(&job->first_failed))
			return;
		if (job->fn(job->ctx, block, thread) != 0)
			lower_to(&job->first_failed, block);
	}
}

static void *helper_main(void *arg)
{
	struct helper *h = arg;

	take_blocks(h->job, h->thread);
	return NULL;
}

int cowrun_parallel(size_t nblocks, cowrun_block_fn fn, void *ctx)
{
	struct job job = { fn, ctx, nblocks, 0, nblocks };
	unsigned want = setup_threads < nblocks ? setup_threads : (unsigned)(nblocks ? nblocks : 1);
	struct helper helper[want];
	unsigned started = 0;

	/* Thread 0 is this one; threads 1.. are helpers, numbered densely
	 * even if some could not be created. */
	for (unsigned i = 1; i < want; i++) {
		helper[started] = (struct helper){ &job, started + 1, 0 };
		if (pthread_create(&helper[started].id, NULL, helper_main, &helper[started]) == 0)
			started++;
	}
	if (started + 1 > most_used)
		most_used = started + 1;
	take_blocks(&job, 0);
	for (unsigned i = 0; i < started; i++)
		pthread_join(helper[i].id, NULL);
	return atomic_load(&job.first_failed) < nblocks ? -1 : 0;
}
