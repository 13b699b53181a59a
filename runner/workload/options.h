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
 * its own.  Returns 0, or -1 after cowrun_parse_options()' one line.
 */
int options_check(const struct cowrun_workload *w, int argc, char **argv);

#endif
