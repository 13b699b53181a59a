/*
 * main.c - the cowrun command line: parse runner options, find the
 * workload, run its setup once, run the selected tasks in the chosen mode
 * (or load saved results), merge in task order, print its summary, and
 * turn the outcome into an exit status.
 */
#define _GNU_SOURCE
#include "batch.h"
#include "jobs.h"
#include "omprun.h"
#include "options.h"
#include "pool.h"
#include "registry.h"
#include "results.h"
#include "selection.h"
#include "task.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COWRUN_VERSION "0.2.0"
#define MAX_MERGE_FILES 4096

/* Exit statuses, as GNU Parallel's where it has one. */
enum {
	EXIT_MANY_FAILED = 101,   /* more than 100 tasks failed */
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
	struct selection selection;
	const char *save_path;    /* --save-results */
	const char *timeline_path;
	const char *merge_paths[MAX_MERGE_FILES];
	size_t nmerge;
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
	static const char *const names[] = { "fork", "serial", "omp" };

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(text, names[i]) == 0) {
			*mode = (enum mode)i;
			return 0;
		}
	return -1;
}

/* The options that carry a value, checked as they are parsed.  Returns 0
 * or EXIT_USAGE after a message. */
static int take_value(int c, const char *arg, struct cli *cli)
{
	const char *why;

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
	case 'M':
		if (cli->nmerge < MAX_MERGE_FILES) {
			cli->merge_paths[cli->nmerge++] = arg;
			return 0;
		}
		warnx_("--merge: more than %d files", MAX_MERGE_FILES);
		return EXIT_USAGE;
	}
	if (arg[0] == '\0') {
		warnx_("%s: empty file name", c == 'o' ? "--outdir" :
		       c == 'R' ? "--save-results" : "--timeline");
		return EXIT_USAGE;
	}
	switch (c) {
	case 'o': cli->outdir = arg; break;
	case 'R': cli->save_path = arg; break;
	case 'L': cli->timeline_path = arg; break;
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
	if (cli->mode == MODE_OMP && (cli->workload->flags & COWRUN_NOT_THREAD_SAFE) && !cli->force) {
		warnx_("%s is not thread-safe: --mode omp would give wrong results (use fork, or --force to see it happen)",
		       cli->workload->name);
		return EXIT_USAGE;
	}
	return 0;
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
		{ "list", no_argument, NULL, 'l' },
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
		case 'v': cli->verbose = 1; break;
		case 'l': list_workloads(); return -1;
		case 'h': usage(stdout); return -1;
		case 'V': printf("cowrun %s\n", COWRUN_VERSION); return -1;
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
	return check_combinations(cli);
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

	if (cli->mode == MODE_FORK && workers > max) {
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
	size_t count = batch_count(b);

	if (cli->mode == MODE_SERIAL || count == 0) {
		if (cli->verbose)
			warnx_("serial: %zu tasks in this process", count);
		return serial_run(b);
	}
	size_t workers = choose_workers(cli, count);
	if (cli->mode == MODE_OMP) {
		if (cli->verbose)
			warnx_("omp: %zu threads on %d CPUs", workers, cpu_count());
		return omp_run(b, workers);
	}
	int rc = pool_run(b, workers, &stats);
	if (cli->verbose)
		warnx_("fork: %zu workers on %d CPUs, %zu forks, fork() avg %.3f ms max %.3f ms, %zu worker deaths",
		       stats.workers, cpu_count(), stats.forks,
		       stats.forks ? stats.fork_ns_total / 1e6 / (double)stats.forks : 0.0,
		       stats.fork_ns_max / 1e6, stats.worker_deaths);
	return rc;
}

static int has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n >= s && strcmp(name + n - s, suffix) == 0;
}

static int compare_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int select_results_files(const struct dirent *d)
{
	return d->d_name[0] != '.' && has_suffix(d->d_name, ".res");
}

/* Load every *.res file of a directory, in name order. */
static int load_directory(struct batch *b, const char *dir, const char *identity)
{
	struct dirent **names;
	int n = scandir(dir, &names, select_results_files, compare_names);
	int rc = 0;

	if (n < 0) {
		warnx_("merge: cannot read directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (n == 0) {
		warnx_("merge: directory '%s' holds no .res files", dir);
		rc = -1;
	}
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
		if (rc == 0 && results_load(b, path, identity) != 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

/* Say which tasks no file held (the first few), and fail. */
static int check_nothing_missing(const struct batch *b)
{
	char list[256] = "";
	size_t missing = 0, used = 0;

	for (size_t k = 0; k < b->ntasks; k++) {
		if (!batch_pending(b, k))
			continue;
		if (missing++ < 10 && used < sizeof list - 24)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%zu",
						 used ? "," : "", k);
	}
	if (missing == 0)
		return 0;
	warnx_("merge: %zu of %zu tasks are in no results file (%s%s)", missing, b->ntasks,
	       list, missing > 10 ? ",..." : "");
	return -1;
}

/* --merge: load saved results instead of running tasks.  Returns 0 or -1
 * after a message. */
static int merge_saved(const struct cli *cli, struct batch *b, const char *identity)
{
	for (size_t i = 0; i < cli->nmerge; i++) {
		struct stat st;
		const char *path = cli->merge_paths[i];
		int rc = stat(path, &st) == 0 && S_ISDIR(st.st_mode)
			? load_directory(b, path, identity)
			: results_load(b, path, identity);
		if (rc != 0)
			return -1;
	}
	return check_nothing_missing(b);
}

/* Merge is done: print the summary and check stdout really took it.  No
 * summary from a merge that went wrong: it would be wrong too. */
static int finish_batch(struct batch *b)
{
	if (b->merge_failed) {
		warnx_("%s: no summary: a result could not be merged", b->workload->name);
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

/* --timeline goes to a temporary file renamed at the end, like every file
 * cowrun writes. */
struct timeline_file {
	FILE *f;
	char temp[PATH_MAX];
};

static int timeline_open(struct timeline_file *t, const char *path)
{
	snprintf(t->temp, sizeof t->temp, "%s.%ld.tmp", path, (long)getpid());
	t->f = fopen(t->temp, "we");
	if (t->f == NULL) {
		warnx_("cannot create '%s': %s", t->temp, strerror(errno));
		return -1;
	}
	fprintf(t->f, "task,name,worker,pid,start_s,end_s,status\n");
	return 0;
}

static int timeline_close(struct timeline_file *t, const char *path, int keep)
{
	int rc = 0;

	if (t->f == NULL)
		return 0;
	if (fclose(t->f) != 0 || (keep && rename(t->temp, path) != 0)) {
		warnx_("cannot write '%s': %s", path, strerror(errno));
		rc = -1;
	}
	if (!keep || rc != 0)
		unlink(t->temp);
	t->f = NULL;
	return rc;
}

/* The task phase with its optional side files.  Returns 0, -1 if the
 * runner failed, or EXIT_USAGE if a side file cannot be created (no task
 * ran); a message was printed. */
static int execute(const struct cli *cli, struct batch *b, const char *identity)
{
	struct timeline_file timeline = { 0 };
	int rc;

	if (cli->save_path) {
		b->save = malloc(sizeof *b->save);
		if (b->save == NULL)
			warnx_("out of memory");
		if (b->save == NULL || results_create(b->save, cli->save_path, identity) != 0)
			goto refused;
	}
	if (cli->timeline_path && timeline_open(&timeline, cli->timeline_path) != 0) {
		if (b->save)
			results_abort(b->save);
		goto refused;
	}
	b->timeline = timeline.f;
	b->started_ns = now_ns();
	rc = run_tasks(cli, b);
	b->ended_ns = now_ns();
	b->timeline = NULL;
	if (timeline_close(&timeline, cli->timeline_path, rc == 0) != 0)
		rc = -1;
	if (b->save == NULL)
		return rc == 0 ? finish_batch(b) : rc;
	if (rc == 0 && !b->merge_failed)
		rc = results_commit(b->save);
	else
		results_abort(b->save);
	free(b->save);
	b->save = NULL;
	return rc;
refused:
	free(b->save);
	b->save = NULL;
	return EXIT_USAGE;
}

/* Everything after setup.  Returns the exit status. */
static int run_batch(const struct cli *cli, struct batch *b)
{
	char *identity = results_identity(b->workload->name, cli->wargc, cli->wargv, b->ntasks);
	size_t *selected = NULL;
	int rc = EXIT_USAGE;

	if (identity == NULL)
		goto out;
	if (selection_active(&cli->selection)) {
		if (selection_resolve(&cli->selection, b->ntasks, &selected, &b->nselected) != 0)
			goto out;
		b->selected = selected;
	}
	if (cli->nmerge == 0 && prepare_outputs(b) != 0)
		goto out;
	if (batch_init(b) != 0) {
		warnx_("out of memory for %zu tasks", b->ntasks);
		goto out;
	}
	int runner_failed;
	if (cli->nmerge > 0) {
		if (merge_saved(cli, b, identity) != 0)
			goto out;
		runner_failed = finish_batch(b) != 0;
	} else {
		int result = execute(cli, b, identity);
		if (result == EXIT_USAGE)
			goto out;
		runner_failed = result != 0;
	}
	rc = exit_status(b, runner_failed);
out:
	free(selected);
	free(identity);
	return rc;
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
	rc = run_batch(&cli, &b);
	if (cli.verbose && b.ended_ns)
		warnx_("%s: tasks %.3f s, merge and summary %.3f s, total %.3f s", b.workload->name,
		       (b.ended_ns - b.started_ns) / 1e9, (now_ns() - b.ended_ns) / 1e9,
		       (now_ns() - t0) / 1e9);
	batch_free(&b);
	if (cli.workload->teardown)
		cli.workload->teardown(b.state);
	return rc;
}
