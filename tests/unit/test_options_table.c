/*
 * test_options_table.c - unit tests for runner/run/options_table.c: no two
 * options share a key, a name where they are given, or a request field;
 * every option with a field, given to submit, reaches a served batch's
 * settings (submit's parse -> the request on the wire -> the settings as
 * the server applies them), and sets them as the same option on cowrun's
 * command line does; cowrun's, serve's and submit's --help list every
 * option of theirs.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/options_table.h"
#include "serve/proto.h"
#include "serve/serve.h"

/* A value for each option that takes one and has a field; an option
 * missing here fails the test: a new one needs a value. */
static const struct {
	const char *name, *value;
} samples[] = {
	{ "jobs", "3" }, { "outdir", "elsewhere" }, { "tasks", "1-2" }, { "shard", "1/2" },
	{ "save-results", "r.res" }, { "timeline", "t.csv" }, { "joblog", "j.log" },
	{ "report-filter", "gzip -n" }, { "report-to", "cat" }, { "report-suffix", ".gz" },
	{ "seed", "7" }, { "retries", "2" }, { "retry-delay", "1.5" }, { "halt", "now,fail=1" },
	{ "timeout", "5" }, { "tasks-per-worker", "2" }, { "stats", "s.csv" },
};

static const char *sample(const char *name)
{
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
		if (strcmp(samples[i].name, name) == 0)
			return samples[i].value;
	return NULL;
}

static void test_unique(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < runner_options_count; i++) {
		const struct runner_option *a = &runner_options[i];
		if (a->name == NULL) {
			assert_non_null(a->help);   /* a free-text row */
			continue;
		}
		assert_true(a->key != 0 && a->key != '?' && a->key != ':');
		assert_ptr_equal(option_by_key(a->key), a);
		for (size_t j = i + 1; j < runner_options_count; j++) {
			const struct runner_option *b = &runner_options[j];
			if (b->name == NULL)
				continue;
			assert_int_not_equal(a->key, b->key);
			if (a->flags & b->flags & (OPT_DIRECT | OPT_SUBMIT | OPT_SERVE))
				assert_string_not_equal(a->name, b->name);
			/* One field, one option; --resume and --resume-failed
			 * write PF_RESUME's two texts ("1", "2"), as released. */
			if (a->wire != PF_NONE && a->wire == b->wire) {
				assert_non_null(a->wire_value);
				assert_non_null(b->wire_value);
				assert_string_not_equal(a->wire_value, b->wire_value);
			}
		}
	}
}

/* Every field but PF_IN_OUTDIR is an option's, which submit takes, with
 * a parser; an option with an argument sends it, one without a text. */
static void test_fields_have_options(void **unused)
{
	(void)unused;
	for (int f = 0; f < PF_COUNT; f++) {
		int found = 0;
		for (size_t i = 0; i < runner_options_count; i++) {
			const struct runner_option *o = &runner_options[i];
			if (o->wire != f)
				continue;
			found++;
			assert_true(o->flags & OPT_SUBMIT);
			assert_non_null(o->set);
			assert_true((o->arg == OPT_NO_ARG) == (o->wire_value != NULL));
		}
		assert_int_equal(found, f == PF_IN_OUTDIR ? 0 : f == PF_RESUME ? 2 : 1);
	}
}

/* Settings compared as a whole, the record of once-only options aside. */
static int same_settings(struct run_config *a, struct run_config *b)
{
	a->seen = b->seen = 0;
	return memcmp(a, b, sizeof *a) == 0;
}

/* The argument vector of `cowrun submit` giving option o (and --joblog
 * where o needs it) into argv; returns argc. */
static int submit_argv(const struct runner_option *o, char **argv, char *opt, size_t size)
{
	int argc = 0;

	argv[argc++] = "submit";
	argv[argc++] = "--socket";
	argv[argc++] = "s.sock";
	if (o->wire == PF_RESUME) {
		argv[argc++] = "--joblog";
		argv[argc++] = "j.log";
	}
	snprintf(opt, size, "--%s", o->name);
	argv[argc++] = opt;
	if (o->arg != OPT_NO_ARG)
		argv[argc++] = (char *)sample(o->name);
	argv[argc] = NULL;
	return argc;
}

/* What option o, given to submit, sets on the server: the request
 * through the wire, applied over the defaults (*with), and the same
 * request without o's field (*without). */
static void served(const struct runner_option *o, struct proto_request *back,
		   struct run_config *with, struct run_config *without)
{
	static struct proto_request rq;
	static unsigned char buf[PROTO_MSG_MAX];
	char *argv[8], opt[64];
	const char *socket_path, *why = NULL;
	int argc = submit_argv(o, argv, opt, sizeof opt);

	assert_int_equal(submit_parse(argc, argv, &rq, &socket_path), 0);
	assert_string_equal(socket_path, "s.sock");
	assert_true(rq.present & (1u << o->wire));
	long len = proto_encode_request(&rq, buf, sizeof buf);
	assert_true(len > 0);
	assert_int_equal(proto_decode_request(buf, (size_t)len, back, &why), 0);
	run_config_init(with);
	assert_int_equal(proto_apply_request(with, back), 0);
	unsigned present = back->present;
	back->present &= ~(1u << o->wire);
	run_config_init(without);
	assert_int_equal(proto_apply_request(without, back), 0);
	back->present = present;
}

/* The same option on cowrun's command line (after --joblog where o needs
 * it), its values those of the request `back`. */
static void direct(const struct runner_option *o, const struct proto_request *back,
		   struct run_config *cfg)
{
	run_config_init(cfg);
	if (o->wire == PF_RESUME)
		assert_int_equal(run_config_set(cfg, 'J', back->field[PF_JOBLOG]), 0);
	assert_int_equal(run_config_set(cfg, o->key, o->wire_value ? NULL : back->field[o->wire]), 0);
}

static void test_submitted_option_reaches_served_config(void **unused)
{
	static struct run_config with[OPTIONS_MAX], without, cmdline;
	static struct proto_request back[OPTIONS_MAX];
	size_t n = 0;

	(void)unused;
	for (size_t i = 0; i < runner_options_count; i++) {
		const struct runner_option *o = &runner_options[i];
		if (o->name == NULL || o->wire == PF_NONE)
			continue;
		if (o->arg != OPT_NO_ARG && sample(o->name) == NULL)
			fail_msg("--%s has a field and no sample value here", o->name);
		served(o, &back[n], &with[n], &without);
		if (same_settings(&with[n], &without))
			fail_msg("--%s given to submit changes nothing in the served batch", o->name);
		direct(o, &back[n], &cmdline);
		if (!same_settings(&cmdline, &with[n]))
			fail_msg("--%s sets a served batch otherwise than cowrun's command line", o->name);
		n++;
	}
	assert_true(n >= PF_COUNT - 1);
	/* No two options set the same. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_false(same_settings(&with[i], &with[j]));
}

/* cowrun's and serve's --help list each of their options. */
static void test_help_lists_every_option(void **unused)
{
	static const unsigned scopes[] = { OPT_DIRECT, OPT_SERVE };
	char *text = NULL, name[64];
	size_t size = 0;

	(void)unused;
	for (size_t s = 0; s < 2; s++) {
		FILE *out = open_memstream(&text, &size);
		assert_non_null(out);
		options_help(out, scopes[s]);
		fclose(out);
		for (size_t i = 0; i < runner_options_count; i++) {
			const struct runner_option *o = &runner_options[i];
			if (o->name == NULL || !(o->flags & scopes[s]))
				continue;
			snprintf(name, sizeof name, "--%s%s", o->name, o->arg == OPT_NO_ARG ? "" : " ");
			if (o->arg == OPT_OPTIONAL)
				snprintf(name, sizeof name, "--%s[=", o->name);
			if (strstr(text, name) == NULL)
				fail_msg("--help (scope %u) does not list --%s", scopes[s], o->name);
		}
		free(text);
		text = NULL;
	}
}

/* submit --help lists each of submit's options (--help aside). */
static void test_submit_help_lists_every_option(void **unused)
{
	char path[] = "/tmp/test_options_table.XXXXXX", text[4096], name[64];
	char *argv[] = { "submit", "--help", NULL };
	const char *socket_path;
	static struct proto_request rq;
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO);

	(void)unused;
	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	int rc = submit_parse(2, argv, &rq, &socket_path);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	assert_int_equal(rc, -1);
	ssize_t n = pread(fd, text, sizeof text - 1, 0);
	close(fd);
	assert_true(n > 0);
	text[n] = '\0';
	for (size_t i = 0; i < runner_options_count; i++) {
		const struct runner_option *o = &runner_options[i];
		if (o->name == NULL || !(o->flags & OPT_SUBMIT) || o->key == 'h')
			continue;
		snprintf(name, sizeof name, "--%s%s", o->name, o->arg == OPT_NO_ARG ? "" : " ");
		if (strstr(text, name) == NULL)
			fail_msg("submit --help does not list --%s", o->name);
	}
}

/* A getopt table built from the table: cowrun's short options as today. */
static void test_getopt_table(void **unused)
{
	static struct option lo[OPTIONS_MAX];
	char optstring[OPTIONS_MAX];

	(void)unused;
	options_getopt(OPT_DIRECT, lo, optstring, sizeof optstring);
	assert_string_equal(optstring, "+:j:m:o:vhV");
	options_getopt(OPT_SUBMIT, lo, optstring, sizeof optstring);
	assert_string_equal(optstring, "+:j:o:h");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unique),
		cmocka_unit_test(test_fields_have_options),
		cmocka_unit_test(test_submitted_option_reaches_served_config),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_submit_help_lists_every_option),
		cmocka_unit_test(test_getopt_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
