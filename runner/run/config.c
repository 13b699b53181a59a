/*
 * config.c - a run's settings: their defaults, and the checks of them as
 * a whole (run_config_check); each option's parser, which sets one, is
 * in the option table (options_table.c).
 */
#include "config.h"
#include "os/util.h"

#include <string.h>

void run_config_init(struct run_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->jobs = (struct jobs_spec){ JOBS_PLUS, 0 };
	cfg->mode = MODE_FORK;
	cfg->outdir = "out";
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
