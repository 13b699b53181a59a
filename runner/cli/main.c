/*
 * main.c - the cowrun command line: parse the runner's options into a
 * run's settings (run/config.h), find the workload, and hand over: to
 * run_direct() (run/run.h) for a run, to serve_workload() for `cowrun
 * serve`, to submit_main() for `cowrun submit`.
 */
#define _GNU_SOURCE
#include "files/results.h"
#include "os/util.h"
#include "os/fileops.h"
#include "run/config.h"
#include "run/run.h"
#include "serve/serve.h"
#include "workload/registry.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
"      --not-input OPT the workload's option --OPT names no input file (an\n"
"                      output it writes): not taken for one; repeatable\n"
"      --clean         remove the stale reports in the output directory: those\n"
"                      an earlier run's manifest names that no task writes now\n"
"      --report-filter CMD  pass each report through CMD (its stdin the report,\n"
"                      its stdout the report file); the task fails if CMD does\n"
"      --report-to CMD give each finished report to CMD (a printer, a mailer)\n"
"                      and keep no file; the task succeeds only if CMD does;\n"
"                      with --retries or --resume, at least once\n"
"      --report-suffix SUF  append SUF to every report's file name (.gz)\n"
"                      In CMD: {} the complete report's path, {/} its name,\n"
"                      {#} the task's number from 1, {%%} the worker's slot,\n"
"                      1 to -j.  Shell syntax runs it under sh -c, values\n"
"                      quoted (a '|' pipeline refused); else it runs directly\n"
"      --seed N        the run seed each task's seed is derived from, with the\n"
"                      task's number (default 0): the same draws at every -j,\n"
"                      in every mode, on a retry, a resume or a shard\n"
"      --retries N     give a failed task N more attempts, each on a fresh fork,\n"
"                      in a slot ({%%}) that has not failed it while one lives\n"
"      --retry-delay SECS  wait SECS before a task's retry, doubling with each\n"
"                      attempt, at most 10 x SECS\n"
"      --halt WHEN     stop early: never (default), now,fail=N, soon,fail=N,\n"
"                      now,fail=P%%, soon,success=N (now kills running tasks,\n"
"                      soon lets them finish)\n"
"      --timeout SECS  fail a task running longer (SIGTERM, SIGKILL 2 s later)\n"
"      --tasks-per-worker N  a worker that has run N tasks exits and a fresh\n"
"                      fork of the parent takes its place: 1 gives every task\n"
"                      the setup's state as it was (fork mode only)\n"
"      --memfree SIZE  hand out no task while less memory than SIZE is\n"
"                      available (MemAvailable, cgroup limits); below half\n"
"                      of it, kill the worker that started its task last and\n"
"                      run that task again (no retry spent; never the last\n"
"                      worker); SIZE like 2G (1024s) or 2g (1000s)\n"
"      --bar[=always]  progress line on stderr (only on a terminal unless always)\n"
"      --no-huge-pages give the setup arena 4 KiB pages (to compare fork cost)\n"
"      --no-freeze     leave the setup arena writable after setup\n"
"      --stats FILE    one CSV row per worker: fork time, faults, Pss, copied memory\n"
"      --metrics FILE  the run's figures in Prometheus text format (for the node\n"
"                      exporter's textfile collector), written whole at the end\n"
"                      and every 30 s while the run goes on\n"
"      --log-time      begin each of the runner's stderr lines with an ISO 8601\n"
"                      time (UTC) and the run id (run=...), as the metrics name it\n"
"      --workload FILE run an out-of-tree workload, a shared object built\n"
"                      against cowrun.h, instead of a WORKLOAD name: the\n"
"                      last runner option; what follows is the workload's\n"
"      --list          list the built-in workloads\n"
"      --check-args    only check that the workload exists and its options\n"
"                      parse (no setup, no task): exit 0, or 255 and why\n"
"      --dry-run       print the plan without the setup: the tasks (when the\n"
"                      workload can name them without it), workers, setup\n"
"                      threads, memory, every file it would create, replace\n"
"                      or append to; exit as the run would start (0 or 255)\n"
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

/* --workload FILE.so: every argument after the options is the plugin's.
 * Its argv[0] is its name, in the slot of the last option (already
 * parsed), so a plugin sees the same argv a built-in does. */
static int take_plugin(int argc, char **argv, struct run_config *cfg)
{
	cfg->workload = registry_load_plugin(cfg->plugin_path);
	if (cfg->workload == NULL)
		return EXIT_USAGE;
	argv[optind - 1] = (char *)cfg->workload->name;
	cfg->wargc = argc - optind + 1;
	cfg->wargv = argv + optind - 1;
	return run_config_check(cfg);
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
static int parse_cli(int argc, char **argv, struct run_config *cfg)
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
		{ "retry-delay", required_argument, NULL, 'D' },
		{ "tasks-per-worker", required_argument, NULL, 'k' },
		{ "memfree", required_argument, NULL, 'K' },
		{ "bar", optional_argument, NULL, 'B' },
		{ "no-huge-pages", no_argument, NULL, 'N' },
		{ "no-freeze", no_argument, NULL, 'Z' },
		{ "stats", required_argument, NULL, 'P' },
		{ "metrics", required_argument, NULL, 'X' },
		{ "log-time", no_argument, NULL, 'G' },
		{ "workload", required_argument, NULL, 'W' },
		{ "not-input", required_argument, NULL, 'I' },
		{ "clean", no_argument, NULL, 'C' },
		{ "report-filter", required_argument, NULL, 'e' },
		{ "report-to", required_argument, NULL, 'd' },
		{ "report-suffix", required_argument, NULL, 'x' },
		{ "seed", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "check-args", no_argument, NULL, 'A' },
		{ "dry-run", no_argument, NULL, 'Q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	run_config_init(cfg);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:j:m:o:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'F': cfg->force = 1; break;
		case 'r': cfg->resume = cfg->resume ? cfg->resume : 1; break;
		case 'f': cfg->resume = 2; break;
		case 'N': cfg->no_huge_pages = 1; break;
		case 'Z': cfg->no_freeze = 1; break;
		case 'v': cfg->verbose = 1; break;
		case 'l': registry_list(stdout); return -1;
		case 'h': usage(stdout); return -1;
		case 'V': cfg->show_version = 1; break;
		case 'A': cfg->check_args = 1; break;
		case 'Q': cfg->dry_run = 1; break;
		case 'G': cfg->log_time = 1; break;
		case 'C': cfg->clean = 1; break;
		case ':':
			warnx_("option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			warnx_("unknown option '%s' (see cowrun --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if ((rc = run_config_set(cfg, c, optarg)) != 0)
				return rc;
		}
		/* --workload FILE stands where the WORKLOAD name would:
		 * what follows it is the workload's. */
		if (c == 'W')
			break;
	}
	if (cfg->show_version) {
		print_version(cfg->verbose);
		return -1;
	}
	if (cfg->plugin_path)
		return take_plugin(argc, argv, cfg);
	if (optind >= argc) {
		warnx_("no workload given (see cowrun --list and cowrun --help)");
		return EXIT_USAGE;
	}
	cfg->workload = registry_find(argv[optind]);
	if (cfg->workload == NULL)
		return EXIT_USAGE;
	cfg->wargc = argc - optind;
	cfg->wargv = argv + optind;
	return run_config_check(cfg);
}

/* cowrun serve [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD [ARGS]. */
static int serve_command(int argc, char **argv)
{
	static struct run_config cfg;   /* 32 KiB of --merge slots: not on the stack */
	struct serve_config scfg;
	int taken = serve_parse(argc, argv, &scfg), rc;

	if (taken <= 0)
		return taken == 0 ? run_stdout_written() : EXIT_USAGE;
	/* The runner's options start after the last serve option, whose
	 * slot stands for argv[0]. */
	rc = parse_cli(argc - taken + 1, argv + taken - 1, &cfg);
	if (rc != 0)
		return rc > 0 ? rc : run_stdout_written();
	return serve_workload(&scfg, &cfg);
}

int main(int argc, char **argv)
{
	static struct run_config cfg;

	run_note_stdout_closed((hold_standard_fds() & (1 << STDOUT_FILENO)) != 0);
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return serve_command(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "submit") == 0)
		return submit_main(argc - 1, argv + 1);
	int rc = parse_cli(argc, argv, &cfg);

	if (rc != 0)
		return rc < 0 ? run_stdout_written() : rc;
	if (cfg.dry_run) {
		rc = run_dry(&cfg);
		return rc != 0 ? rc : run_stdout_written();
	}
	return run_direct(&cfg);
}
