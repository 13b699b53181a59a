/*
 * test_reorder.c - unit tests for runner/engine/reorder.c: results put in any
 * order come out once each, in task order, with their bytes; failed tasks
 * are skipped in order; duplicates are ignored; counters stay right.
 * Run it under valgrind to check reorder_free releases what it holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine/reorder.h"

#define NTASKS 1000

/* Task k's record: length k % 41 (so some are empty), bytes from k. */
static size_t record_length(size_t k)
{
	return k % 41;
}

static void record_bytes(size_t k, unsigned char *buf)
{
	for (size_t i = 0; i < record_length(k); i++)
		buf[i] = (unsigned char)(k * 31 + i * 7 + (k >> 8));
}

static uint32_t xorshift32(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

/* Put task k's record from a scratch buffer that is clobbered afterwards,
 * so the buffer must have kept its own copy. */
static void put_record(struct reorder *r, size_t k)
{
	unsigned char buf[64];

	record_bytes(k, buf);
	assert_int_equal(reorder_put(r, k, buf, record_length(k)), 0);
	memset(buf, 0xee, sizeof buf);
}

static void check_record(size_t k, const void *record, size_t length)
{
	unsigned char want[64];

	assert_int_equal(length, record_length(k));
	record_bytes(k, want);
	if (length > 0) {
		assert_non_null(record);
		assert_memory_equal(record, want, length);
	}
}

/* Put every task in `order`, draining after each put; check every task is
 * handed out exactly once, in task order, and the counters all along. */
static void run_order(const size_t *order, size_t n)
{
	struct reorder r;
	unsigned char *resolved = calloc(n, 1);
	size_t handed = 0, held = 0, held_bytes = 0;
	size_t k, length;
	int failed;
	const void *record;

	assert_non_null(resolved);
	assert_int_equal(reorder_init(&r, n), 0);
	assert_false(reorder_complete(&r));
	for (size_t i = 0; i < n; i++) {
		size_t t = order[i];
		assert_int_equal(reorder_state(&r, t), REORDER_WAITING);
		put_record(&r, t);
		resolved[t] = 1;
		held++;
		held_bytes += record_length(t);
		while (reorder_next(&r, &k, &failed, &record, &length) == 1) {
			assert_int_equal(k, handed);
			assert_false(failed);
			check_record(k, record, length);
			assert_int_equal(reorder_state(&r, k), REORDER_DONE);
			held--;
			held_bytes -= length;
			handed++;
		}
		/* stopped exactly at the first unresolved task */
		assert_true(handed == n || !resolved[handed]);
		assert_int_equal(r.next, handed);
		assert_int_equal(r.held, held);
		assert_int_equal(r.held_bytes, held_bytes);
	}
	assert_int_equal(handed, n);
	assert_true(reorder_complete(&r));
	assert_int_equal(r.held, 0);
	assert_int_equal(r.held_bytes, 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	for (size_t t = 0; t < n; t++)
		assert_int_equal(reorder_state(&r, t), REORDER_DONE);
	reorder_free(&r);
	assert_null(r.slots);
	free(resolved);
}

static void test_in_order(void **state)
{
	(void)state;
	size_t order[NTASKS];
	for (size_t i = 0; i < NTASKS; i++)
		order[i] = i;
	run_order(order, NTASKS);
}

static void test_reverse_order(void **state)
{
	(void)state;
	size_t order[NTASKS];
	for (size_t i = 0; i < NTASKS; i++)
		order[i] = NTASKS - 1 - i;
	run_order(order, NTASKS);
}

static void test_random_permutation(void **state)
{
	(void)state;
	size_t order[NTASKS];
	uint32_t s = 12345;
	for (size_t i = 0; i < NTASKS; i++)
		order[i] = i;
	for (size_t i = NTASKS - 1; i > 0; i--) { /* Fisher-Yates */
		size_t j = xorshift32(&s) % (i + 1);
		size_t tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	run_order(order, NTASKS);
}

/* Reverse order holds everything until task 0 arrives, then releases all. */
static void test_reverse_holds_until_first(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length, bytes = 0;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 100), 0);
	for (size_t t = 99; t >= 1; t--) {
		put_record(&r, t);
		bytes += record_length(t);
		assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	}
	assert_int_equal(r.held, 99);
	assert_int_equal(r.held_bytes, bytes);
	assert_int_equal(reorder_state(&r, 50), REORDER_READY);
	assert_int_equal(reorder_state(&r, 0), REORDER_WAITING);
	put_record(&r, 0);
	for (size_t t = 0; t < 100; t++) {
		assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
		assert_int_equal(k, t);
		check_record(k, record, length);
	}
	assert_true(reorder_complete(&r));
	reorder_free(&r);
}

/* Failed tasks come out in their place, flagged, and hold no bytes. */
static void test_failed_skipped_in_order(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 6), 0);
	assert_int_equal(reorder_fail(&r, 1, "x", 1), 0);
	assert_int_equal(reorder_state(&r, 1), REORDER_FAILED);
	put_record(&r, 2);
	assert_int_equal(reorder_fail(&r, 4, "x", 1), 0);
	assert_int_equal(r.held, 3);
	/* Failure messages are held too: one byte each here. */
	assert_int_equal(r.held_bytes, record_length(2) + 2);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);

	put_record(&r, 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 0);
	assert_false(failed);
	check_record(0, record, length);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 1);
	assert_true(failed);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 2);
	assert_false(failed);
	check_record(2, record, length);
	/* 3 still waiting: 4 stays held */
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.held_bytes, 1); /* 4's message */

	/* failing the next task releases it at once, and 4 after it */
	assert_int_equal(reorder_fail(&r, 3, "x", 1), 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 3);
	assert_true(failed);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 4);
	assert_true(failed);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	assert_false(reorder_complete(&r));
	assert_int_equal(reorder_fail(&r, 5, "x", 1), 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 5);
	assert_true(failed);
	assert_true(reorder_complete(&r));
	assert_int_equal(r.held, 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	reorder_free(&r);
}

/* A random mix of results and failures in random order. */
static void test_random_mix_with_failures(void **state)
{
	(void)state;
	struct reorder r;
	size_t order[NTASKS], handed = 0, k, length;
	unsigned char fails[NTASKS];
	uint32_t s = 777;
	int failed;
	const void *record;

	for (size_t i = 0; i < NTASKS; i++) {
		order[i] = i;
		fails[i] = xorshift32(&s) % 5 == 0;
	}
	for (size_t i = NTASKS - 1; i > 0; i--) {
		size_t j = xorshift32(&s) % (i + 1);
		size_t tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	assert_int_equal(reorder_init(&r, NTASKS), 0);
	for (size_t i = 0; i < NTASKS; i++) {
		if (fails[order[i]])
			assert_int_equal(reorder_fail(&r, order[i], "x", 1), 0);
		else
			put_record(&r, order[i]);
		while (reorder_next(&r, &k, &failed, &record, &length) == 1) {
			assert_int_equal(k, handed);
			assert_int_equal(failed, fails[k]);
			if (!failed)
				check_record(k, record, length);
			handed++;
		}
	}
	assert_int_equal(handed, NTASKS);
	assert_true(reorder_complete(&r));
	assert_int_equal(r.held, 0);
	assert_int_equal(r.held_bytes, 0);
	reorder_free(&r);
}

/* A second put or fail of a resolved task returns 1 and changes nothing. */
static void test_duplicates_ignored(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;
	const char other[] = "a different record";

	assert_int_equal(reorder_init(&r, 4), 0);
	put_record(&r, 2);
	assert_int_equal(reorder_put(&r, 2, other, sizeof other), 1);
	assert_int_equal(reorder_fail(&r, 2, "x", 1), 1);
	assert_int_equal(reorder_state(&r, 2), REORDER_READY);
	assert_int_equal(reorder_fail(&r, 1, "x", 1), 0);
	assert_int_equal(reorder_fail(&r, 1, "x", 1), 1);
	assert_int_equal(reorder_put(&r, 1, other, sizeof other), 1);
	assert_int_equal(reorder_state(&r, 1), REORDER_FAILED);
	assert_int_equal(r.held, 2);
	assert_int_equal(r.held_bytes, record_length(2) + 1);

	put_record(&r, 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 0);
	/* already handed out: also ignored */
	assert_int_equal(reorder_put(&r, 0, other, sizeof other), 1);
	assert_int_equal(reorder_fail(&r, 0, "x", 1), 1);
	assert_int_equal(reorder_state(&r, 0), REORDER_DONE);

	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 1);
	assert_true(failed);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 2);
	assert_false(failed);
	check_record(2, record, length); /* the first record, not `other` */
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	assert_int_equal(r.held, 0);
	assert_int_equal(r.held_bytes, 0);
	reorder_free(&r);
}

static void test_zero_length_records(void **state)
{
	(void)state;
	struct reorder r;
	size_t k = 99, length = 99;
	int failed = 1;
	const void *record;

	assert_int_equal(reorder_init(&r, 3), 0);
	assert_int_equal(reorder_put(&r, 1, NULL, 0), 0);
	assert_int_equal(reorder_state(&r, 1), REORDER_READY);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.held_bytes, 0);
	assert_int_equal(reorder_put(&r, 0, "", 0), 0);
	assert_int_equal(reorder_put(&r, 2, "abc", 3), 0);
	assert_int_equal(r.held_bytes, 3);
	for (size_t t = 0; t < 2; t++) {
		assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
		assert_int_equal(k, t);
		assert_false(failed);
		assert_int_equal(length, 0);
	}
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 2);
	assert_int_equal(length, 3);
	assert_memory_equal(record, "abc", 3);
	assert_true(reorder_complete(&r));
	reorder_free(&r);
}

/* No tasks: complete from the start, nothing to hand out. */
static void test_zero_tasks(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 0), 0);
	assert_true(reorder_complete(&r));
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	assert_int_equal(r.held, 0);
	reorder_free(&r);
}

/* skip_next resolves the next task without a record, as the batch does for
 * a result that arrives in order; later results then flow on. */
static void test_skip_next(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 5), 0);
	put_record(&r, 1);
	put_record(&r, 3);
	reorder_skip_next(&r); /* task 0, merged by the caller */
	assert_int_equal(reorder_state(&r, 0), REORDER_DONE);
	assert_int_equal(r.next, 1);
	assert_int_equal(r.held, 2);
	assert_int_equal(reorder_put(&r, 0, "late", 4), 1);
	assert_int_equal(reorder_fail(&r, 0, "x", 1), 1);

	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 1);
	check_record(1, record, length);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	reorder_skip_next(&r); /* task 2 */
	assert_int_equal(reorder_state(&r, 2), REORDER_DONE);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 3);
	check_record(3, record, length);
	assert_int_equal(r.held, 0);
	assert_int_equal(r.held_bytes, 0);
	assert_false(reorder_complete(&r));
	reorder_skip_next(&r); /* task 4, the last */
	assert_true(reorder_complete(&r));
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	reorder_free(&r);
}

/* Every task skipped in turn: the serial executor's path. */
static void test_skip_all(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, NTASKS), 0);
	for (size_t t = 0; t < NTASKS; t++) {
		assert_false(reorder_complete(&r));
		assert_int_equal(reorder_state(&r, t), REORDER_WAITING);
		reorder_skip_next(&r);
		assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	}
	assert_true(reorder_complete(&r));
	assert_int_equal(r.held, 0);
	reorder_free(&r);
}

/* reorder_free releases records still held and the last one handed out;
 * valgrind checks nothing leaks. */
static void test_free_with_records_held(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 50), 0);
	for (size_t t = 49; t >= 5; t--)
		put_record(&r, t);
	assert_int_equal(reorder_fail(&r, 20, "x", 1), 1);
	assert_int_equal(r.held, 45);
	reorder_free(&r);
	assert_null(r.slots);
	reorder_free(&r); /* twice is harmless */

	/* with one record handed out and not yet released */
	assert_int_equal(reorder_init(&r, 10), 0);
	put_record(&r, 0);
	put_record(&r, 7);
	put_record(&r, 8);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 0);
	reorder_free(&r);
}

/* Excluded tasks (--tasks, --shard) are passed over silently; a failure
 * hands out its message. */
static void test_excluded_and_messages(void **state)
{
	(void)state;
	struct reorder r;
	size_t k, length;
	int failed;
	const void *record;

	assert_int_equal(reorder_init(&r, 5), 0);
	reorder_exclude(&r, 0);
	reorder_exclude(&r, 2);
	reorder_exclude(&r, 4);
	assert_int_equal(reorder_state(&r, 2), REORDER_EXCLUDED);
	assert_int_equal(reorder_put(&r, 2, "no", 2), 1);
	assert_false(reorder_complete(&r));
	assert_int_equal(reorder_fail(&r, 3, "boom", 4), 0);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	put_record(&r, 1);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 1);
	assert_false(failed);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 1);
	assert_int_equal(k, 3);
	assert_true(failed);
	assert_int_equal(length, 4);
	assert_memory_equal(record, "boom", 4);
	assert_int_equal(reorder_next(&r, &k, &failed, &record, &length), 0);
	assert_true(reorder_complete(&r));
	reorder_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_reverse_order),
		cmocka_unit_test(test_random_permutation),
		cmocka_unit_test(test_reverse_holds_until_first),
		cmocka_unit_test(test_failed_skipped_in_order),
		cmocka_unit_test(test_excluded_and_messages),
		cmocka_unit_test(test_random_mix_with_failures),
		cmocka_unit_test(test_duplicates_ignored),
		cmocka_unit_test(test_zero_length_records),
		cmocka_unit_test(test_zero_tasks),
		cmocka_unit_test(test_skip_next),
		cmocka_unit_test(test_skip_all),
		cmocka_unit_test(test_free_with_records_held),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
