/*
 * main.c - the cowrun command line: parse runner options, find the
 * workload, run its setup once, run the selected tasks in the chosen mode
 * (or load saved results), merge in task order, print its summary, and
 * turn the outcome into an exit status.
 */
#define _GNU_SOURCE
#include "engine/batch.h"
#include "engine/halt.h"
#include "engine/jobs.h"
#include "run/merge.h"
#include "run/outdir.h"
#include "os/parallel.h"
#include "engine/omprun.h"
#include "workload/options.h"
#include "engine/pool.h"
#include "workload/registry.h"
#include "files/results.h"
#include "run/resume.h"
#include "os/procstat.h"
#include "engine/selection.h"
#include "engine/serial.h"
#include "serve/serve.h"
#include "os/setup_arena.h"
#include "run/sidefiles.h"
#include "os/signals.h"
#include "engine/task.h"
#include "engine/taskout.h"
#include "os/util.h"
#include "engine/watchdog.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define COWRUN_VERSION "0.3.0"
#define MAX_MERGE_FILES 4096

/* Exit statuses, as GNU Parallel's where it has one. */
enum {
	EXIT_MANY_FAILED = 101,   /* more than 100 tasks failed */
	EXIT_INTERRUPTED = 128,   /* plus the signal: 130 SIGINT, 143 SIGTERM */
	EXIT_RUNNER_ERROR = 254,  /* the runner failed after tasks began */
	EXIT_USAGE = 255,         /* bad usage or input, before any task ran */
};

enum mode { MODE_FORK, MODE_SERIAL, MODE_OMP };

struct cli {
	struct jobs_spec jobs;
	enum mode mode;
	int force;                /* omp mode even if not thread-safe */
	const char *outdir;
	int verbose;
	int show_version;         /* --version (with -v: what a merge needs) */
	int check_args;           /* --check-args: parse the workload's options only */
	struct selection selection;
	const char *save_path;    /* --save-results */
	const char *timeline_path;
	const char *merge_paths[MAX_MERGE_FILES];
	size_t nmerge;
	const char *joblog_path;  /* --joblog, maybe "+FILE" */
	int resume;               /* 1 --resume, 2 --resume-failed */
	long long retries;
	struct halt_policy halt;
	double timeout_s;
	int bar;                  /* 0 off, 1 on a terminal, 2 always */
	int no_huge_pages, no_freeze;
	const char *stats_path;   /* --stats */
	const char *plugin_path;  /* --workload FILE.so */
	unsigned seen;            /* options that may be given once */
	const struct cowrun_workload *workload;
	int wargc;
	char **wargv;
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: cowrun [OPTIONS] WORKLOAD [WORKLOAD OPTIONS]\n"
"  or:  cowrun [OPTIONS] --workload FILE.so [WORKLOAD OPTIONS]\n"
"  or:  cowrun serve --socket PATH [SERVE OPTIONS] [OPTIONS] WORKLOAD [...]\n"
"  or:  cowrun submit --socket PATH [-j N] [-o DIR] [--tasks LIST] ...\n"
"\n"
"Run a batch of reports in parallel: do the workload's expensive setup once,\n"
"then fork workers that share it copy-on-write and merge their results in\n"
"task order.  Everything after WORKLOAD goes to the workload\n"
"(cowrun WORKLOAD --help lists its options).\n"
"\n"
"Options:\n"
"  -j, --jobs N        workers: N, N%% of the CPUs, +N or -N relative to the\n"
"                      CPU count, 0 for one per task (default: the CPUs this\n"
"                      run may use: affinity, cgroup quota, SLURM_CPUS_PER_TASK)\n"
"  -m, --mode MODE     fork (default): forked workers after setup;\n"
"                      omp: OpenMP threads in this process;\n"
"                      serial: every task in this process, the reference\n"
"      --force         run omp mode even for a workload that is not thread-safe\n"
"  -o, --outdir DIR    where report files go (default: out)\n"
"      --tasks LIST    run only these tasks, e.g. 0-9,17\n"
"      --shard k/M     run only tasks i with i %% M == k (0 <= k < M)\n"
"      --save-results FILE  save the raw result records to FILE instead of\n"
"                      merging them (no summary); for a later --merge\n"
"      --merge FILE    run no task: merge saved results and print the summary;\n"
"                      repeatable; a directory means every *.res file in it\n"
"      --timeline FILE write when and where each task ran, as CSV\n"
"      --joblog FILE   log every attempt in GNU Parallel's joblog format\n"
"                      (+FILE appends); FILE.res keeps every finished result\n"
"      --resume        rerun with the same --joblog: skip tasks that finished\n"
"                      (succeeded or failed), run the rest, merge everything\n"
"      --resume-failed as --resume, but run the failed tasks again too\n"
"      --retries N     give a failed task N more attempts, each on a fresh fork\n"
"      --halt WHEN     stop early: never (default), now,fail=N, soon,fail=N,\n"
"                      now,fail=P%%, soon,success=N (now kills running tasks,\n"
"                      soon lets them finish)\n"
"      --timeout SECS  fail a task running longer (SIGTERM, SIGKILL 2 s later)\n"
"      --bar[=always]  progress line on stderr (only on a terminal unless always)\n"
"      --no-huge-pages give the setup arena 4 KiB pages (to compare fork cost)\n"
"      --no-freeze     leave the setup arena writable after setup\n"
"      --stats FILE    one CSV row per worker: fork time, faults, Pss, copied memory\n"
"      --workload FILE run an out-of-tree workload, a shared object built\n"
"                      against cowrun.h, instead of a WORKLOAD name: the\n"
"                      last runner option; what follows is the workload's\n"
"      --list          list the built-in workloads\n"
"      --check-args    only check that the workload exists and its options\n"
"                      parse (no setup, no task): exit 0, or 255 and why\n"
"  -v, --verbose       report setup time, workers and fork time on stderr\n"
"  -h, --help          show this help\n"
"  -V, --version       show the version; with -v also the results format and\n"
"                      workload ABI, which saved results must share to merge\n"
"\n"
"Exit status:\n"
"  0        every task succeeded\n"
"  1-100    that many tasks failed (the others' results are merged)\n"
"  101      more than 100 tasks failed\n"
"  130, 143 interrupted by SIGINT, SIGTERM (finished work is kept in the\n"
"           joblog's results; rerun with --resume)\n"
"  254      the runner itself failed after tasks began\n"
"  255      bad usage or input: no task ran\n"
"After --halt, the exit status counts the failed tasks, as above.\n");
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
static int refuse_repeat(int c, struct cli *cli)
{
	static const char once[] = "TSRLJPW";
	static const char *const names[] = { "--tasks", "--shard", "--save-results",
					     "--timeline", "--joblog", "--stats", "--workload" };
	const char *at = strchr(once, c);

	if (c == 0 || at == NULL)
		return 0;
	unsigned bit = 1u << (at - once);
	if (cli->seen & bit) {
		warnx_("%s given twice", names[at - once]);
		return EXIT_USAGE;
	}
	cli->seen |= bit;
	return 0;
}

/* The options that carry a value, checked as they are parsed.  Returns 0
 * or EXIT_USAGE after a message. */
static int take_value(int c, const char *arg, struct cli *cli)
{
	const char *why;

	if (refuse_repeat(c, cli) != 0)
		return EXIT_USAGE;
	switch (c) {
	case 'j':
		if (jobs_parse(arg, &cli->jobs, &why) == 0)
			return 0;
		warnx_("-j: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'm':
		if (parse_mode(arg, &cli->mode) == 0)
			return 0;
		warnx_("--mode: unknown mode '%s' (fork, omp or serial)", arg);
		return EXIT_USAGE;
	case 'T':
		if (selection_check_list(arg, &why) == 0) {
			cli->selection.list = arg;
			return 0;
		}
		warnx_("--tasks: bad list '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'S':
		if (selection_parse_shard(arg, &cli->selection, &why) == 0)
			return 0;
		warnx_("--shard: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 'y':
		if (parse_ll(arg, 0, 1000, &cli->retries) == 0)
			return 0;
		warnx_("--retries: bad value '%s': expected a number 0-1000", arg);
		return EXIT_USAGE;
	case 'H':
		if (halt_parse(arg, &cli->halt, &why) == 0)
			return 0;
		warnx_("--halt: bad value '%s': %s", arg, why);
		return EXIT_USAGE;
	case 't':
		if (parse_double(arg, 0.001, 1e7, &cli->timeout_s) == 0)
			return 0;
		warnx_("--timeout: bad value '%s': expected seconds, 0.001 or more", arg);
		return EXIT_USAGE;
	case 'B':
		if (arg == NULL || strcmp(arg, "always") == 0) {
			cli->bar = arg ? 2 : 1;
			return 0;
		}
		warnx_("--bar: bad value '%s': only --bar or --bar=always", arg);
		return EXIT_USAGE;
	case 'M':
		if (cli->nmerge < MAX_MERGE_FILES) {
			cli->merge_paths[cli->nmerge++] = arg;
			return 0;
		}
		warnx_("--merge: more than %d files", MAX_MERGE_FILES);
		return EXIT_USAGE;
	}
	if (arg[0] == '\0') {
		warnx_("%s: empty file name", c == 'o' ? "--outdir" : c == 'R' ? "--save-results" :
		       c == 'J' ? "--joblog" : c == 'P' ? "--stats" : c == 'W' ? "--workload" :
		       "--timeline");
		return EXIT_USAGE;
	}
	switch (c) {
	case 'o': cli->outdir = arg; break;
	case 'R': cli->save_path = arg; break;
	case 'L': cli->timeline_path = arg; break;
	case 'J': cli->joblog_path = arg; break;
	case 'P': cli->stats_path = arg; break;
	case 'W': cli->plugin_path = arg; break;
	}
	return 0;
}

/* Options that only make sense together, or not at all together. */
static int check_combinations(const struct cli *cli)
{
	if (cli->nmerge > 0 && (cli->save_path || selection_active(&cli->selection) ||
				cli->timeline_path)) {
		warnx_("--merge runs no task: it cannot be combined with --save-results, --tasks, --shard or --timeline");
		return EXIT_USAGE;
	}
	if (cli->resume && cli->joblog_path == NULL) {
		warnx_("--resume needs the --joblog FILE of the run to resume");
		return EXIT_USAGE;
	}
	if (cli->nmerge > 0 && (cli->joblog_path || cli->resume)) {
		warnx_("--merge runs no task: it cannot be combined with --joblog or --resume");
		return EXIT_USAGE;
	}
	if (cli->timeout_s > 0 && cli->mode != MODE_FORK) {
		warnx_("--timeout needs --mode fork: only a worker process can be stopped");
		return EXIT_USAGE;
	}
	if (cli->mode == MODE_OMP && (cli->workload->flags & COWRUN_NOT_THREAD_SAFE) && !cli->force) {
		warnx_("%s is not thread-safe: --mode omp would give wrong results (use fork, or --force to see it happen)",
		       cli->workload->name);
		return EXIT_USAGE;
	}
	return 0;
}

/* --workload FILE.so: every argument after the options is the plugin's.
 * Its argv[0] is its name, in the slot of the last option (already
 * parsed), so a plugin sees the same argv a built-in does. */
static int take_plugin(int argc, char **argv, struct cli *cli)
{
	cli->workload = registry_load_plugin(cli->plugin_path);
	if (cli->workload == NULL)
		return EXIT_USAGE;
	argv[optind - 1] = (char *)cli->workload->name;
	cli->wargc = argc - optind + 1;
	cli->wargv = argv + optind - 1;
	return check_combinations(cli);
}

/* --version; with --verbose also what saved results from another cowrun
 * must share with this one to merge (cowrun-cluster --check compares it
 * on every host). */
static void print_version(int verbose)
{
	printf("cowrun %s\n", COWRUN_VERSION);
	if (verbose)
		printf("results format %d, workload ABI %d\n", RESULTS_FORMAT, COWRUN_ABI_VERSION);
}

/* Parse the runner's own options.  Returns -1 to exit 0 (help, list,
 * version done), 0 to run, or EXIT_USAGE after a message. */
static int parse_cli(int argc, char **argv, struct cli *cli)
{
	static const struct option longopts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "mode", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'F' },
		{ "outdir", required_argument, NULL, 'o' },
		{ "tasks", required_argument, NULL, 'T' },
		{ "shard", required_argument, NULL, 'S' },
		{ "save-results", required_argument, NULL, 'R' },
		{ "merge", required_argument, NULL, 'M' },
		{ "timeline", required_argument, NULL, 'L' },
		{ "joblog", required_argument, NULL, 'J' },
		{ "resume", no_argument, NULL, 'r' },
		{ "resume-failed", no_argument, NULL, 'f' },
		{ "retries", required_argument, NULL, 'y' },
		{ "halt", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "bar", optional_argument, NULL, 'B' },
		{ "no-huge-pages", no_argument, NULL, 'N' },
		{ "no-freeze", no_argument, NULL, 'Z' },
		{ "stats", required_argument, NULL, 'P' },
		{ "workload", required_argument, NULL, 'W' },
		{ "list", no_argument, NULL, 'l' },
		{ "check-args", no_argument, NULL, 'A' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	memset(cli, 0, sizeof *cli);
	cli->jobs = (struct jobs_spec){ JOBS_PLUS, 0 };
	cli->mode = MODE_FORK;
	cli->outdir = "out";
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:j:m:o:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'F': cli->force = 1; break;
		case 'r': cli->resume = cli->resume ? cli->resume : 1; break;
		case 'f': cli->resume = 2; break;
		case 'N': cli->no_huge_pages = 1; break;
		case 'Z': cli->no_freeze = 1; break;
		case 'v': cli->verbose = 1; break;
		case 'l': registry_list(stdout); return -1;
		case 'h': usage(stdout); return -1;
		case 'V': cli->show_version = 1; break;
		case 'A': cli->check_args = 1; break;
		case ':':
			warnx_("option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			warnx_("unknown option '%s' (see cowrun --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if ((rc = take_value(c, optarg, cli)) != 0)
				return rc;
		}
		/* --workload FILE stands where the WORKLOAD name would:
		 * what follows it is the workload's. */
		if (c == 'W')
			break;
	}
	if (cli->show_version) {
		print_version(cli->verbose);
		return -1;
	}
	if (cli->plugin_path)
		return take_plugin(argc, argv, cli);
	if (optind >= argc) {
		warnx_("no workload given (see cowrun --list and cowrun --help)");
		return EXIT_USAGE;
	}
	cli->workload = registry_find(argv[optind]);
	if (cli->workload == NULL)
		return EXIT_USAGE;
	cli->wargc = argc - optind;
	cli->wargv = argv + optind;
	return check_combinations(cli);
}
static size_t choose_workers(const struct cli *cli, size_t ntasks)
{
	size_t workers = jobs_resolve(&cli->jobs, cpu_count(), ntasks);
	size_t max = pool_max_workers();

	if (cli->mode == MODE_FORK && workers > max) {
		if (cli->jobs.kind != JOBS_PER_TASK)
			warnx_("only enough file descriptors for %zu workers: using %zu", max, max);
		workers = max;
	}
	return workers;
}

/* The setup's threads (cowrun_parallel()): the workers -j means, at most
 * the usable CPUs (-j 0, one per task, means the CPUs here: the task count
 * is not known before setup); one in serial mode. */
static unsigned choose_setup_threads(const struct cli *cli)
{
	int cpus = cpu_count();
	size_t threads = jobs_resolve(&cli->jobs, cpus, (size_t)1 << 30); /* no task count yet */

	if (cli->mode == MODE_SERIAL)
		return 1;
	return threads < (size_t)cpus ? (unsigned)threads : (unsigned)cpus;
}

/* --stats and the --verbose memory line: how much of the setup the
 * workers shared, and how much each copied.  Returns 0 or -1 after a
 * message (the stats file could not be written). */
static int report_worker_memory(const struct cli *cli, struct sidefiles *files,
				const struct pool_stats *st, size_t setup_bytes)
{
	uint64_t private_kb = 0, pss_kb = 0;

	for (size_t i = 0; i < st->nper_worker; i++) {
		private_kb += st->per_worker[i].private_dirty_kb;
		pss_kb += st->per_worker[i].pss_kb;
	}
	if (cli->verbose && st->nper_worker > 0) {
		double copied = (double)private_kb / (double)st->nper_worker * 1024.0;
		warnx_("memory: setup %.1f MiB shared by %zu workers; each copied or allocated %.1f MiB "
		       "(%.1f%% of the setup) on average, Pss %.1f MiB; fork %.3f ms avg",
		       setup_bytes / 1048576.0, st->nper_worker, copied / 1048576.0,
		       setup_bytes ? 100.0 * copied / (double)setup_bytes : 0.0,
		       (double)pss_kb / (double)st->nper_worker / 1024.0,
		       st->forks ? st->fork_ns_total / 1e6 / (double)st->forks : 0.0);
	}
	return sidefiles_write_stats(files, st->per_worker, st->nper_worker);
}

/* Run the task phase in the chosen mode.  Returns 0 or -1 (runner error). */
static int run_tasks(const struct cli *cli, struct batch *b, struct sidefiles *files)
{
	struct pool_stats stats;
	size_t count = batch_count(b);

	if (cli->mode == MODE_SERIAL || count == 0) {
		if (cli->verbose)
			warnx_("serial: %zu tasks in this process, threads %zu", count,
			       procstat_threads());
		return serial_run(b);
	}
	size_t workers = choose_workers(cli, count);
	if (cli->mode == MODE_OMP) {
		if (cli->verbose)
			warnx_("omp: %zu threads on %d CPUs", workers, cpu_count());
		return omp_run(b, workers);
	}
	/* A worker's Pss costs milliseconds to read: only when it is shown. */
	struct pool_options opt = { (uint64_t)(cli->timeout_s * 1e9), !cli->no_freeze,
				    cli->verbose || cli->stats_path };
	size_t setup_bytes = arena_used(setup_arena());
	if (setup_bytes == 0)
		setup_bytes = procstat_rss_bytes();
	int rc = pool_run(b, workers, &opt, &stats);
	if (cli->verbose)
		warnx_("fork: %zu workers on %d CPUs, %zu forks, fork() avg %.3f ms max %.3f ms, %zu worker deaths, "
		       "threads at fork %zu",
		       stats.workers, cpu_count(), stats.forks,
		       stats.forks ? stats.fork_ns_total / 1e6 / (double)stats.forks : 0.0,
		       stats.fork_ns_max / 1e6, stats.worker_deaths, stats.threads_at_fork);
	if (report_worker_memory(cli, files, &stats, setup_bytes) != 0 && rc == 0)
		rc = -1;
	free(stats.per_worker);
	return rc;
}

/* Merge is done: print the summary and check stdout really took it.  No
 * summary from a merge that went wrong: it would be wrong too. */
/* Standard output was closed when cowrun started (/dev/null holds its
 * place): the summary has nowhere to go. */
static int stdout_closed;

static int finish_batch(struct batch *b)
{
	if (b->merge_failed) {
		warnx_("%s: no summary: a result could not be merged", b->workload->name);
		return -1;
	}
	if (stdout_closed) {
		warnx_("cannot write the summary to standard output: %s", strerror(EBADF));
		return -1;
	}
	int rc = b->workload->finish(b->state, stdout);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		warnx_("cannot write the summary to standard output: %s", strerror(errno));
		rc = -1;
	}
	if (b->failed > 0)
		warnx_("%s: %zu of %zu tasks failed; the summary covers the other %zu",
		       b->workload->name, b->failed, batch_count(b), b->succeeded);
	return rc;
}

static int exit_status(const struct batch *b, int runner_failed)
{
	if (runner_failed || b->merge_failed)
		return EXIT_RUNNER_ERROR;
	if (b->failed > 100)
		return EXIT_MANY_FAILED;
	return (int)b->failed;
}

/* A stopped run: say what was done and what was not. */
static int report_stop(const struct cli *cli, const struct batch *b)
{
	size_t done = b->succeeded + b->failed, count = batch_count(b);

	char killed[64] = "";

	if (b->killed)
		snprintf(killed, sizeof killed, ", %zu killed while running", b->killed);
	if (signals_count() > 0) {
		warnx_("interrupted: %zu done, %zu running finished, %zu not started%s; %s",
		       b->done_at_stop, done - b->done_at_stop, count - done - b->killed, killed,
		       cli->joblog_path ? "rerun with --resume" : "finished work was not kept (no --joblog)");
		return EXIT_INTERRUPTED + signals_last();
	}
	warnx_("halted (--halt): %zu done, %zu failed, %zu not started%s; no summary",
	       done, b->failed, count - done - b->killed, killed);
	return exit_status(b, 0);
}

/* The temporary side files, for the watchdog to remove if the run ends
 * before it could commit or remove them itself. */
static void note_temporary_files(const struct sidefiles *files)
{
	if (files->paths.save)
		watchdog_note_temp(files->save.temp);
	if (files->paths.timeline)
		watchdog_note_temp(files->timeline.temp);
}

/* The task phase, with its side files.  Returns the exit status. */
static int execute_here(const struct cli *cli, struct batch *b, struct sidefiles *files,
			const char *identity, long long journal_keep, const struct resume_state *resume)
{
	/* Checks first, then sidefiles_open()'s order: a refused run leaves
	 * no output directory and no earlier joblog destroyed. */
	if (outdir_check_reports(b, files) != 0 ||
	    sidefiles_open(files, b, identity, journal_keep, outdir_make, b) != 0)
		return EXIT_USAGE;
	note_temporary_files(files);
	/* --resume with --save-results: the journal's outcomes go into the
	 * saved results too (they are taken once saving is wired), so that
	 * they hold the whole selection, as an uninterrupted run's do. */
	if (resume && resume_apply(resume, cli->resume == 2, b) != 0) {
		warnx_("out of memory for %zu tasks", b->ntasks);
		sidefiles_close(files, b, 0);
		return EXIT_RUNNER_ERROR;
	}
	progress_init(&b->progress, cli->bar, batch_count(b));
	int saved_stdout = taskout_begin();
	b->started_ns = now_ns();
	int failed = run_tasks(cli, b, files) != 0;
	b->ended_ns = now_ns();
	taskout_end(saved_stdout);
	progress_finish(&b->progress, b->succeeded + b->failed, b->failed);
	int complete = !failed && !b->stopped;
	if (sidefiles_close(files, b, complete) != 0)
		failed = 1;
	if (failed)
		return EXIT_RUNNER_ERROR;
	if (b->stopped)
		return report_stop(cli, b);
	if (cli->save_path == NULL && finish_batch(b) != 0)
		failed = 1;
	return exit_status(b, failed);
}

/* Serial and omp modes run the task phase in a child under a watchdog
 * (watchdog.h): a task that ends its process is then named, exit 254.
 * Fork mode's workers are watched by the pool itself. */
static int execute(const struct cli *cli, struct batch *b, struct sidefiles *files,
		   const char *identity, long long journal_keep, const struct resume_state *resume)
{
	int status;

	if (cli->mode != MODE_FORK) {
		size_t count = batch_count(b);
		size_t slots = cli->mode == MODE_OMP && count ? choose_workers(cli, count) : 1;
		if (watchdog_start(b, slots, !cli->no_freeze, &status) != 0) {
			/* The watching parent: the child's status and files. */
			sidefiles_hand_over(files);
			return status;
		}
	}
	status = execute_here(cli, b, files, identity, journal_keep, resume);
	watchdog_done();
	return status;
}

/* The tasks this run executes: --tasks/--shard, minus what --resume
 * settles.  Returns 0 or -1 after a message. */
static int choose_tasks(const struct cli *cli, struct batch *b, const struct resume_state *r,
			size_t **selected)
{
	*selected = NULL;
	if (selection_active(&cli->selection)) {
		if (selection_resolve(&cli->selection, b->ntasks, selected, &b->nselected) != 0)
			return -1;
	} else if (cli->resume) {
		*selected = malloc((b->ntasks + 1) * sizeof **selected);
		if (*selected == NULL)
			return -1;
		for (size_t k = 0; k < b->ntasks; k++)
			(*selected)[k] = k;
		b->nselected = b->ntasks;
	}
	if (cli->resume)
		resume_filter(r, cli->resume == 2, *selected, &b->nselected);
	b->selected = *selected;
	return 0;
}

/* Everything after setup.  Returns the exit status. */
static int run_batch(const struct cli *cli, struct batch *b, struct sidefiles *files)
{
	char *identity = results_identity(COWRUN_VERSION, b->workload, cli->wargc, cli->wargv,
					  b->ntasks, results_context_of(b->workload, b->state));
	struct resume_state resume = { 0 };
	size_t *selected = NULL;
	int rc = EXIT_USAGE;

	b->retries = (unsigned)cli->retries;
	b->halt = cli->halt;
	if (identity == NULL)
		goto out;
	if (cli->resume && resume_load(&resume, cli->joblog_path, b->workload->name, identity,
				       b->ntasks, cli->resume == 2) != 0)
		goto out;
	if (choose_tasks(cli, b, &resume, &selected) != 0)
		goto out;
	/* Saving: the journal's outcomes are applied once the saved results
	 * are open (execute_here); merging: now. */
	int save_resumed = cli->resume && cli->save_path != NULL;
	if (batch_init(b) != 0 ||
	    (cli->resume && !save_resumed && resume_apply(&resume, cli->resume == 2, b) != 0)) {
		warnx_("out of memory for %zu tasks", b->ntasks);
		goto out;
	}
	if (cli->nmerge > 0)
		rc = merge_load(b, cli->merge_paths, cli->nmerge, identity) != 0 ? EXIT_USAGE
							: exit_status(b, finish_batch(b) != 0);
	else
		rc = execute(cli, b, files, identity, resume.journal_found ? resume.keep : 0,
			     save_resumed ? &resume : NULL);
out:
	resume_free(&resume);
	free(selected);
	free(identity);
	return rc;
}

/* The side files the command line names, checked now: a collision is
 * found before the setup, not after it.  Returns 0 or -1 after a message. */
static int check_side_files(const struct cli *cli, struct sidefiles *files)
{
	const struct sidefiles_paths paths = {
		.save = cli->save_path,
		.timeline = cli->timeline_path,
		.joblog = cli->joblog_path,
		.stats = cli->stats_path,
		.resume = cli->resume != 0,
	};

	sidefiles_init(files, &paths);
	return sidefiles_check(files);
}

/* After --help, --list or --version: did standard output take it all?
 * Returns 0, or EXIT_USAGE after one message (a full disk, a closed
 * stdout). */
static int stdout_written(void)
{
	int failed = fflush(stdout) != 0 || ferror(stdout) || stdout_closed;
	int err = stdout_closed ? EBADF : errno;

	if (fclose(stdout) != 0 && !failed) {
		failed = 1;
		err = errno;
	}
	if (!failed)
		return 0;
	warnx_("cannot write to standard output: %s", strerror(err ? err : EIO));
	return EXIT_USAGE;
}

/* The setup: the arena, the workload's setup (or, for --merge, what the
 * saved context rebuilds), the task count, the freeze.  *t0 is when the
 * setup began.  Returns 0 or -1 after a message. */
static int setup_workload(const struct cli *cli, struct batch *b, uint64_t *t0)
{
	if (setup_arena_init(!cli->no_huge_pages) != 0)
		return -1;
	*t0 = now_ns();
	b->workload = cli->workload;
	b->outdir = cli->outdir;
	b->verbose = cli->verbose;
	setup_threads_set(choose_setup_threads(cli));
	/* --merge needs no setup when the workload can rebuild what merge
	 * and finish need from the saved context. */
	int from_context = cli->nmerge > 0 && cli->workload->merge_setup != NULL
		? merge_setup_state(cli->workload, cli->merge_paths, cli->nmerge, cli->wargc, cli->wargv,
				    &b->state)
		: 0;
	if (from_context < 0)
		return -1;
	if (from_context == 0)
		b->state = cli->workload->setup(cli->wargc, cli->wargv);
	if (b->state == NULL)
		return -1;
	b->ntasks = cli->workload->ntasks(b->state);
	uint64_t t1 = now_ns();
	if (!cli->no_freeze && setup_arena_freeze() != 0)
		return -1;
	if (cli->verbose) {
		char arena_line[256];
		warnx_("%s: setup %.3f s, %zu tasks, %u setup thread%s", b->workload->name,
		       (t1 - *t0) / 1e9, b->ntasks, cowrun_setup_threads(), cowrun_setup_threads() == 1 ? "" : "s");
		warnx_("%s%s", arena_describe(setup_arena(), arena_line, sizeof arena_line),
		       cli->no_freeze ? ", writable" : ", frozen");
	}
	return 0;
}

/* ---- cowrun serve: the run's steps as the server's hooks (serve.h) ---- */

/* The server's command line and, in a generation, its setup. */
static struct served {
	struct cli cli;
	struct batch b;
} served;

static int served_setup(void *ctx)
{
	struct served *s = ctx;
	uint64_t t0;

	return setup_workload(&s->cli, &s->b, &t0);
}

/* A request's options over the server's own, checked as if they were on
 * its command line.  Returns 0 or EXIT_USAGE after a message. */
static int apply_request(struct cli *cli, const struct proto_request *rq)
{
	static const int keys[PF_COUNT] = { 'j', 'T', 'S', 'y', 'H', 't', 'o', 'J' };

	cli->seen = 0;
	for (int f = 0; f < PF_COUNT; f++)
		if ((rq->present & (1u << f)) && take_value(keys[f], rq->field[f], cli) != 0)
			return EXIT_USAGE;
	return 0;
}

static size_t served_want(void *ctx, const struct proto_request *rq)
{
	struct served *s = ctx;
	struct cli cli = s->cli;
	size_t *selected = NULL, count = s->b.ntasks;

	if (apply_request(&cli, rq) != 0)
		return 1;   /* its leader says why */
	if (selection_active(&cli.selection)) {
		if (selection_resolve(&cli.selection, s->b.ntasks, &selected, &count) != 0)
			return 1;
		free(selected);
	}
	return count ? jobs_resolve(&cli.jobs, cpu_count(), count) : 0;
}

/* In a leader: the batch, exactly as a fork-mode run's after its setup. */
static int served_run(void *ctx, const struct proto_request *rq, size_t workers,
		      const int files_in[3])
{
	const struct sidefiles_paths paths = {
		.joblog = (rq->present & (1u << PF_JOBLOG)) ? rq->field[PF_JOBLOG] : NULL,
		.by_fd = 1, .joblog_fd = files_in[1], .journal_fd = files_in[2],
	};
	struct served *s = ctx;
	struct cli cli = s->cli;
	struct batch b = { 0 };
	struct sidefiles files;
	int rc = apply_request(&cli, rq);

	if (rc != 0)
		return rc;
	stdout_closed = 0;   /* standard output is the client's now */
	cli.jobs = (struct jobs_spec){ JOBS_ABSOLUTE, workers ? (long long)workers : 1 };
	b.workload = s->b.workload;
	b.state = s->b.state;
	b.ntasks = s->b.ntasks;
	b.verbose = cli.verbose;
	b.outdir = cli.outdir;
	b.outdir_by_fd = 1;
	b.outdir_fd = files_in[0];
	sidefiles_init(&files, &paths);
	rc = run_batch(&cli, &b, &files);
	sidefiles_close(&files, &b, 0);
	batch_free(&b);
	return rc;
}

/* The server's command line: what a batch would be given that only the
 * server can own (its side files) is refused.  Returns 0 or EXIT_USAGE. */
static int check_served(const struct cli *cli)
{
	const char *bad = cli->mode != MODE_FORK ? "--mode other than fork" :
		cli->nmerge ? "--merge" : cli->save_path ? "--save-results" :
		cli->timeline_path ? "--timeline" : cli->joblog_path ? "--joblog" :
		cli->resume ? "--resume" : cli->stats_path ? "--stats" :
		cli->check_args ? "--check-args" : NULL;

	if (bad == NULL)
		return 0;
	warnx_("serve: %s cannot be given to a server (not supported for served batches yet)", bad);
	return EXIT_USAGE;
}

/* cowrun serve [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD [ARGS]. */
static int serve_command(int argc, char **argv)
{
	struct serve_config cfg;
	int taken = serve_parse(argc, argv, &cfg), rc;

	if (taken <= 0)
		return taken == 0 ? stdout_written() : EXIT_USAGE;
	/* The runner's options start after the last serve option, whose
	 * slot stands for argv[0]. */
	rc = parse_cli(argc - taken + 1, argv + taken - 1, &served.cli);
	if (rc != 0)
		return rc > 0 ? rc : stdout_written();
	if ((rc = check_served(&served.cli)) != 0)
		return rc;
	signal(SIGXFSZ, SIG_IGN);
	task_set_current_workload(served.cli.workload->name);
	const struct serve_hooks hooks = { served_setup, served_want, served_run, &served };
	return serve_main(&cfg, &hooks);
}

int main(int argc, char **argv)
{
	struct cli cli;
	struct batch b = { 0 };
	struct sidefiles files;

	stdout_closed = (hold_standard_fds() & (1 << STDOUT_FILENO)) != 0;
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return serve_command(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "submit") == 0)
		return submit_main(argc - 1, argv + 1);
	int rc = parse_cli(argc, argv, &cli);

	if (rc != 0)
		return rc < 0 ? stdout_written() : rc;
	/* Past a file size limit, let write() fail with EFBIG, so the task
	 * fails with a message naming the file instead of dying. */
	signal(SIGXFSZ, SIG_IGN);
	if (signals_install() != 0) {
		warnx_("cannot install signal handlers: %s", strerror(errno));
		return EXIT_USAGE;
	}
	task_set_current_workload(cli.workload->name);
	if (options_want_help(cli.wargc, cli.wargv)) {
		options_print_help(cli.workload, stdout);
		return stdout_written();
	}
	if (cli.check_args)
		return options_check(cli.workload, cli.wargc, cli.wargv) == 0 ? 0 : EXIT_USAGE;
	if (check_side_files(&cli, &files) != 0 ||
	    sidefiles_lock(&files, cli.resume ? cli.workload->name : NULL) != 0)
		return EXIT_USAGE;
	rc = EXIT_USAGE;
	uint64_t t0;
	if (setup_workload(&cli, &b, &t0) != 0)
		goto out;
	rc = run_batch(&cli, &b, &files);
	if (cli.verbose && b.ended_ns)
		warnx_("%s: tasks %.3f s, merge and summary %.3f s, total %.3f s", b.workload->name,
		       (b.ended_ns - b.started_ns) / 1e9, (now_ns() - b.ended_ns) / 1e9,
		       (now_ns() - t0) / 1e9);
	batch_free(&b);
	if (cli.workload->teardown)
		cli.workload->teardown(b.state);
out:
	/* The joblog's lock, held since before the setup, goes last. */
	sidefiles_close(&files, &b, 0);
	setup_arena_destroy();
	return rc;
}
