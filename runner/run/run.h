/*
 * run.h - a run's steps once its options are known, in order: the
 * workload's setup (or, for --merge, what its saved context rebuilds),
 * the tasks to run (--tasks, --shard, minus what --resume settles), the
 * task phase in the chosen mode with its side files, the merge in task
 * order, the summary, and the exit status.  A direct run (cli/main.c)
 * takes them all; a served batch (serve/hooks.c) runs the setup in its
 * generation and run_batch() in each leader.
 */
#ifndef COWRUN_RUN_H
#define COWRUN_RUN_H

#include "config.h"
#include "sidefiles.h"
#include "engine/batch.h"

#include <stdint.h>

/* Standard output was closed when cowrun started (hold_standard_fds()):
 * the summary has nowhere to go, and saying so is an error.  A leader
 * sets it again for its client's standard output. */
void run_note_stdout_closed(int closed);

/* After --help, --list or --version: did standard output take it all?
 * Returns 0, or EXIT_USAGE after one message (a full disk, a closed
 * stdout).  Closes stdout. */
int run_stdout_written(void);

/* The setup: the arena, the workload's setup (or, for --merge, what the
 * saved context rebuilds), the task count, the freeze; fills b's
 * workload, state, ntasks, outdir and verbose.  *t0 is when the setup
 * began.  Returns 0 or -1 after a message. */
int run_setup(const struct run_config *cfg, struct batch *b, uint64_t *t0);

/* Everything after the setup: select the tasks, run them (or load saved
 * results for --merge) with `files` as the side files, merge, print the
 * summary.  The caller frees b and closes files.  Returns the exit status. */
int run_batch(const struct run_config *cfg, struct batch *b, struct sidefiles *files);

/* A whole direct run of a parsed command line: signals, the workload's
 * --help or --check-args, the side files' checks and lock, the setup,
 * run_batch(), the timing line of -v, the teardown.  Returns the exit
 * status. */
int run_direct(const struct run_config *cfg);

/* What a run would use, for the run and its dry run alike: the workers
 * for `ntasks` tasks (-j, the CPUs, the descriptors there are); the
 * setup's threads; the side files the command line names, checked
 * (0, or -1 after a message). */
size_t run_choose_workers(const struct run_config *cfg, size_t ntasks);
unsigned run_choose_setup_threads(const struct run_config *cfg);
int run_check_side_files(const struct run_config *cfg, struct sidefiles *files);

/* The input files before the setup: found, and for --resume unchanged
 * since the journal (where, size, modification time; the content is
 * compared after the setup).  Returns 0, or -1 after one line. */
int run_check_inputs(const struct run_config *cfg);

/* cowrun --dry-run: the plan of the run on stdout (the tasks, workers,
 * setup threads, memory, every file it would create or replace, what it
 * would refuse), without the setup and without writing anything.
 * Returns the status the real run would start with: 0, or EXIT_USAGE
 * after the refusal's message. */
int run_dry(const struct run_config *cfg);

/* The programs of --report-filter and --report-to found on PATH before
 * the setup (command_program(): a direct command's first word, a shell
 * command's when plain); COWRUN_CHECK_COMMANDS=0 skips it (a cluster's
 * check here, for commands its hosts have).  Returns 0, or -1 after one
 * line: "--report-to: cannot run 'lpx': not found on PATH". */
int run_check_report_commands(const struct run_config *cfg);

/* Where a batch's reports go (--report-filter, --report-to,
 * --report-suffix): the commands parsed into *route (a batch's, handed to
 * each task by task_init()) and its suffix set for this process's report
 * names (task_set_report_suffix()), until run_unroute_reports() frees
 * them.  With -v, says how each runs.  Returns 0 or -1 after a message. */
int run_route_reports(const struct run_config *cfg, struct report_route *route);
void run_unroute_reports(struct report_route *route);

#endif
