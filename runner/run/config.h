/*
 * config.h - a run's settings: what the runner's options say (-j, --mode,
 * the files it reads and writes, retries, --halt), set one option at a
 * time and then checked as a whole.  The command line (cli/main.c) and a
 * served request (serve/proto.c) both set them through the option table
 * (options_table.h: run_config_set()), so an option means the same
 * wherever it is given.
 */
#ifndef COWRUN_CONFIG_H
#define COWRUN_CONFIG_H

#include "cowrun.h"
#include "engine/halt.h"
#include "engine/jobs.h"
#include "engine/selection.h"

#include <stddef.h>
#include <stdint.h>

#define COWRUN_VERSION "0.5.1"
#define MAX_MERGE_FILES 4096
#define MAX_NOT_INPUTS 64

/* Exit statuses, as GNU Parallel's where it has one. */
enum {
	EXIT_MANY_FAILED = 101,   /* more than 100 tasks failed */
	EXIT_INTERRUPTED = 128,   /* plus the signal: 130 SIGINT, 143 SIGTERM */
	EXIT_RUNNER_ERROR = 254,  /* the runner failed after tasks began */
	EXIT_USAGE = 255,         /* bad usage or input, before any task ran */
};

enum mode { MODE_FORK, MODE_SERIAL, MODE_OMP };

struct run_config {
	struct jobs_spec jobs;
	enum mode mode;
	int force;                /* omp mode even if not thread-safe */
	const char *outdir;
	int verbose;
	int show_version;         /* --version (with -v: what a merge needs) */
	int check_args;           /* --check-args: parse the workload's options only */
	int dry_run;              /* --dry-run: the plan, nothing run or written */
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
	double retry_delay_s;     /* --retry-delay SECS; 0: a retry is queued at once */
	long long tasks_per_worker; /* --tasks-per-worker N; 0: a worker runs any number */
	size_t memfree;           /* --memfree bytes; 0: off */
	int bar;                  /* 0 off, 1 on a terminal, 2 always */
	int no_huge_pages, no_freeze;
	const char *stats_path;   /* --stats */
	const char *metrics_path; /* --metrics: Prometheus text format */
	int log_time;             /* --log-time: time stamps and the run id on stderr */
	const char *plugin_path;  /* --workload FILE.so */
	const char *not_inputs[MAX_NOT_INPUTS]; /* --not-input OPTION, repeatable */
	size_t nnot_inputs;
	int clean;                /* --clean: remove stale reports */
	const char *report_filter; /* --report-filter CMD: each report through it */
	const char *report_to;    /* --report-to CMD: each report to it, not kept */
	const char *report_suffix; /* --report-suffix SUF: appended to report names */
	uint64_t seed;            /* --seed: the run seed (0 unless given) */
	int seed_given;
	int reap_later;           /* a served batch: the workers' exits are
				   * reaped after the reply (pool_reap_later()) */
	unsigned long long seen;  /* options that may be given once: a bit
				   * per entry of options_table.h's table */
	const struct cowrun_workload *workload;
	int wargc;
	char **wargv;
};

/* The defaults: -j the CPUs, fork mode, reports in out/, nothing else. */
void run_config_init(struct run_config *cfg);

/* Options that only make sense together, or not at all together, once
 * the workload is known.  Returns 0 or EXIT_USAGE after a message. */
int run_config_check(const struct run_config *cfg);

#endif
