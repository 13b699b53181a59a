/*
 * test_jobs.c - unit tests for runner/engine/jobs.c: parsing every -j form,
 * resolving it on several CPU counts, clamping, and rejected inputs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "engine/jobs.h"

#define MANY_TASKS ((size_t)100000)

static struct jobs_spec parse_ok(const char *text)
{
	struct jobs_spec spec;
	const char *why = NULL;

	memset(&spec, 0xa5, sizeof spec);
	if (jobs_parse(text, &spec, &why) != 0)
		fail_msg("jobs_parse(\"%s\") failed: %s", text, why ? why : "(no reason)");
	return spec;
}

static void expect_parse(const char *text, enum jobs_kind kind, long long value)
{
	struct jobs_spec spec = parse_ok(text);

	if (spec.kind != kind || spec.value != value)
		fail_msg("jobs_parse(\"%s\"): kind %d value %lld, want kind %d value %lld",
			 text, (int)spec.kind, spec.value, (int)kind, value);
}

/* Resolve `text` on 2, 8 and 16 CPUs with plenty of tasks. */
static void expect_on_2_8_16(const char *text, size_t on2, size_t on8, size_t on16)
{
	struct jobs_spec spec = parse_ok(text);
	const int cpus[] = { 2, 8, 16 };
	const size_t want[] = { on2, on8, on16 };

	for (int i = 0; i < 3; i++) {
		size_t got = jobs_resolve(&spec, cpus[i], MANY_TASKS);
		if (got != want[i])
			fail_msg("-j %s on %d CPUs: %zu workers, want %zu", text, cpus[i], got, want[i]);
	}
}

static size_t resolve(const char *text, int cpus, size_t ntasks)
{
	struct jobs_spec spec = parse_ok(text);
	return jobs_resolve(&spec, cpus, ntasks);
}

/* ---- parsing ---- */

static void test_parse_absolute(void **state)
{
	(void)state;
	expect_parse("1", JOBS_ABSOLUTE, 1);
	expect_parse("4", JOBS_ABSOLUTE, 4);
	expect_parse("64", JOBS_ABSOLUTE, 64);
	expect_parse("007", JOBS_ABSOLUTE, 7);
	expect_parse("1000000", JOBS_ABSOLUTE, 1000000);
}

static void test_parse_percent(void **state)
{
	(void)state;
	expect_parse("50%", JOBS_PERCENT, 50);
	expect_parse("100%", JOBS_PERCENT, 100);
	expect_parse("1%", JOBS_PERCENT, 1);
	expect_parse("250%", JOBS_PERCENT, 250);
}

static void test_parse_plus_minus(void **state)
{
	(void)state;
	expect_parse("+2", JOBS_PLUS, 2);
	expect_parse("+0", JOBS_PLUS, 0);
	expect_parse("-1", JOBS_MINUS, 1);
	expect_parse("-0", JOBS_MINUS, 0);
	expect_parse("-15", JOBS_MINUS, 15);
}

static void test_parse_zero_is_per_task(void **state)
{
	(void)state;
	expect_parse("0", JOBS_PER_TASK, 0);
	expect_parse("000", JOBS_PER_TASK, 0);
}

/* ---- resolving ---- */

static void test_resolve_absolute_ignores_cpus(void **state)
{
	(void)state;
	expect_on_2_8_16("1", 1, 1, 1);
	expect_on_2_8_16("4", 4, 4, 4);
	expect_on_2_8_16("37", 37, 37, 37);
}

static void test_resolve_percent(void **state)
{
	(void)state;
	expect_on_2_8_16("100%", 2, 8, 16);
	expect_on_2_8_16("50%", 1, 4, 8);
	expect_on_2_8_16("25%", 1, 2, 4);
	expect_on_2_8_16("200%", 4, 16, 32);
	expect_on_2_8_16("150%", 3, 12, 24);
	/* rounds down, but never to no worker at all */
	expect_on_2_8_16("10%", 1, 1, 1);
	expect_on_2_8_16("1%", 1, 1, 1);
	expect_on_2_8_16("30%", 1, 2, 4);
}

static void test_resolve_plus(void **state)
{
	(void)state;
	expect_on_2_8_16("+0", 2, 8, 16);
	expect_on_2_8_16("+1", 3, 9, 17);
	expect_on_2_8_16("+8", 10, 16, 24);
}

static void test_resolve_minus(void **state)
{
	(void)state;
	expect_on_2_8_16("-0", 2, 8, 16);
	expect_on_2_8_16("-1", 1, 7, 15);
	expect_on_2_8_16("-2", 1, 6, 14);  /* 2 - 2 = 0: at least 1 */
	expect_on_2_8_16("-8", 1, 1, 8);
	expect_on_2_8_16("-100", 1, 1, 1);
}

static void test_resolve_per_task(void **state)
{
	(void)state;
	assert_int_equal(resolve("0", 2, 1), 1);
	assert_int_equal(resolve("0", 2, 7), 7);
	assert_int_equal(resolve("0", 16, 500), 500);
	assert_int_equal(resolve("0", 8, MANY_TASKS), MANY_TASKS);
}

/* Never more workers than tasks. */
static void test_resolve_clamps_to_ntasks(void **state)
{
	(void)state;
	assert_int_equal(resolve("16", 8, 3), 3);
	assert_int_equal(resolve("16", 8, 16), 16);
	assert_int_equal(resolve("16", 8, 17), 16);
	assert_int_equal(resolve("+2", 16, 10), 10);
	assert_int_equal(resolve("200%", 16, 20), 20);
	assert_int_equal(resolve("100%", 16, 1), 1);
	assert_int_equal(resolve("1000000", 2, 5), 5);
}

/* Never fewer than one, unless there is no task at all. */
static void test_resolve_at_least_one(void **state)
{
	(void)state;
	assert_int_equal(resolve("-5", 2, 10), 1);
	assert_int_equal(resolve("-5", 1, 1), 1);
	assert_int_equal(resolve("1%", 16, 10), 1);
	assert_int_equal(resolve("-1", 1, 10), 1);
	assert_int_equal(resolve("1", 1, 1), 1);
	/* no tasks: no workers */
	assert_int_equal(resolve("4", 8, 0), 0);
	assert_int_equal(resolve("0", 8, 0), 0);
	assert_int_equal(resolve("-20", 8, 0), 0);
	assert_int_equal(resolve("+2", 8, 0), 0);
}

/* The largest accepted values do not overflow. */
static void test_resolve_large_values(void **state)
{
	(void)state;
	assert_int_equal(resolve("+1000000", 4096, (size_t)-1), 1004096);
	assert_int_equal(resolve("1000000%", 4096, (size_t)-1), (size_t)40960000);
	assert_int_equal(resolve("-1000000", 4096, (size_t)-1), 1);
	assert_int_equal(resolve("1000000", 4096, (size_t)-1), 1000000);
}

/* ---- rejected inputs ---- */

static void expect_rejected(const char *text)
{
	struct jobs_spec spec;
	const char *why = NULL;
	int rc = jobs_parse(text, &spec, &why);

	if (rc != -1)
		fail_msg("jobs_parse(\"%s\") returned %d, want -1", text, rc);
	if (why == NULL || why[0] == '\0')
		fail_msg("jobs_parse(\"%s\") gave no reason", text);
}

static void test_rejected(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "x", "1.5", "--1", "+", "%", "0%", "5%%", "1x", " 2",
		"99999999999999", "-", "++1", "+-1", "-+1", "2 ", "%5", "+5%",
		"-5%", "5%x", "0x10", "1e3", "1000001", "+1000001", "1000001%",
		"00%", "4\n", "1,5",
		"0000000000000000000000000000000000000001", /* longer than 31 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_rejected(bad[i]);
}

/* The reasons distinguish the cases a user can fix differently. */
static void test_rejected_reasons(void **state)
{
	(void)state;
	struct jobs_spec spec;
	const char *why_syntax = NULL, *why_zero = NULL, *why_range = NULL;

	assert_int_equal(jobs_parse("x", &spec, &why_syntax), -1);
	assert_int_equal(jobs_parse("0%", &spec, &why_zero), -1);
	assert_int_equal(jobs_parse("99999999999999", &spec, &why_range), -1);
	assert_non_null(why_syntax);
	assert_non_null(why_zero);
	assert_non_null(why_range);
	assert_string_not_equal(why_syntax, why_zero);
	assert_string_not_equal(why_zero, why_range);
	assert_non_null(strstr(why_syntax, "N%"));
	assert_non_null(strstr(why_range, "range"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_absolute),
		cmocka_unit_test(test_parse_percent),
		cmocka_unit_test(test_parse_plus_minus),
		cmocka_unit_test(test_parse_zero_is_per_task),
		cmocka_unit_test(test_resolve_absolute_ignores_cpus),
		cmocka_unit_test(test_resolve_percent),
		cmocka_unit_test(test_resolve_plus),
		cmocka_unit_test(test_resolve_minus),
		cmocka_unit_test(test_resolve_per_task),
		cmocka_unit_test(test_resolve_clamps_to_ntasks),
		cmocka_unit_test(test_resolve_at_least_one),
		cmocka_unit_test(test_resolve_large_values),
		cmocka_unit_test(test_rejected),
		cmocka_unit_test(test_rejected_reasons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
