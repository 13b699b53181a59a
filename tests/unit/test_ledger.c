/*
 * test_ledger.c - unit tests for runner/serve/ledger.c, the server-wide
 * count of workers: grants in arrival order across generations, never
 * past the cap; what is given back is granted again; a withdrawn want is
 * never granted; a generation that goes frees what it held; workers
 * taken at once only when free and no batch waits before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "serve/ledger.h"

static void expect_grant(int gen, uint32_t ticket, size_t workers)
{
	struct ledger_grant g;

	assert_int_equal(ledger_next(&g), 1);
	assert_int_equal(g.gen, gen);
	assert_int_equal(g.ticket, ticket);
	assert_int_equal(g.workers, workers);
}

static void expect_none(void)
{
	struct ledger_grant g;

	assert_int_equal(ledger_next(&g), 0);
}

static void test_cap_across_generations(void **unused)
{
	(void)unused;
	ledger_init(3);
	assert_int_equal(ledger_want(0, 1, 2), 0);
	assert_int_equal(ledger_want(1, 1, 2), 0);   /* another generation */
	assert_int_equal(ledger_want(0, 2, 5), 0);
	expect_grant(0, 1, 2);
	expect_grant(1, 1, 1);                       /* what is left of the cap */
	expect_none();
	assert_int_equal(ledger_in_use(), 3);
	assert_int_equal(ledger_waiting(), 1);
	ledger_free(0, 2);
	expect_grant(0, 2, 2);                       /* in order, what is free */
	expect_none();
	assert_int_equal(ledger_in_use(), 3);
	ledger_free(1, 1);
	ledger_free(0, 2);
	assert_int_equal(ledger_in_use(), 0);
	assert_int_equal(ledger_waiting(), 0);
}

static void test_withdraw_and_forget(void **unused)
{
	(void)unused;
	ledger_init(2);
	assert_int_equal(ledger_want(2, 7, 2), 0);
	assert_int_equal(ledger_want(2, 8, 1), 0);
	assert_int_equal(ledger_want(3, 9, 1), 0);
	expect_grant(2, 7, 2);
	assert_int_equal(ledger_withdraw(2, 8), 1);
	assert_int_equal(ledger_withdraw(2, 8), 0);
	assert_int_equal(ledger_withdraw(2, 7), 0);  /* granted already */
	ledger_free(2, 99);                          /* clamped to what it holds */
	assert_int_equal(ledger_in_use(), 0);
	assert_int_equal(ledger_want(2, 10, 1), 0);
	expect_grant(3, 9, 1);
	expect_grant(2, 10, 1);
	ledger_forget(2);                            /* generation 2 is gone */
	assert_int_equal(ledger_in_use(), 1);
	assert_int_equal(ledger_want(3, 11, 0), 0);  /* a want is at least 1 */
	expect_grant(3, 11, 1);
	assert_int_equal(ledger_want(-1, 1, 1), -1);
}

/* Taken at once: only what is free, never before a batch that waits,
 * and held like a grant (given back the same way). */
static void test_take_now(void **unused)
{
	(void)unused;
	ledger_init(3);
	assert_int_equal(ledger_take_now(0, 2), 2);
	assert_int_equal(ledger_take_now(1, 5), 1);   /* what is left */
	assert_int_equal(ledger_take_now(0, 1), 0);   /* nothing free */
	assert_int_equal(ledger_in_use(), 3);
	assert_int_equal(ledger_want(0, 7, 2), 0);
	ledger_free(1, 1);
	assert_int_equal(ledger_take_now(1, 1), 0);   /* batch 7 waits first */
	expect_grant(0, 7, 1);
	ledger_forget(0);                             /* gen 0's 2 + 1 freed */
	assert_int_equal(ledger_in_use(), 0);
	assert_int_equal(ledger_take_now(1, 0), 0);   /* a batch that wants none */
	assert_int_equal(ledger_take_now(1, 3), 3);
	assert_int_equal(ledger_in_use(), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_across_generations),
		cmocka_unit_test(test_withdraw_and_forget),
		cmocka_unit_test(test_take_now),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
