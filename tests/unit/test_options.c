/*
 * test_options.c - unit tests for cowrun_parse_options (runner/workload/options.c,
 * declared in include/cowrun.h) and options_want_help: every option type,
 * both value forms, bounds, bad numbers, unknown options, missing values,
 * stray arguments.  Rejections print a line on stderr; one test captures
 * it to check it names the option.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cowrun.h"
#include "workload/options.h"

struct config {
	long long count;   /* INT 1..100 */
	long long offset;  /* INT -50..50 */
	double ratio;      /* DOUBLE 0..1 */
	double scale;      /* DOUBLE -1e6..1e6 */
	const char *name;  /* STRING */
	int verbose;       /* FLAG */
	int dry_run;       /* FLAG */
};

static const struct cowrun_option options[] = {
	{ "count", COWRUN_OPT_INT, offsetof(struct config, count), 1, 100, "N", "how many" },
	{ "offset", COWRUN_OPT_INT, offsetof(struct config, offset), -50, 50, "N", "shift" },
	{ "ratio", COWRUN_OPT_DOUBLE, offsetof(struct config, ratio), 0, 1, "R", "a fraction" },
	{ "scale", COWRUN_OPT_DOUBLE, offsetof(struct config, scale), -1e6, 1e6, "X", "factor" },
	{ "name", COWRUN_OPT_STRING, offsetof(struct config, name), 0, 0, "NAME", "a name" },
	{ "verbose", COWRUN_OPT_FLAG, offsetof(struct config, verbose), 0, 0, NULL, "talk" },
	{ "dry-run", COWRUN_OPT_FLAG, offsetof(struct config, dry_run), 0, 0, NULL, "pretend" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

static const struct config defaults = {
	.count = 10, .offset = 0, .ratio = 0.5, .scale = 1.0,
	.name = "default", .verbose = 0, .dry_run = 0,
};

/* Parse a NULL-terminated list of arguments (after the workload name) into
 * a fresh copy of the defaults.  The argv array is static so string
 * values (which point into it) stay valid for the test's checks. */
static char *argv_store[32];

static int parse(struct config *c, const char *first, ...)
{
	va_list ap;
	int argc = 0;

	argv_store[argc++] = (char *)"testload";
	va_start(ap, first);
	for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
		assert_true(argc < 31);
		argv_store[argc++] = (char *)a;
	}
	va_end(ap);
	argv_store[argc] = NULL;
	*c = defaults;
	return cowrun_parse_options(argc, argv_store, options, c);
}

/* The config is unchanged from the defaults. */
static void assert_defaults(const struct config *c)
{
	assert_int_equal(c->count, defaults.count);
	assert_int_equal(c->offset, defaults.offset);
	assert_true(c->ratio == defaults.ratio);
	assert_true(c->scale == defaults.scale);
	assert_ptr_equal(c->name, defaults.name);
	assert_int_equal(c->verbose, 0);
	assert_int_equal(c->dry_run, 0);
}

/* ---- accepted ---- */

static void test_no_arguments_keeps_defaults(void **state)
{
	(void)state;
	struct config c;
	assert_int_equal(parse(&c, NULL), 0);
	assert_defaults(&c);
}

static void test_int_both_forms(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--count=42", NULL), 0);
	assert_int_equal(c.count, 42);
	assert_int_equal(parse(&c, "--count", "43", NULL), 0);
	assert_int_equal(c.count, 43);
	assert_int_equal(parse(&c, "--offset", "-7", NULL), 0); /* a value may start with '-' */
	assert_int_equal(c.offset, -7);
	assert_int_equal(parse(&c, "--offset=-50", NULL), 0);
	assert_int_equal(c.offset, -50);
	assert_int_equal(c.count, defaults.count);
}

static void test_int_bounds_inclusive(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--count=1", NULL), 0);
	assert_int_equal(c.count, 1);
	assert_int_equal(parse(&c, "--count=100", NULL), 0);
	assert_int_equal(c.count, 100);
	assert_int_equal(parse(&c, "--offset", "50", NULL), 0);
	assert_int_equal(c.offset, 50);
}

static void test_double_both_forms(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--ratio=0.25", NULL), 0);
	assert_true(c.ratio == 0.25);
	assert_int_equal(parse(&c, "--ratio", "0.75", NULL), 0);
	assert_true(c.ratio == 0.75);
	assert_int_equal(parse(&c, "--ratio=0", NULL), 0);
	assert_true(c.ratio == 0.0);
	assert_int_equal(parse(&c, "--ratio=1", NULL), 0);
	assert_true(c.ratio == 1.0);
	assert_int_equal(parse(&c, "--scale", "-2.5e3", NULL), 0);
	assert_true(c.scale == -2500.0);
	assert_int_equal(parse(&c, "--scale=1e6", NULL), 0);
	assert_true(c.scale == 1e6);
}

/* A string value points into argv itself. */
static void test_string_both_forms(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--name=north", NULL), 0);
	assert_string_equal(c.name, "north");
	assert_ptr_equal(c.name, argv_store[1] + strlen("--name="));
	assert_int_equal(parse(&c, "--name", "south", NULL), 0);
	assert_string_equal(c.name, "south");
	assert_ptr_equal(c.name, argv_store[2]);
	assert_int_equal(parse(&c, "--name=", NULL), 0);
	assert_string_equal(c.name, "");
	assert_int_equal(parse(&c, "--name=a=b", NULL), 0); /* split at the first '=' */
	assert_string_equal(c.name, "a=b");
	assert_int_equal(parse(&c, "--name", "--count", NULL), 0); /* separate value taken as is */
	assert_string_equal(c.name, "--count");
	assert_int_equal(c.count, defaults.count);
}

static void test_flags(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--verbose", NULL), 0);
	assert_int_equal(c.verbose, 1);
	assert_int_equal(c.dry_run, 0);
	assert_int_equal(parse(&c, "--dry-run", "--verbose", "--verbose", NULL), 0);
	assert_int_equal(c.verbose, 1);
	assert_int_equal(c.dry_run, 1);
	/* a flag takes no value: the next argument is not swallowed */
	assert_int_equal(parse(&c, "--verbose", "--count", "5", NULL), 0);
	assert_int_equal(c.verbose, 1);
	assert_int_equal(c.count, 5);
}

static void test_mixed_and_last_wins(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--count", "5", "--name=x", "--ratio", "0.1",
			       "--verbose", "--count=7", "--offset=-3", "--scale", "3", NULL), 0);
	assert_int_equal(c.count, 7);
	assert_string_equal(c.name, "x");
	assert_true(c.ratio == 0.1);
	assert_int_equal(c.verbose, 1);
	assert_int_equal(c.offset, -3);
	assert_true(c.scale == 3.0);
	assert_int_equal(c.dry_run, 0);
}

/* A lone "--" at the end ends the options and is accepted. */
static void test_double_dash_at_end(void **state)
{
	(void)state;
	struct config c;

	assert_int_equal(parse(&c, "--count=3", "--", NULL), 0);
	assert_int_equal(c.count, 3);
}

/* ---- rejected ---- */

static void expect_rejected(const char *a, const char *b, const char *c3)
{
	struct config c;
	int rc = parse(&c, a, b, c3, NULL);

	if (rc != -1)
		fail_msg("%s %s %s: returned %d, want -1", a, b ? b : "", c3 ? c3 : "", rc);
}

static void test_int_out_of_range(void **state)
{
	(void)state;
	struct config c;

	expect_rejected("--count=0", NULL, NULL);
	expect_rejected("--count=101", NULL, NULL);
	expect_rejected("--count", "-1", NULL);
	expect_rejected("--count", "1000", NULL);
	expect_rejected("--offset=-51", NULL, NULL);
	expect_rejected("--offset=51", NULL, NULL);
	expect_rejected("--count=99999999999999999999", NULL, NULL); /* overflows long long */
	expect_rejected("--count=-99999999999999999999", NULL, NULL);
	/* the field is left alone on a rejected value */
	assert_int_equal(parse(&c, "--count=101", NULL), -1);
	assert_int_equal(c.count, defaults.count);
}

static void test_int_not_a_number(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"--count=abc", "--count=", "--count=5x", "--count=1.5", "--count=0x10",
		"--count=1e1", "--count=--5", "--count=5 ",
	};
	struct config c;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_rejected(bad[i], NULL, NULL);
	expect_rejected("--count", "ten", NULL);
	expect_rejected("--count", "", NULL);
	assert_int_equal(parse(&c, "--count=12abc", NULL), -1);
	assert_int_equal(c.count, defaults.count);
}

static void test_double_out_of_range(void **state)
{
	(void)state;
	struct config c;

	expect_rejected("--ratio=-0.1", NULL, NULL);
	expect_rejected("--ratio=1.0001", NULL, NULL);
	expect_rejected("--ratio", "2", NULL);
	expect_rejected("--scale=1000001", NULL, NULL);
	expect_rejected("--scale=-1e7", NULL, NULL);
	expect_rejected("--scale=1e400", NULL, NULL); /* overflows double */
	assert_int_equal(parse(&c, "--ratio=5", NULL), -1);
	assert_true(c.ratio == defaults.ratio);
}

static void test_double_not_a_number(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"--ratio=abc", "--ratio=", "--ratio=0.5x", "--ratio=nan", "--ratio=inf",
		"--scale=-inf", "--ratio=0.5.1", "--ratio=,5",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_rejected(bad[i], NULL, NULL);
	expect_rejected("--ratio", "half", NULL);
}

static void test_flag_with_value_rejected(void **state)
{
	(void)state;
	struct config c;

	expect_rejected("--verbose=1", NULL, NULL);
	expect_rejected("--verbose=", NULL, NULL);
	assert_int_equal(parse(&c, "--verbose=yes", NULL), -1);
	assert_int_equal(c.verbose, 0);
}

static void test_unknown_option(void **state)
{
	(void)state;
	expect_rejected("--nope", NULL, NULL);
	expect_rejected("--nope=3", NULL, NULL);
	expect_rejected("--coun", "5", NULL);     /* no prefix matching */
	expect_rejected("--counts", "5", NULL);
	expect_rejected("--Count", "5", NULL);    /* case matters */
	expect_rejected("--=5", NULL, NULL);
	expect_rejected("--help", NULL, NULL);    /* help is options_want_help's */
	expect_rejected("--count", "5", "--bogus");
}

static void test_missing_value(void **state)
{
	(void)state;
	expect_rejected("--count", NULL, NULL);
	expect_rejected("--ratio", NULL, NULL);
	expect_rejected("--name", NULL, NULL);
	expect_rejected("--verbose", "--count", NULL);
}

static void test_stray_argument(void **state)
{
	(void)state;
	expect_rejected("extra", NULL, NULL);
	expect_rejected("--count", "5", "extra");
	expect_rejected("-c", "5", NULL);
	expect_rejected("-", NULL, NULL);
	expect_rejected("-h", NULL, NULL);
	expect_rejected("--", "extra", NULL);
	expect_rejected("--", "--count=5", NULL);
	expect_rejected("--verbose", "--", "x");
}

/* No option table: nothing is an option, no arguments is fine. */
static void test_null_table(void **state)
{
	(void)state;
	char *argv_none[] = { (char *)"w", NULL };
	char *argv_some[] = { (char *)"w", (char *)"--count=1", NULL };
	int dummy = 0;

	assert_int_equal(cowrun_parse_options(1, argv_none, NULL, &dummy), 0);
	assert_int_equal(cowrun_parse_options(2, argv_some, NULL, &dummy), -1);
	assert_int_equal(dummy, 0);
}

/* The rejection message goes to stderr, one line, naming the option. */
static void test_message_names_option(void **state)
{
	(void)state;
	struct config c;
	char text[512] = "";
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	int rc_range = parse(&c, "--count=500", NULL);
	fflush(stderr);
	long after_first = ftell(tmp);
	int rc_nan = parse(&c, "--ratio", "abc", NULL);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	size_t n = fread(text, 1, sizeof text - 1, tmp);
	text[n] = '\0';
	fclose(tmp);

	assert_int_equal(rc_range, -1);
	assert_int_equal(rc_nan, -1);
	assert_true(after_first > 0);
	/* first message: one line about --count being out of range */
	char *nl = strchr(text, '\n');
	assert_non_null(nl);
	assert_int_equal(nl - text + 1, after_first);
	*nl = '\0';
	assert_non_null(strstr(text, "--count"));
	assert_non_null(strstr(text, "500"));
	assert_non_null(strstr(text, "range"));
	/* second: --ratio, not a number */
	char *second = nl + 1;
	assert_non_null(strstr(second, "--ratio"));
	assert_non_null(strstr(second, "abc"));
	assert_non_null(strstr(second, "not a number"));
}

/* ---- options_want_help ---- */

static int want_help(const char *first, ...)
{
	va_list ap;
	char *argv[16];
	int argc = 0;

	argv[argc++] = (char *)"testload";
	va_start(ap, first);
	for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
		assert_true(argc < 15);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;
	return options_want_help(argc, argv);
}

static void test_want_help(void **state)
{
	(void)state;
	assert_true(want_help("--help", NULL));
	assert_true(want_help("-h", NULL));
	assert_true(want_help("--count", "5", "--help", NULL));
	assert_true(want_help("--count=5", "-h", "--ratio", "x", NULL));
	assert_false(want_help(NULL));
	assert_false(want_help("--count", "5", NULL));
	assert_false(want_help("--helpme", NULL));
	assert_false(want_help("--help=1", NULL));
	assert_false(want_help("-help", NULL));
	assert_false(want_help("help", NULL));
	assert_false(want_help("--", "--help", NULL));
	assert_false(want_help("--count=5", "--", "-h", NULL));

	/* argv[0] is the workload name, never an option */
	char *argv0_only[] = { (char *)"--help", NULL };
	assert_false(options_want_help(1, argv0_only));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_arguments_keeps_defaults),
		cmocka_unit_test(test_int_both_forms),
		cmocka_unit_test(test_int_bounds_inclusive),
		cmocka_unit_test(test_double_both_forms),
		cmocka_unit_test(test_string_both_forms),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_mixed_and_last_wins),
		cmocka_unit_test(test_double_dash_at_end),
		cmocka_unit_test(test_int_out_of_range),
		cmocka_unit_test(test_int_not_a_number),
		cmocka_unit_test(test_double_out_of_range),
		cmocka_unit_test(test_double_not_a_number),
		cmocka_unit_test(test_flag_with_value_rejected),
		cmocka_unit_test(test_unknown_option),
		cmocka_unit_test(test_missing_value),
		cmocka_unit_test(test_stray_argument),
		cmocka_unit_test(test_null_table),
		cmocka_unit_test(test_message_names_option),
		cmocka_unit_test(test_want_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
