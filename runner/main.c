/*
 * main.c - the cowrun command line: parse runner options, find the
 * workload, run its setup once, run its tasks in the chosen mode, merge in
 * task order, print its summary, and turn the outcome into an exit status.
 */
#define _GNU_SOURCE
#include "batch.h"
#include "jobs.h"
#include "options.h"
#include "pool.h"
#include "registry.h"
#include "task.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define COWRUN_VERSION "0.1.0"

/* Exit statuses, as GNU Parallel's where it has one. */
enum {
	EXIT_MANY_FAILED = 101,   /* more than 100 tasks failed */
	EXIT_RUNNER_ERROR = 254,  /* the runner failed after tasks began */
	EXIT_USAGE = 255,         /* bad usage or input, before any task ran */
};

enum mode { MODE_FORK, MODE_SERIAL };

struct cli {
	struct jobs_spec jobs;
	enum mode mode;
	const char *outdir;
	int verbose;
	const struct cowrun_workload *workload;
	int wargc;
	char **wargv;
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: cowrun [OPTIONS] WORKLOAD [WORKLOAD OPTIONS]\n"
"\n"
"Run a batch of reports in parallel: do the workload's expensive setup once,\n"
"then fork workers that share it copy-on-write and merge their results in\n"
"task order.  Everything after WORKLOAD goes to the workload\n"
"(cowrun WORKLOAD --help lists its options).\n"
"\n"
"Options:\n"
"  -j, --jobs N        workers: N, N%% of the CPUs, +N or -N relative to the\n"
"                      CPU count, 0 for one per task (default: the CPU count)\n"
"  -m, --mode MODE     fork (default): forked workers after setup;\n"
"                      serial: every task in this process, the reference\n"
"  -o, --outdir DIR    where report files go (default: out)\n"
"      --list          list the built-in workloads\n"
"  -v, --verbose       report setup time, workers and fork time on stderr\n"
"  -h, --help          show this help\n"
"  -V, --version       show the version\n"
"\n"
"Exit status:\n"
"  0        every task succeeded\n"
"  1-100    that many tasks failed (the others' results are merged)\n"
"  101      more than 100 tasks failed\n"
"  254      the runner itself failed after tasks began\n"
"  255      bad usage or input: no task ran\n");
}

static void list_workloads(void)
{
	for (size_t i = 0; registry_workloads[i] != NULL; i++)
		printf("%-10s %s\n", registry_workloads[i]->name, registry_workloads[i]->summary);
}

static int parse_mode(const char *text, enum mode *mode)
{
	if (strcmp(text, "fork") == 0)
		*mode = MODE_FORK;
	else if (strcmp(text, "serial") == 0)
		*mode = MODE_SERIAL;
	else
		return -1;
	return 0;
}

/* Parse the runner's own options.  Returns -1 to exit 0 (help, list,
 * version done), 0 to run, or EXIT_USAGE after a message. */
static int parse_cli(int argc, char **argv, struct cli *cli)
{
	static const struct option longopts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "mode", required_argument, NULL, 'm' },
		{ "outdir", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *why;
	int c;

	*cli = (struct cli){ .jobs = { JOBS_PLUS, 0 }, .mode = MODE_FORK, .outdir = "out" };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:j:m:o:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			if (jobs_parse(optarg, &cli->jobs, &why) != 0) {
				warnx_("-j: bad value '%s': %s", optarg, why);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			if (parse_mode(optarg, &cli->mode) != 0) {
				warnx_("--mode: unknown mode '%s' (fork or serial)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			if (optarg[0] == '\0') {
				warnx_("--outdir: empty directory name");
				return EXIT_USAGE;
			}
			cli->outdir = optarg;
			break;
		case 'v': cli->verbose = 1; break;
		case 'L': list_workloads(); return -1;
		case 'h': usage(stdout); return -1;
		case 'V': printf("cowrun %s\n", COWRUN_VERSION); return -1;
		case ':':
			warnx_("option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			warnx_("unknown option '%s' (see cowrun --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		warnx_("no workload given (see cowrun --list and cowrun --help)");
		return EXIT_USAGE;
	}
	cli->workload = registry_find(argv[optind]);
	if (cli->workload == NULL) {
		warnx_("unknown workload '%s' (see cowrun --list)", argv[optind]);
		return EXIT_USAGE;
	}
	cli->wargc = argc - optind;
	cli->wargv = argv + optind;
	return 0;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A name is used as a file name in OUTDIR: no '/', not hidden (temporary
 * files start with '.'), not empty. */
static int bad_task_name(const char *name)
{
	return name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL ||
	       strlen(name) >= COWRUN_NAME_MAX - 1;
}

/* Check every task name is a safe, distinct file name, so no two reports
 * overwrite each other.  Returns 0 or -1 after a message. */
static int check_task_names(const struct batch *b)
{
	char **names = calloc(b->ntasks, sizeof *names);
	int rc = names ? 0 : -1;

	for (size_t k = 0; rc == 0 && k < b->ntasks; k++) {
		char name[COWRUN_NAME_MAX] = "";
		b->workload->task_name(b->state, k, name, sizeof name);
		if (bad_task_name(name)) {
			cowrun_error("task %zu has name '%s', which cannot be a report file name", k, name);
			rc = -1;
		} else if ((names[k] = strdup(name)) == NULL)
			rc = -1;
	}
	if (rc == 0 && b->ntasks > 1) {
		qsort(names, b->ntasks, sizeof *names, compare_strings);
		for (size_t k = 1; k < b->ntasks && rc == 0; k++)
			if (strcmp(names[k - 1], names[k]) == 0) {
				cowrun_error("two tasks are both named '%s'", names[k]);
				rc = -1;
			}
	}
	for (size_t k = 0; names && k < b->ntasks; k++)
		free(names[k]);
	free(names);
	return rc;
}

/* Everything between setup and the task phase that can refuse the run. */
static int prepare_outputs(struct batch *b)
{
	if (!(b->workload->flags & COWRUN_WRITES_REPORTS))
		return 0;
	if (check_task_names(b) != 0)
		return -1;
	if (make_dirs(b->outdir) != 0) {
		warnx_("cannot create output directory '%s': %s", b->outdir, strerror(errno));
		return -1;
	}
	return 0;
}

static size_t choose_workers(const struct cli *cli, size_t ntasks)
{
	size_t workers = jobs_resolve(&cli->jobs, cpu_count(), ntasks);
	size_t max = pool_max_workers();

	if (workers > max) {
		if (cli->jobs.kind != JOBS_PER_TASK)
			warnx_("only enough file descriptors for %zu workers: using %zu", max, max);
		workers = max;
	}
	return workers;
}

/* Run the task phase in the chosen mode.  Returns 0 or -1 (runner error). */
static int run_tasks(const struct cli *cli, struct batch *b)
{
	struct pool_stats stats;

	if (cli->mode == MODE_SERIAL || b->ntasks == 0) {
		if (cli->verbose)
			warnx_("serial: %zu tasks in this process", b->ntasks);
		return serial_run(b);
	}
	size_t workers = choose_workers(cli, b->ntasks);
	int rc = pool_run(b, workers, &stats);
	if (cli->verbose)
		warnx_("fork: %zu workers on %d CPUs, %zu forks, fork() avg %.3f ms max %.3f ms, %zu worker deaths",
		       stats.workers, cpu_count(), stats.forks,
		       stats.forks ? stats.fork_ns_total / 1e6 / (double)stats.forks : 0.0,
		       stats.fork_ns_max / 1e6, stats.worker_deaths);
	return rc;
}

/* Merge is done: print the summary and check stdout really took it. */
static int finish_batch(struct batch *b)
{
	int rc = b->workload->finish(b->state, stdout);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		warnx_("cannot write the summary to standard output: %s", strerror(errno));
		rc = -1;
	}
	if (b->failed > 0)
		warnx_("%s: %zu of %zu tasks failed; the summary covers the other %zu",
		       b->workload->name, b->failed, b->ntasks, b->succeeded);
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

int main(int argc, char **argv)
{
	struct cli cli;
	struct batch b = { 0 };
	int rc = parse_cli(argc, argv, &cli);

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	/* Past a file size limit, let write() fail with EFBIG, so the task
	 * fails with a message naming the file instead of dying. */
	signal(SIGXFSZ, SIG_IGN);
	task_set_current_workload(cli.workload->name);
	if (options_want_help(cli.wargc, cli.wargv)) {
		options_print_help(cli.workload, stdout);
		return 0;
	}
	uint64_t t0 = now_ns();
	b.workload = cli.workload;
	b.outdir = cli.outdir;
	b.verbose = cli.verbose;
	b.state = cli.workload->setup(cli.wargc, cli.wargv);
	if (b.state == NULL)
		return EXIT_USAGE;
	b.ntasks = cli.workload->ntasks(b.state);
	uint64_t t1 = now_ns();
	if (cli.verbose)
		warnx_("%s: setup %.3f s, %zu tasks", b.workload->name, (t1 - t0) / 1e9, b.ntasks);
	if (prepare_outputs(&b) != 0 || batch_init(&b) != 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	int runner_failed = run_tasks(&cli, &b) != 0;
	uint64_t t2 = now_ns();
	if (!runner_failed && finish_batch(&b) != 0)
		runner_failed = 1;
	if (cli.verbose)
		warnx_("%s: tasks %.3f s, merge and summary %.3f s, total %.3f s",
		       b.workload->name, (t2 - t1) / 1e9, (now_ns() - t2) / 1e9, (now_ns() - t0) / 1e9);
	rc = exit_status(&b, runner_failed);
out:
	batch_free(&b);
	if (cli.workload->teardown)
		cli.workload->teardown(b.state);
	return rc;
}
