/*
 * options_table.c - the runner's options: their parsers (each sets a
 * run's settings, config.h), the one table (options_table.h says what an
 * entry holds), the lookups the command lines use, and --help's rows.
 */
#define _GNU_SOURCE
#include "options_table.h"
#include "os/command.h"
#include "os/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parsers ---- */

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

/* The options that name a file: an empty name is refused. */
static int set_path(const char **slot, const char *option, const char *arg)
{
	if (arg[0] == '\0') {
		warnx_("%s: empty file name", option);
		return EXIT_USAGE;
	}
	*slot = arg;
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

static int set_jobs(struct run_config *cfg, const char *arg)
{
	const char *why;

	if (jobs_parse(arg, &cfg->jobs, &why) == 0)
		return 0;
	warnx_("-j: bad value '%s': %s", arg, why);
	return EXIT_USAGE;
}

static int set_mode(struct run_config *cfg, const char *arg)
{
	if (parse_mode(arg, &cfg->mode) == 0)
		return 0;
	warnx_("--mode: unknown mode '%s' (fork, omp or serial)", arg);
	return EXIT_USAGE;
}

static int set_tasks(struct run_config *cfg, const char *arg)
{
	const char *why;

	if (selection_check_list(arg, &why) == 0) {
		cfg->selection.list = arg;
		return 0;
	}
	warnx_("--tasks: bad list '%s': %s", arg, why);
	return EXIT_USAGE;
}

static int set_shard(struct run_config *cfg, const char *arg)
{
	const char *why;

	if (selection_parse_shard(arg, &cfg->selection, &why) == 0)
		return 0;
	warnx_("--shard: bad value '%s': %s", arg, why);
	return EXIT_USAGE;
}

static int set_retries(struct run_config *cfg, const char *arg)
{
	if (parse_ll(arg, 0, 1000, &cfg->retries) == 0)
		return 0;
	warnx_("--retries: bad value '%s': expected a number 0-1000", arg);
	return EXIT_USAGE;
}

static int set_halt(struct run_config *cfg, const char *arg)
{
	const char *why;

	if (halt_parse(arg, &cfg->halt, &why) == 0)
		return 0;
	warnx_("--halt: bad value '%s': %s", arg, why);
	return EXIT_USAGE;
}

static int set_timeout(struct run_config *cfg, const char *arg)
{
	if (parse_double(arg, 0.001, 1e7, &cfg->timeout_s) == 0)
		return 0;
	warnx_("--timeout: bad value '%s': expected seconds, 0.001 or more", arg);
	return EXIT_USAGE;
}

static int set_retry_delay(struct run_config *cfg, const char *arg)
{
	if (parse_double(arg, 0.001, 86400, &cfg->retry_delay_s) == 0)
		return 0;
	warnx_("--retry-delay: bad value '%s': expected seconds, 0.001 to 86400", arg);
	return EXIT_USAGE;
}

static int set_tasks_per_worker(struct run_config *cfg, const char *arg)
{
	if (parse_ll(arg, 1, 1000000000, &cfg->tasks_per_worker) == 0)
		return 0;
	warnx_("--tasks-per-worker: bad value '%s': expected a number of tasks, 1 or more", arg);
	return EXIT_USAGE;
}

static int set_memfree(struct run_config *cfg, const char *arg)
{
	if (parse_size(arg, &cfg->memfree) == 0 && cfg->memfree > 0)
		return 0;
	warnx_("--memfree: bad size '%s': expected a number with K, M, G or T "
	       "(1024s) or k, m, g, t (1000s)", arg);
	return EXIT_USAGE;
}

static int set_bar(struct run_config *cfg, const char *arg)
{
	if (arg == NULL || strcmp(arg, "always") == 0) {
		cfg->bar = arg ? 2 : 1;
		return 0;
	}
	warnx_("--bar: bad value '%s': only --bar or --bar=always", arg);
	return EXIT_USAGE;
}

static int set_merge(struct run_config *cfg, const char *arg)
{
	if (cfg->nmerge < MAX_MERGE_FILES) {
		cfg->merge_paths[cfg->nmerge++] = arg;
		return 0;
	}
	warnx_("--merge: more than %d files", MAX_MERGE_FILES);
	return EXIT_USAGE;
}

static int set_report_filter(struct run_config *cfg, const char *arg)
{
	return set_report_command(&cfg->report_filter, "--report-filter", arg);
}

static int set_report_to(struct run_config *cfg, const char *arg)
{
	return set_report_command(&cfg->report_to, "--report-to", arg);
}

static int set_report_suffix(struct run_config *cfg, const char *arg)
{
	if (arg[0] != '\0' && strchr(arg, '/') == NULL && strlen(arg) < 64) {
		cfg->report_suffix = arg;
		return 0;
	}
	warnx_("--report-suffix: bad value '%s': a suffix of a file name, 1-63 bytes, no '/'", arg);
	return EXIT_USAGE;
}

static int set_seed(struct run_config *cfg, const char *arg)
{
	if (parse_seed(arg, &cfg->seed) == 0) {
		cfg->seed_given = 1;
		return 0;
	}
	warnx_("--seed: bad value '%s': expected a number 0-18446744073709551615", arg);
	return EXIT_USAGE;
}

static int set_not_input(struct run_config *cfg, const char *arg)
{
	if (cfg->nnot_inputs < MAX_NOT_INPUTS && arg[0] != '\0') {
		cfg->not_inputs[cfg->nnot_inputs++] = arg;
		return 0;
	}
	warnx_("--not-input: %s", arg[0] ? "given more than 64 times" : "empty option name");
	return EXIT_USAGE;
}

static int set_outdir(struct run_config *c, const char *a) { return set_path(&c->outdir, "--outdir", a); }
static int set_save(struct run_config *c, const char *a) { return set_path(&c->save_path, "--save-results", a); }
static int set_timeline(struct run_config *c, const char *a) { return set_path(&c->timeline_path, "--timeline", a); }
static int set_joblog(struct run_config *c, const char *a) { return set_path(&c->joblog_path, "--joblog", a); }
static int set_stats(struct run_config *c, const char *a) { return set_path(&c->stats_path, "--stats", a); }
static int set_metrics(struct run_config *c, const char *a) { return set_path(&c->metrics_path, "--metrics", a); }
static int set_plugin(struct run_config *c, const char *a) { return set_path(&c->plugin_path, "--workload", a); }

/* --resume: 1, unless --resume-failed came first. */
static int set_resume(struct run_config *c, const char *a)
{
	(void)a;
	c->resume = c->resume ? c->resume : 1;
	return 0;
}

static int set_resume_failed(struct run_config *c, const char *a) { (void)a; c->resume = 2; return 0; }
static int set_force(struct run_config *c, const char *a) { (void)a; c->force = 1; return 0; }
static int set_no_huge(struct run_config *c, const char *a) { (void)a; c->no_huge_pages = 1; return 0; }
static int set_no_freeze(struct run_config *c, const char *a) { (void)a; c->no_freeze = 1; return 0; }
static int set_log_time(struct run_config *c, const char *a) { (void)a; c->log_time = 1; return 0; }
static int set_clean(struct run_config *c, const char *a) { (void)a; c->clean = 1; return 0; }
static int set_check_args(struct run_config *c, const char *a) { (void)a; c->check_args = 1; return 0; }
static int set_dry_run(struct run_config *c, const char *a) { (void)a; c->dry_run = 1; return 0; }
static int set_verbose(struct run_config *c, const char *a) { (void)a; c->verbose = 1; return 0; }
static int set_version(struct run_config *c, const char *a) { (void)a; c->show_version = 1; return 0; }

/* ---- the table ---- */

#define D OPT_DIRECT
#define B (OPT_DIRECT | OPT_SUBMIT)
#define ONCE OPT_ONCE
#define NO OPT_NO_ARG
#define REQ OPT_REQUIRED

/* In cowrun --help's order; serve's options in serve --help's. */
const struct runner_option runner_options[] = {
	{ "jobs", 'j', 1, REQ, "N", B, set_jobs, PF_JOBS, NULL,
	  "workers: N, N% of the CPUs, +N or -N relative to the\n"
	  "CPU count, 0 for one per task (default: the CPUs this\n"
	  "run may use: affinity, cgroup quota, SLURM_CPUS_PER_TASK)" },
	{ "mode", 'm', 1, REQ, "MODE", D, set_mode, PF_NONE, NULL,
	  "fork (default): forked workers after setup;\n"
	  "omp: OpenMP threads in this process;\n"
	  "serial: every task in this process, the reference" },
	{ "force", 'F', 0, NO, NULL, D, set_force, PF_NONE, NULL,
	  "run omp mode even for a workload that is not thread-safe" },
	{ "outdir", 'o', 1, REQ, "DIR", B, set_outdir, PF_OUTDIR, NULL,
	  "where report files go (default: out)" },
	{ "tasks", 'T', 0, REQ, "LIST", B | ONCE, set_tasks, PF_TASKS, NULL,
	  "run only these tasks, e.g. 0-9,17" },
	{ "shard", 'S', 0, REQ, "k/M", B | ONCE, set_shard, PF_SHARD, NULL,
	  "run only tasks i with i % M == k (0 <= k < M)" },
	{ "save-results", 'R', 0, REQ, "FILE", B | ONCE, set_save, PF_SAVE, NULL,
	  "save the raw result records to FILE instead of\n"
	  "merging them (no summary); for a later --merge" },
	{ "merge", 'M', 0, REQ, "FILE", D, set_merge, PF_NONE, NULL,
	  "run no task: merge saved results and print the summary;\n"
	  "repeatable; a directory means every *.res file in it" },
	{ "timeline", 'L', 0, REQ, "FILE", B | ONCE, set_timeline, PF_TIMELINE, NULL,
	  "write when and where each task ran, as CSV" },
	{ "joblog", 'J', 0, REQ, "FILE", B | ONCE, set_joblog, PF_JOBLOG, NULL,
	  "log every attempt in GNU Parallel's joblog format\n"
	  "(+FILE appends); FILE.res keeps every finished result" },
	{ "resume", 'r', 0, NO, NULL, B, set_resume, PF_RESUME, "1",
	  "rerun with the same --joblog: skip tasks that finished\n"
	  "(succeeded or failed), run the rest, merge everything" },
	{ "resume-failed", 'f', 0, NO, NULL, B, set_resume_failed, PF_RESUME, "2",
	  "as --resume, but run the failed tasks again too" },
	{ "not-input", 'I', 0, REQ, "OPT", D, set_not_input, PF_NONE, NULL,
	  "the workload's option --OPT names no input file (an\n"
	  "output it writes): not taken for one; repeatable" },
	{ "clean", 'C', 0, NO, NULL, D, set_clean, PF_NONE, NULL,
	  "remove the stale reports in the output directory: those\n"
	  "an earlier run's manifest names that no task writes now" },
	{ "report-filter", 'e', 0, REQ, "CMD", B | ONCE, set_report_filter, PF_REPORT_FILTER, NULL,
	  "pass each report through CMD (its stdin the report,\n"
	  "its stdout the report file); the task fails if CMD does" },
	{ "report-to", 'd', 0, REQ, "CMD", B | ONCE, set_report_to, PF_REPORT_TO, NULL,
	  "give each finished report to CMD (a printer, a mailer)\n"
	  "and keep no file; the task succeeds only if CMD does;\n"
	  "with --retries or --resume, at least once" },
	{ "report-suffix", 'x', 0, REQ, "SUF", B | ONCE, set_report_suffix, PF_REPORT_SUFFIX, NULL,
	  "append SUF to every report's file name (.gz)" },
	{ NULL, 0, 0, NO, NULL, D, NULL, PF_NONE, NULL,
	  "                      In CMD: {} the complete report's path, {/} its name,\n"
	  "                      {#} the task's number from 1, {%} the worker's slot,\n"
	  "                      1 to -j.  Shell syntax runs it under sh -c, values\n"
	  "                      quoted (a '|' pipeline refused); else it runs directly\n" },
	{ "seed", 's', 0, REQ, "N", B | ONCE, set_seed, PF_SEED, NULL,
	  "the run seed each task's seed is derived from, with the\n"
	  "task's number (default 0): the same draws at every -j,\n"
	  "in every mode, on a retry, a resume or a shard" },
	{ "retries", 'y', 0, REQ, "N", B, set_retries, PF_RETRIES, NULL,
	  "give a failed task N more attempts, each on a fresh fork,\n"
	  "in a slot ({%}) that has not failed it while one lives" },
	{ "retry-delay", 'D', 0, REQ, "SECS", B, set_retry_delay, PF_RETRY_DELAY, NULL,
	  "wait SECS before a task's retry, doubling with each\n"
	  "attempt, at most 10 x SECS" },
	{ "halt", 'H', 0, REQ, "WHEN", B, set_halt, PF_HALT, NULL,
	  "stop early: never (default), now,fail=N, soon,fail=N,\n"
	  "now,fail=P%, soon,success=N (now kills running tasks,\n"
	  "soon lets them finish)" },
	{ "timeout", 't', 0, REQ, "SECS", B, set_timeout, PF_TIMEOUT, NULL,
	  "fail a task running longer (SIGTERM, SIGKILL 2 s later)" },
	{ "tasks-per-worker", 'k', 0, REQ, "N", B, set_tasks_per_worker, PF_TASKS_PER_WORKER, NULL,
	  "a worker that has run N tasks exits and a fresh\n"
	  "fork of the parent takes its place: 1 gives every task\n"
	  "the setup's state as it was (fork mode only)" },
	{ "memfree", 'K', 0, REQ, "SIZE", D, set_memfree, PF_NONE, NULL,
	  "hand out no task while less memory than SIZE is\n"
	  "available (MemAvailable, cgroup limits); below half\n"
	  "of it, kill the worker that started its task last and\n"
	  "run that task again (no retry spent; never the last\n"
	  "worker); SIZE like 2G (1024s) or 2g (1000s)" },
	{ "bar", 'B', 0, OPT_OPTIONAL, "always", D, set_bar, PF_NONE, NULL,
	  "progress line on stderr (only on a terminal unless always)" },
	{ "no-huge-pages", 'N', 0, NO, NULL, D, set_no_huge, PF_NONE, NULL,
	  "give the setup arena 4 KiB pages (to compare fork cost)" },
	{ "no-freeze", 'Z', 0, NO, NULL, D, set_no_freeze, PF_NONE, NULL,
	  "leave the setup arena writable after setup" },
	{ "stats", 'P', 0, REQ, "FILE", B | ONCE, set_stats, PF_STATS, NULL,
	  "one CSV row per worker: fork time, faults, Pss, copied memory" },
	{ "metrics", 'X', 0, REQ, "FILE", D | ONCE, set_metrics, PF_NONE, NULL,
	  "the run's figures in Prometheus text format (for the node\n"
	  "exporter's textfile collector), written whole at the end\n"
	  "and every 30 s while the run goes on" },
	{ "log-time", 'G', 0, NO, NULL, D, set_log_time, PF_NONE, NULL,
	  "begin each of the runner's stderr lines with an ISO 8601\n"
	  "time (UTC) and the run id (run=...), as the metrics name it" },
	{ "workload", 'W', 0, REQ, "FILE", D | ONCE | OPT_ENDS, set_plugin, PF_NONE, NULL,
	  "run an out-of-tree workload, a shared object built\n"
	  "against cowrun.h, instead of a WORKLOAD name: the\n"
	  "last runner option; what follows is the workload's" },
	{ "list", 'l', 0, NO, NULL, D, NULL, PF_NONE, NULL,
	  "list the built-in workloads" },
	{ "check-args", 'A', 0, NO, NULL, D, set_check_args, PF_NONE, NULL,
	  "only check that the workload exists and its options\n"
	  "parse (no setup, no task): exit 0, or 255 and why" },
	{ "dry-run", 'Q', 0, NO, NULL, D, set_dry_run, PF_NONE, NULL,
	  "print the plan without the setup: the tasks (when the\n"
	  "workload can name them without it), workers, setup\n"
	  "threads, memory, every file it would create, replace\n"
	  "or append to; exit as the run would start (0 or 255)" },
	{ "verbose", 'v', 1, NO, NULL, D, set_verbose, PF_NONE, NULL,
	  "report setup time, workers and fork time on stderr" },
	{ "help", 'h', 1, NO, NULL, B, NULL, PF_NONE, NULL,
	  "show this help" },
	{ "version", 'V', 1, NO, NULL, D, set_version, PF_NONE, NULL,
	  "show the version; with -v also the results format and\n"
	  "workload ABI, which saved results must share to merge" },
	{ NULL, 0, 0, NO, NULL, D, NULL, PF_NONE, NULL,
	  "\n"
	  "Exit status:\n"
	  "  0        every task succeeded\n"
	  "  1-100    that many tasks failed (the others' results are merged)\n"
	  "  101      more than 100 tasks failed\n"
	  "  130, 143 interrupted by SIGINT, SIGTERM (finished work is kept in the\n"
	  "           joblog's results; rerun with --resume)\n"
	  "  254      the runner itself failed after tasks began\n"
	  "  255      bad usage or input: no task ran\n"
	  "After --halt, the exit status counts the failed tasks, as above.\n" },
	/* submit's own: its help lists them (submit.c) */
	{ "status", OPT_KEY_STATUS, 0, NO, NULL, OPT_SUBMIT, NULL, PF_NONE, NULL, NULL },
	{ "reload", OPT_KEY_RELOAD, 0, NO, NULL, OPT_SUBMIT, NULL, PF_NONE, NULL, NULL },
	/* serve's own (serve.c parses them), before the runner's options */
	{ "socket", OPT_KEY_SOCKET, 0, REQ, "PATH", OPT_SERVE | OPT_SUBMIT, NULL, PF_NONE, NULL,
	  "the Unix socket, in a directory of your own that others\n"
	  "cannot write in (mkdir -m 700); created mode 0600" },
	{ "socket-mode", OPT_KEY_SOCKET_MODE, 0, REQ, "MODE", OPT_SERVE, NULL, PF_NONE, NULL,
	  "its mode instead (octal, at least 0600)" },
	{ "allow-uid", OPT_KEY_ALLOW_UID, 0, REQ, "UID", OPT_SERVE, NULL, PF_NONE, NULL,
	  "also serve this uid (repeatable); others are refused" },
	{ "max-workers", OPT_KEY_MAX_WORKERS, 0, REQ, "N", OPT_SERVE, NULL, PF_NONE, NULL,
	  "workers across all running batches (default: the CPUs)" },
	{ "pidfile", OPT_KEY_PIDFILE, 0, REQ, "FILE", OPT_SERVE, NULL, PF_NONE, NULL,
	  "write the server's pid to FILE" },
	{ "read-timeout", OPT_KEY_READ_TIMEOUT, 0, REQ, "MS", OPT_SERVE, NULL, PF_NONE, NULL,
	  "a request must arrive within MS (default 2000)" },
};

const size_t runner_options_count = sizeof runner_options / sizeof runner_options[0];

/* cfg->seen has a bit per entry; a getopt table has room for all and
 * its end. */
_Static_assert(sizeof runner_options / sizeof runner_options[0] < OPTIONS_MAX &&
	       OPTIONS_MAX <= 64, "run_config.seen has a bit per option");

#undef D
#undef B
#undef ONCE
#undef NO
#undef REQ

/* ---- lookups ---- */

const struct runner_option *option_by_key(int key)
{
	for (size_t i = 0; key != 0 && i < runner_options_count; i++)
		if (runner_options[i].key == key)
			return &runner_options[i];
	return NULL;
}

const struct runner_option *option_by_name(const char *name, unsigned scope)
{
	for (size_t i = 0; i < runner_options_count; i++)
		if (runner_options[i].name && (runner_options[i].flags & scope) &&
		    strcmp(runner_options[i].name, name) == 0)
			return &runner_options[i];
	return NULL;
}

const struct runner_option *option_by_wire(int f, const char *text)
{
	for (size_t i = 0; f != PF_NONE && i < runner_options_count; i++) {
		const struct runner_option *o = &runner_options[i];
		if (o->wire == f && (o->wire_value == NULL || strcmp(o->wire_value, text) == 0))
			return o;
	}
	return NULL;
}

void options_getopt(unsigned scope, void *longopts, char *optstring, size_t size)
{
	struct option *lo = longopts;
	size_t n = (size_t)snprintf(optstring, size, "+:");

	for (size_t i = 0; i < runner_options_count; i++) {
		const struct runner_option *o = &runner_options[i];
		if (o->name == NULL || !(o->flags & scope))
			continue;
		*lo++ = (struct option){ o->name, o->arg == OPT_NO_ARG ? no_argument :
					 o->arg == OPT_REQUIRED ? required_argument :
					 optional_argument, NULL, o->key };
		if (o->is_short && n + 4 < size)
			n += (size_t)snprintf(optstring + n, size - n, "%c%s", o->key,
					      o->arg == OPT_REQUIRED ? ":" :
					      o->arg == OPT_OPTIONAL ? "::" : "");
	}
	*lo = (struct option){ NULL, 0, NULL, 0 };
}

int run_config_set(struct run_config *cfg, int key, const char *arg)
{
	const struct runner_option *o = option_by_key(key);

	if (o == NULL || o->set == NULL)
		return 0;
	/* Options naming what to run or where a file goes: given twice, one
	 * would be silently dropped, so it is an error. */
	if (o->flags & OPT_ONCE) {
		unsigned long long bit = 1ull << (o - runner_options);
		if (cfg->seen & bit) {
			warnx_("--%s given twice", o->name);
			return EXIT_USAGE;
		}
		cfg->seen |= bit;
	}
	return o->set(cfg, arg);
}

/* ---- --help ---- */

#define HELP_WIDTH 80

/* Add `text` to the line being built in line[*n], after `sep` spaces
 * or, where the line is shorter than col, spaces up to col. */
static void add(char *line, size_t size, int *n, int col, const char *sep, const char *text)
{
	if (*n < col && strcmp(sep, ", ") != 0)
		*n += snprintf(line + *n, size - (size_t)*n, "%*s", col - *n, "");
	else
		*n += snprintf(line + *n, size - (size_t)*n, "%s", sep);
	if (*n < (int)size)
		*n += snprintf(line + *n, size - (size_t)*n, "%s", text);
	if (*n >= (int)size)
		*n = (int)size - 1;
}

/* "--name ARG", "--bar[=always]", "--force". */
static void option_words(const struct runner_option *o, char *buf, size_t size)
{
	if (o->arg == OPT_NO_ARG)
		snprintf(buf, size, "--%s", o->name);
	else
		snprintf(buf, size, o->arg == OPT_OPTIONAL ? "--%s[=%s]" : "--%s %s", o->name,
			 o->metavar);
}

/* One row: the options' words side by side (a line of at most
 * HELP_WIDTH columns; one without argument and the next joined by ", "),
 * then text from column col, its first line on the options' line where
 * it fits, each of its other lines at col.  `indent`: where an option
 * without a short one starts. */
static void help_row(FILE *out, const int *keys, int indent, int col, const char *text)
{
	char line[512] = "", words[64];
	int n = 0;
	const struct runner_option *prev = NULL;

	for (; *keys; keys++) {
		const struct runner_option *o = option_by_key(*keys);
		option_words(o, words, sizeof words);
		if (prev == NULL) {
			n = snprintf(line, sizeof line, "%*s", o->is_short ? 2 : indent, "");
			if (o->is_short)
				n += snprintf(line + n, sizeof line - (size_t)n, "-%c, ", o->key);
			add(line, sizeof line, &n, 0, "", words);
		} else if (prev->arg == OPT_NO_ARG) {
			add(line, sizeof line, &n, col, ", ", words);
		} else if (n + 2 + (int)strlen(words) > HELP_WIDTH) {
			fprintf(out, "%s\n", line);
			n = snprintf(line, sizeof line, "%*s%s", indent, "", words);
		} else {
			add(line, sizeof line, &n, col, "  ", words);
		}
		prev = o;
	}
	size_t first = strcspn(text, "\n");
	if (n >= col && n + 2 + (int)first > HELP_WIDTH) {
		fprintf(out, "%s\n", line);
		n = 0;
		line[0] = '\0';
	}
	fprintf(out, "%s%*s%.*s\n", line, n < col ? col - n : 2, "", (int)first, text);
	for (const char *p = text + first; *p == '\n'; p += first) {
		first = strcspn(++p, "\n");
		fprintf(out, "%*s%.*s\n", col, "", (int)first, p);
	}
}

void options_help_row(FILE *out, const int *keys, int col, const char *text)
{
	help_row(out, keys, 6, col, text);
}

void options_help(FILE *out, unsigned scope)
{
	for (size_t i = 0; i < runner_options_count; i++) {
		const struct runner_option *o = &runner_options[i];
		const int keys[] = { o->key, 0 };
		if (!(o->flags & scope) || o->help == NULL)
			continue;
		if (o->name == NULL)
			fputs(o->help, out);
		else
			help_row(out, keys, scope == OPT_SERVE ? 2 : 6, 22, o->help);
	}
}
