/*
 * jobs.h - the -j / --jobs argument, in the forms GNU Parallel accepts:
 *
 *   N     N workers               N%   N percent of the CPUs (at least 1)
 *   +N    CPUs plus N             -N   CPUs minus N (at least 1)
 *   0     one worker per task
 */
#ifndef COWRUN_JOBS_H
#define COWRUN_JOBS_H

#include <stddef.h>

enum jobs_kind { JOBS_ABSOLUTE, JOBS_PERCENT, JOBS_PLUS, JOBS_MINUS, JOBS_PER_TASK };

struct jobs_spec {
	enum jobs_kind kind;
	long long value;
};

/* Parse a -j argument.  Returns 0, or -1 with a reason in `why`. */
int jobs_parse(const char *text, struct jobs_spec *spec, const char **why);

/* The number of workers the spec means on `cpus` CPUs for `ntasks` tasks:
 * never more than ntasks (extra workers would have nothing to do), never
 * less than 1 (unless ntasks is 0). */
size_t jobs_resolve(const struct jobs_spec *spec, int cpus, size_t ntasks);

#endif
