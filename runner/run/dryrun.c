/*
 * dryrun.c - cowrun --dry-run: what a run would do, without its setup and
 * without writing anything: the tasks (when the workload can name them
 * without its setup: the plan() member), the workers and setup threads,
 * the memory, every file it would create, replace or append to, and the
 * checks a real run makes before its setup, with those its setup makes of
 * the workload's options where plan() repeats them.  See run.h.
 */
#define _GNU_SOURCE
#include "run.h"
#include "manifest.h"
#include "inputs.h"
#include "outdir.h"
#include "resume.h"
#include "engine/task.h"
#include "os/workmsg.h"
#include "os/command.h"
#include "os/memavail.h"
#include "os/util.h"
#include "workload/options.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAMES_SHOWN 3   /* task names listed at each end of the list */

/* "create", "replace" or "append" for a file the run would write at
 * `path`: what is there now decides. */
static const char *fate_of(const char *path, int appends)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return "create";
	return appends ? "append" : "replace";
}

static void file_line(const char *path, const char *what, int appends)
{
	printf("  %-8s %s%s%s\n", fate_of(path, appends), path, what[0] ? "  " : "", what);
}

/* The selected tasks of a planned state: their count, the first and last
 * names.  Returns the count, or (size_t)-1 after a message. */
static size_t show_tasks(const struct run_config *cfg, const void *plan, size_t **selected)
{
	const struct cowrun_workload *w = cfg->workload;
	size_t ntasks = w->ntasks(plan), count = ntasks;
	char name[COWRUN_NAME_MAX];

	*selected = NULL;
	if (selection_active(&cfg->selection) &&
	    selection_resolve(&cfg->selection, ntasks, selected, &count) != 0)
		return (size_t)-1;
	printf("tasks      %zu of %zu%s", count, ntasks, count ? ":" : "");
	for (size_t i = 0; i < count; i++) {
		if (i == NAMES_SHOWN && count > 2 * NAMES_SHOWN) {
			printf(" ...");
			i = count - NAMES_SHOWN;
		}
		w->task_name(plan, *selected ? (*selected)[i] : i, name, sizeof name);
		printf(" %s", name);
	}
	printf("%s\n", cfg->resume ? "\n           (less those the joblog's journal settles, "
				     "known once the setup's identity is checked)" : "");
	return count;
}

/* The commands each report goes through or to, as they would run for
 * the first task ({} {/} {#} {%} filled in for task 0 on slot 1). */
static void show_commands(const struct report_route *r)
{
	const struct command *cmds[2] = { r->filter, r->sink };
	static const char *const labels[2] = { "filter", "report-to" };
	const struct command_values first = { "NAME", 1, 1, "PATH", NULL };

	for (int i = 0; i < 2; i++) {
		if (cmds[i] == NULL)
			continue;
		char *shown = command_expand(cmds[i], &first);
		printf("%-10s %s  (%s; for the first report, NAME its file, PATH that file's "
		       "private path)\n", labels[i],
		       shown ? shown : command_text(cmds[i]),
		       command_uses_shell(cmds[i]) ? "under /bin/sh -c" : "run directly");
		free(shown);
	}
}

/* Every file the run would write, and how. */
static void show_files(const struct run_config *cfg, const void *plan, const size_t *selected,
		       size_t count)
{
	const struct cowrun_workload *w = cfg->workload;
	char path[PATH_MAX];

	printf("files\n");
	if ((w->flags & COWRUN_WRITES_REPORTS) && plan) {
		char name[COWRUN_NAME_MAX];
		printf("  %-8s %s  (the output directory)\n",
		       access(cfg->outdir, F_OK) == 0 ? "use" : "create", cfg->outdir);
		for (size_t i = 0; i < count && !cfg->report_to; i++) {
			char file[REPORT_FILE_MAX];
			task_report_file_of(w, plan, selected ? selected[i] : i, file, sizeof file);
			snprintf(path, sizeof path, "%s/%s", cfg->outdir, file);
			file_line(path, cfg->report_filter ? "(through --report-filter)" : "", 0);
		}
		if (cfg->report_to)
			printf("  %-8s %zu reports to --report-to, none kept in %s\n", "send",
			       count, cfg->outdir);
		manifest_name(w->name, inputs_script(), &cfg->selection, name, sizeof name);
		snprintf(path, sizeof path, "%s/%s", cfg->outdir, name);
		if (!cfg->report_to)
			file_line(path, "(the run's manifest)", 0);
		else if (access(path, F_OK) == 0)   /* manifest.c's routed_finish() */
			file_line(path, "(the run's manifest, routed: the earlier reports it names "
				  "of the tasks sent are removed)", 0);
	} else if (w->flags & COWRUN_WRITES_REPORTS) {
		printf("  %-8s %s/...  (reports named after the setup)\n",
		       access(cfg->outdir, F_OK) == 0 ? "use" : "create", cfg->outdir);
	}
	const char *joblog = cfg->joblog_path;
	if (joblog) {
		int plus = joblog[0] == '+';
		file_line(joblog + plus, "(the joblog)", plus || cfg->resume);
		file_line(resume_journal_path(joblog + plus, path, sizeof path), "(its journal)",
			  plus || cfg->resume);
	}
	const char *side[][2] = { { cfg->save_path, "(--save-results)" },
				  { cfg->timeline_path, "(--timeline)" },
				  { cfg->stats_path, "(--stats)" },
				  { cfg->metrics_path, "(--metrics)" } };
	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++)
		if (side[i][0])
			file_line(side[i][0], side[i][1], 0);
}

static void show_resources(const struct run_config *cfg, size_t count, int known)
{
	size_t avail = mem_available_bytes();

	if (cfg->mode == MODE_SERIAL)
		printf("workers    none: serial mode runs every task in this process\n");
	else
		printf("workers    %s%zu %s on %d CPUs\n", known ? "" : "up to ",
		       run_choose_workers(cfg, known ? (count ? count : 1) : (size_t)1 << 30),
		       cfg->mode == MODE_OMP ? "OpenMP threads" : "forked workers", cpu_count());
	printf("setup      %u thread%s\n", run_choose_setup_threads(cfg),
	       run_choose_setup_threads(cfg) == 1 ? "" : "s");
	printf("memory     %.1f GiB available", (double)avail / (1 << 30));
	if (cfg->memfree)
		printf("; --memfree %.1f GiB: %s", (double)cfg->memfree / (1 << 30),
		       avail < cfg->memfree ? "no task would start now" : "tasks would start now");
	printf("\n");
}


/* " (built in)", or " from FILE": --workload's, or the bundled library
 * the workload's table lives in. */
static void print_origin(const struct cowrun_workload *w, const char *plugin_path)
{
	Dl_info table, here;

	if (plugin_path != NULL)
		printf(" from %s\n", plugin_path);
	else if (dladdr(w, &table) != 0 && dladdr((void *)print_origin, &here) != 0 &&
		 table.dli_fbase != here.dli_fbase && table.dli_fname != NULL)
		printf(" (bundled) from %s\n", table.dli_fname);
	else
		printf(" (built in)\n");
}
/* The workload's plan(): 1 with *plan set (the caller tears it down), 0
 * if its tasks are known only after the setup, -1 if it refused the
 * options as its setup would (its message printed).  A plan that returns
 * NULL tells the last two apart only by whether it called cowrun_error(). */
static int make_plan(const struct run_config *cfg, void **plan)
{
	const struct cowrun_workload *w = cfg->workload;
	unsigned long errors = workmsg_errors_reported();

	*plan = NULL;
	if (cfg->nmerge > 0 || w->abi_version < 3 || w->plan == NULL)
		return 0;
	*plan = w->plan(cfg->wargc, cfg->wargv);
	if (*plan)
		return 1;
	return workmsg_errors_reported() == errors ? 0 : -1;
}

int run_dry(const struct run_config *cfg)
{
	const struct cowrun_workload *w = cfg->workload;
	struct sidefiles files;
	struct report_route route = { NULL, NULL, NULL };
	size_t *selected = NULL, count = 0;
	void *plan = NULL;
	int rc = EXIT_USAGE;

	workmsg_set_workload(w->name);   /* cowrun_error()'s messages */
	workmsg_set_verbosity(cfg->verbose);
	task_set_seed(cfg->seed);   /* plan() may order its names by hash */
	printf("cowrun --dry-run: the plan; nothing is set up, run or written\n");
	printf("workload   %s", w->name);
	print_origin(w, cfg->plugin_path);
	if (options_check(w, cfg->wargc, cfg->wargv) != 0 ||
	    run_check_report_commands(cfg) != 0 ||
	    run_check_side_files(cfg, &files) != 0 ||
	    ((w->flags & COWRUN_WRITES_REPORTS) && outdir_check_existing(cfg->outdir) != 0) ||
	    (cfg->nmerge == 0 && run_check_inputs(cfg) != 0))   /* a merge may need none */
		goto refused;
	if (run_route_reports(cfg, &route) != 0 || make_plan(cfg, &plan) < 0 ||
	    (plan && (count = show_tasks(cfg, plan, &selected)) == (size_t)-1))
		goto refused;
	if (!plan)
		printf("tasks      %s\n", cfg->nmerge ? "none: --merge runs no task"
			: "known after the setup (the workload names them from what it builds)");
	show_resources(cfg, count, plan != NULL);
	if (cfg->nmerge == 0) {
		show_commands(&route);
		show_files(cfg, plan, selected, count);
	}
	printf("would      start\n");
	rc = 0;
	goto out;
refused:
	printf("would      refuse (the message is on standard error)\n");
out:
	if (plan && w->teardown)
		w->teardown(plan);
	run_unroute_reports(&route);
	free(selected);
	return rc;
}
