/*
 * options.h - workload option tables: parsing (cowrun_parse_options, in
 * cowrun.h) and the help text printed for `cowrun WORKLOAD --help`.
 */
#ifndef COWRUN_OPTIONS_H
#define COWRUN_OPTIONS_H

#include "cowrun.h"

#include <stdio.h>

/* Print the workload's usage, description and options with defaults. */
void options_print_help(const struct cowrun_workload *w, FILE *out);

/* True if the workload arguments ask for help (--help or -h before any
 * "--"). */
int options_want_help(int argc, char **argv);

/*
 * --check-args: parse the workload's arguments against its option table
 * alone, as its setup would first, without running the setup.  A workload
 * without a table (options NULL) accepts anything here: its setup parses
 * its own; one that parses its own arguments (COWRUN_OWN_ARGV) has its
 * first, the script, checked readable.  Returns 0, or -1 after one line.
 */
int options_check(const struct cowrun_workload *w, int argc, char **argv);

/* Does the table declare an input (an entry of kind COWRUN_OPT_INPUT)?
 * One that does not has its STRING options' files guessed (cowrun.h). */
int options_declares_inputs(const struct cowrun_option *options);

/* The entry named `name` ("input" or "--input"), or NULL. */
const struct cowrun_option *options_find(const struct cowrun_option *options, const char *name);

/* One option of a workload's argv as cowrun_parse_options() reads it:
 * argv[first .. first+count), the table's entry (NULL: not an option of
 * the table, one argument) and its value (NULL: none; "--name=value" or
 * the next argument).  Borrowed from argv and the table. */
struct options_token {
	int first, count;
	const struct cowrun_option *option;
	const char *value;
};

/*
 * The token at argv[*i] (start with *i = 1: argv[0] is the workload's
 * name), *i moved past it.  Returns 1, or 0 at the end.  Lenient: what
 * the parser would refuse is simply a token without an entry, so the
 * runner can read arguments the setup will still check.
 */
int options_next(const struct cowrun_option *options, int argc, char **argv, int *i,
		 struct options_token *t);

#endif
