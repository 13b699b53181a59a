/*
 * test_seed.c - the seeds a workload draws from (include/cowrun.h,
 * runner/engine/task.c): cowrun_seed_mix() is SplitMix64's output n + 1,
 * pinned to the published values, since saved results and journals
 * recorded under one cowrun are resumed and merged by another: a task's
 * seed must never change under it.  A task's seed depends on its index
 * and the run seed only.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "cowrun.h"
#include "engine/task.h"

/* SplitMix64 from state 0: its first three outputs (Vigna's reference
 * splitmix64.c), and from state 1234567 its first. */
static void test_mix_is_splitmix64(void **unused)
{
	(void)unused;
	assert_true(cowrun_seed_mix(0, 0) == 0xe220a8397b1dcdafull);
	assert_true(cowrun_seed_mix(0, 1) == 0x6e789e6aa1b965f4ull);
	assert_true(cowrun_seed_mix(0, 2) == 0x06c45d188009454full);
	assert_true(cowrun_seed_mix(1234567, 0) == 0x599ed017fb08fc85ull);
}

/* cowrun_task_seed(): the run seed's mix with the task's index, never
 * the slot (the worker) it runs on. */
static void test_task_seed(void **unused)
{
	static struct cowrun_task a, b;

	(void)unused;
	a.index = 5;
	a.slot = 1;
	b.index = 5;
	b.slot = 2;
	task_set_seed(7);
	assert_int_equal(cowrun_run_seed(), 7);
	assert_true(cowrun_task_seed(&a) == cowrun_seed_mix(7, 5));
	assert_true(cowrun_task_seed(&a) == cowrun_task_seed(&b));
	b.index = 6;
	assert_true(cowrun_task_seed(&a) != cowrun_task_seed(&b));
	task_set_seed(8);
	assert_true(cowrun_task_seed(&a) == cowrun_seed_mix(8, 5));
	task_set_seed(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mix_is_splitmix64),
		cmocka_unit_test(test_task_seed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
