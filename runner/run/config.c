/*
 * config.c - a run's settings, one option at a time (run_config_set) and
 * as a whole (run_config_check); config.h says what each key means.
 */
#include "config.h"
#include "os/command.h"
#include "os/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void run_config_init(struct run_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->jobs = (struct jobs_spec){ JOBS_PLUS, 0 };
	cfg->mode = MODE_FORK;
	cfg->outdir = "out";
}

static int parse_mode(const char *text, enum mode *mode)
{
	static const char *const names[] = { "fork", "serial", "omp" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(text, names[i]) == 0) {
			*mode = (enum mode)i;
			return 0;
		}
	return -1;
}

/* Options naming what to run or where a file goes: given twice, one would
 * be silently dropped, so it is an error.  Returns 0 or EXIT_USAGE. */
static int refuse_repeat(int key, struct run_config *cfg)
{
	static const char once[] = "TSRLJPWXedxs";
	static const char *const names[] = { "--tasks", "--shard", "--save-results",
					     "--timeline", "--joblog", "--stats", "--workload",
					     "--metrics", "--report-filter", "--report-to",
					     "--report-suffix", "--seed" };
	const char *at = strchr(once, key);

	if (key == 0 || at == NULL)
		return 0;
	unsigned bit = 1u << (at - once);
	if (cfg->seen & bit) {
		warnx_("%s given twice", names[at - once]);
		return EXIT_USAGE;
	}
	cfg->seen |= bit;
	return 0;
}

/* A size as GNU Parallel writes it: a number, then K, M, G, T (powers of
 * 1024) or k, m, g, t (powers of 1000), or nothing (bytes).  Returns 0 or
 * -1. */
static int parse_size(const char *text, size_t *bytes)
{
	static const char units[] = "KMGTkmgt";
	char *end;
	double v = strtod(text, &end), mult = 1;
	const char *u = *end ? strchr(units, *end) : NULL;

	if (end == text || v < 0 || (*end && (u == NULL || end[1] != '\0')))
		return -1;
	for (long n = u ? u - units : 0, i = 0; u && i <= n % 4; i++)
		mult *= n < 4 ? 1024.0 : 1000.0;
	if (v * mult > 9e18)
		return -1;
	*bytes = (size_t)(v * mult);
	return 0;
}

/* --seed N: a decimal number, 0 to 2^64 - 1 (all of a task seed's
 * range: a script may pass one to another program).  Returns 0 or -1. */
static int parse_seed(const char *text, uint64_t *seed)
{
	char *end;

	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*seed = (uint64_t)v;
	return 0;
}

/* --report-filter, --report-to: parsed now, so a bad one is refused
 * before any setup (the batch parses its own copy). */
static int set_report_command(const char **slot, const char *option, const char *arg)
{
	char why[256];
	struct command *c = command_parse(option, arg, why, sizeof why);

	if (c == NULL) {
		warnx_("%s", why);
		return EXIT_USAGE;
	}
	command_free(c);
	*slot = arg;
	return 0;
}

int run_config_set(struct run_config *cfg, int key, const char *arg)
{
	const char *why;

	if (refuse_repeat(key, cfg) != 0)
		return EXIT_USAGE;
	switch (key) {
	case 'j':
		if (jobs_parse(arg, &cfg->jobs, &why) == 0)
			return 0;
		warnx_("-j: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'm':
		if (parse_mode(arg, &cfg->mode) == 0)
			return 0;
		warnx_("--mode: unknown mode '%s' (fork, omp or serial)", arg);
		return EXIT_USAGE;
	case 'T':
		if (selection_check_list(arg, &why) == 0) {
			cfg->selection.list = arg;
			return 0;
		}
		warnx_("--tasks: bad list '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'S':
		if (selection_parse_shard(arg, &cfg->selection, &why) == 0)
			return 0;
		warnx_("--shard: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'y':
		if (parse_ll(arg, 0, 1000, &cfg->retries) == 0)
			return 0;
		warnx_("--retries: bad value '%s': expected a number 0-1000", arg);
		return EXIT_USAGE;
	case 'H':
		if (halt_parse(arg, &cfg->halt, &why) == 0)
			return 0;
		warnx_("--halt: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 't':
		if (parse_double(arg, 0.001, 1e7, &cfg->timeout_s) == 0)
			return 0;
		warnx_("--timeout: bad value '%s': expected seconds, 0.001 or more", arg);
		return EXIT_USAGE;
	case 'D':
		if (parse_double(arg, 0.001, 86400, &cfg->retry_delay_s) == 0)
			return 0;
		warnx_("--retry-delay: bad value '%s': expected seconds, 0.001 to 86400", arg);
		return EXIT_USAGE;
	case 'k':
		if (parse_ll(arg, 1, 1000000000, &cfg->tasks_per_worker) == 0)
			return 0;
		warnx_("--tasks-per-worker: bad value '%s': expected a number of tasks, 1 or more",
		       arg);
		return EXIT_USAGE;
	case 'K':
		if (parse_size(arg, &cfg->memfree) == 0 && cfg->memfree > 0)
			return 0;
		warnx_("--memfree: bad size '%s': expected a number with K, M, G or T "
		       "(1024s) or k, m, g, t (1000s)", arg);
		return EXIT_USAGE;
	case 'B':
		if (arg == NULL || strcmp(arg, "always") == 0) {
			cfg->bar = arg ? 2 : 1;
			return 0;
		}
		warnx_("--bar: bad value '%s': only --bar or --bar=always", arg);
		return EXIT_USAGE;
	case 'M':
		if (cfg->nmerge < MAX_MERGE_FILES) {
			cfg->merge_paths[cfg->nmerge++] = arg;
			return 0;
		}
		warnx_("--merge: more than %d files", MAX_MERGE_FILES);
		return EXIT_USAGE;
	case 'e':
	case 'd':
		return set_report_command(key == 'e' ? &cfg->report_filter : &cfg->report_to,
					  key == 'e' ? "--report-filter" : "--report-to", arg);
	case 'x':
		if (arg[0] != '\0' && strchr(arg, '/') == NULL && strlen(arg) < 64) {
			cfg->report_suffix = arg;
			return 0;
		}
		warnx_("--report-suffix: bad value '%s': a suffix of a file name, 1-63 bytes, no '/'",
		       arg);
		return EXIT_USAGE;
	case 's':
		if (parse_seed(arg, &cfg->seed) == 0) {
			cfg->seed_given = 1;
			return 0;
		}
		warnx_("--seed: bad value '%s': expected a number 0-18446744073709551615", arg);
		return EXIT_USAGE;
	case 'I':
		if (cfg->nnot_inputs < MAX_NOT_INPUTS && arg[0] != '\0') {
			cfg->not_inputs[cfg->nnot_inputs++] = arg;
			return 0;
		}
		warnx_("--not-input: %s", arg[0] ? "given more than 64 times" : "empty option name");
		return EXIT_USAGE;
	}
	if (arg[0] == '\0') {
		warnx_("%s: empty file name", key == 'o' ? "--outdir" : key == 'R' ? "--save-results" :
		       key == 'J' ? "--joblog" : key == 'P' ? "--stats" : key == 'W' ? "--workload" :
		       key == 'X' ? "--metrics" : "--timeline");
		return EXIT_USAGE;
	}
	switch (key) {
	case 'o': cfg->outdir = arg; break;
	case 'R': cfg->save_path = arg; break;
	case 'L': cfg->timeline_path = arg; break;
	case 'J': cfg->joblog_path = arg; break;
	case 'P': cfg->stats_path = arg; break;
	case 'X': cfg->metrics_path = arg; break;
	case 'W': cfg->plugin_path = arg; break;
	}
	return 0;
}

int run_config_check(const struct run_config *cfg)
{
	if (cfg->nmerge > 0 && (cfg->save_path || selection_active(&cfg->selection) ||
				cfg->timeline_path)) {
		warnx_("--merge runs no task: it cannot be combined with --save-results, --tasks, --shard or --timeline");
		return EXIT_USAGE;
	}
	if (cfg->resume && cfg->joblog_path == NULL) {
		warnx_("--resume needs the --joblog FILE of the run to resume");
		return EXIT_USAGE;
	}
	if (cfg->nmerge > 0 && (cfg->joblog_path || cfg->resume)) {
		warnx_("--merge runs no task: it cannot be combined with --joblog or --resume");
		return EXIT_USAGE;
	}
	if (cfg->memfree > 0 && cfg->mode != MODE_FORK) {
		warnx_("--memfree needs --mode fork: only a worker process can be held back or killed");
		return EXIT_USAGE;
	}
	if (cfg->timeout_s > 0 && cfg->mode != MODE_FORK) {
		warnx_("--timeout needs --mode fork: only a worker process can be stopped");
		return EXIT_USAGE;
	}
	if (cfg->tasks_per_worker > 0 && cfg->mode != MODE_FORK) {
		warnx_("--tasks-per-worker needs --mode fork: only a worker process can be "
		       "replaced by a fresh fork (serial is the reference run in one process)");
		return EXIT_USAGE;
	}
	if ((cfg->report_filter || cfg->report_to || cfg->report_suffix) &&
	    !(cfg->workload->flags & COWRUN_WRITES_REPORTS)) {
		warnx_("%s writes no reports: --report-filter, --report-to and --report-suffix "
		       "have nothing to act on", cfg->workload->name);
		return EXIT_USAGE;
	}
	if (cfg->mode == MODE_OMP && cfg->workload->abi_version >= 4 &&
	    (cfg->workload->flags & COWRUN_NO_THREADS)) {
		warnx_("%s runs no task on a thread: --mode omp is refused, even with --force "
		       "(use fork or serial)", cfg->workload->name);
		return EXIT_USAGE;
	}
	if (cfg->mode == MODE_OMP && (cfg->workload->flags & COWRUN_NOT_THREAD_SAFE) && !cfg->force) {
		warnx_("%s is not thread-safe: --mode omp would give wrong results (use fork, or --force to see it happen)",
		       cfg->workload->name);
		return EXIT_USAGE;
	}
	return 0;
}
