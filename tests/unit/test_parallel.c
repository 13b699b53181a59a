/*
 * test_parallel.c - unit tests for runner/os/parallel.c, cowrun_parallel():
 * every block runs exactly once whatever the thread count, on as many
 * threads as set (and no more), a failed block stops the blocks above it
 * but never one below, no thread is left when the call returns, and
 * cowrun_alloc() from the threads hands out disjoint memory.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cowrun.h"
#include "os/parallel.h"
#include "os/setup_arena.h"

#define MAX_BLOCKS 4096

/* What the blocks saw: how often each ran, on which thread. */
struct record {
	atomic_int runs[MAX_BLOCKS];
	atomic_int on_thread[64];
	size_t fail_at;     /* this block returns -1 (MAX_BLOCKS: none) */
	int sleep_us;       /* each block sleeps this long first */
	void *piece[MAX_BLOCKS];
};

static int note_block(void *ctx, size_t block, unsigned thread)
{
	struct record *r = ctx;

	if (r->sleep_us)
		usleep((useconds_t)r->sleep_us);
	atomic_fetch_add(&r->runs[block], 1);
	if (thread < 64)
		atomic_fetch_add(&r->on_thread[thread], 1);
	return block == r->fail_at ? -1 : 0;
}

static struct record *new_record(void)
{
	struct record *r = calloc(1, sizeof *r);

	assert_non_null(r);
	r->fail_at = MAX_BLOCKS;
	return r;
}

/* Threads of this process, as /proc/self/task lists them. */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A joined thread can stay listed for a moment: wait up to 2 s for one. */
static int settles_to_one_thread(void)
{
	for (int i = 0; i < 200; i++) {
		if (thread_count() == 1)
			return 1;
		usleep(10000);
	}
	return 0;
}

static void every_block_once_at_any_thread_count(void **state)
{
	static const unsigned threads[] = { 1, 2, 3, 8 };
	static const size_t blocks[] = { 0, 1, 2, 5, 1000 };

	(void)state;
	for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
		for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
			struct record *r = new_record();
			setup_threads_set(threads[t]);
			assert_int_equal(cowrun_setup_threads(), threads[t]);
			assert_int_equal(cowrun_parallel(blocks[b], note_block, r), 0);
			for (size_t k = 0; k < blocks[b]; k++)
				assert_int_equal(atomic_load(&r->runs[k]), 1);
			assert_int_equal(atomic_load(&r->runs[blocks[b]]), 0);
			for (unsigned i = threads[t]; i < 64; i++)
				assert_int_equal(atomic_load(&r->on_thread[i]), 0);
			free(r);
		}
	setup_threads_set(1);
}

static void two_threads_both_take_blocks(void **state)
{
	struct record *r = new_record();

	(void)state;
	r->sleep_us = 2000;
	setup_threads_set(2);
	assert_int_equal(cowrun_parallel(40, note_block, r), 0);
	assert_true(atomic_load(&r->on_thread[0]) > 0);
	assert_true(atomic_load(&r->on_thread[1]) > 0);
	assert_true(settles_to_one_thread());
	setup_threads_set(1);
	free(r);
}

static void zero_threads_means_one(void **state)
{
	(void)state;
	setup_threads_set(0);
	assert_int_equal(cowrun_setup_threads(), 1);
}

static void a_failure_stops_the_blocks_above_not_below(void **state)
{
	static const unsigned threads[] = { 1, 2, 4 };

	(void)state;
	for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
		struct record *r = new_record();
		r->fail_at = 37;
		setup_threads_set(threads[t]);
		assert_int_equal(cowrun_parallel(1000, note_block, r), -1);
		for (size_t k = 0; k <= 37; k++)
			assert_int_equal(atomic_load(&r->runs[k]), 1);
		/* On one thread nothing above it runs; on more, blocks
		 * above may have started before 37 failed. */
		int above = 0;
		for (size_t k = 38; k < 1000; k++)
			above += atomic_load(&r->runs[k]);
		if (threads[t] == 1)
			assert_int_equal(above, 0);
		free(r);
	}
	setup_threads_set(1);
}

static void no_thread_is_left_after_the_call(void **state)
{
	struct record *r = new_record();

	(void)state;
	setup_threads_set(4);
	assert_int_equal(cowrun_parallel(100, note_block, r), 0);
	assert_true(settles_to_one_thread());
	setup_threads_set(1);
	free(r);
}

/* Each block allocates pieces of its own size and fills them with its
 * number: overlapping allocations would overwrite one another. */
static int alloc_block(void *ctx, size_t block, unsigned thread)
{
	struct record *r = ctx;
	size_t size = 64 + block % 200;
	unsigned char *p = cowrun_alloc(size);

	(void)thread;
	if (p == NULL)
		return -1;
	memset(p, (int)(block & 0xff), size);
	r->piece[block] = p;
	return 0;
}

static void alloc_from_the_threads_is_disjoint(void **state)
{
	struct record *r = new_record();

	(void)state;
	assert_int_equal(setup_arena_init(0), 0);
	setup_threads_set(4);
	assert_int_equal(cowrun_parallel(MAX_BLOCKS, alloc_block, r), 0);
	for (size_t k = 0; k < MAX_BLOCKS; k++) {
		const unsigned char *p = r->piece[k];
		assert_non_null(p);
		for (size_t i = 0; i < 64 + k % 200; i++)
			assert_int_equal(p[i], k & 0xff);
	}
	setup_threads_set(1);
	setup_arena_destroy();
	free(r);
}

static void hash_is_xxh3_and_seeded(void **state)
{
	(void)state;
	/* XXH3_64bits("") with seed 0, from xxHash's own test vectors. */
	assert_true(cowrun_hash64("", 0, 0) == 0x2D06800538D394C2ULL);
	assert_true(cowrun_hash64("abc", 3, 0) != cowrun_hash64("abc", 3, 1));
	assert_true(cowrun_hash64("abc", 3, 0) != cowrun_hash64("abd", 3, 0));
}

/* cowrun_setup_forked(): the widest call counts, until the reset (-v's
 * "N setup processes"); it leaves the threads' count alone. */
static void forked_processes_are_counted_apart(void **state)
{
	(void)state;
	setup_threads_used_reset();
	assert_int_equal(setup_processes_used(), 0);
	cowrun_setup_forked(2);
	cowrun_setup_forked(1);
	assert_int_equal(setup_processes_used(), 2);
	assert_int_equal(setup_threads_used(), 0);
	setup_threads_used_reset();
	assert_int_equal(setup_processes_used(), 0);
}

/* cowrun_setup_threaded(): the same, for a library's own threads (-v's
 * "N setup threads (the workload's own ...)"); apart from the other two. */
static void own_threads_are_counted_apart(void **state)
{
	(void)state;
	setup_threads_used_reset();
	assert_int_equal(setup_own_threads_used(), 0);
	cowrun_setup_threaded(3);
	cowrun_setup_threaded(2);
	assert_int_equal(setup_own_threads_used(), 3);
	assert_int_equal(setup_threads_used(), 0);
	assert_int_equal(setup_processes_used(), 0);
	setup_threads_used_reset();
	assert_int_equal(setup_own_threads_used(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_block_once_at_any_thread_count),
		cmocka_unit_test(two_threads_both_take_blocks),
		cmocka_unit_test(zero_threads_means_one),
		cmocka_unit_test(a_failure_stops_the_blocks_above_not_below),
		cmocka_unit_test(no_thread_is_left_after_the_call),
		cmocka_unit_test(alloc_from_the_threads_is_disjoint),
		cmocka_unit_test(hash_is_xxh3_and_seeded),
		cmocka_unit_test(forked_processes_are_counted_apart),
		cmocka_unit_test(own_threads_are_counted_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
