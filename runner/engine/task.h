/*
 * task.h - running one task, the same way in every mode: call the
 * workload's run(), then commit its report file (fsync + rename) or throw
 * it away (taskreport.h), and keep its result record or its error message.
 */
#ifndef COWRUN_TASK_H
#define COWRUN_TASK_H

#include "taskreport.h"

#include <stddef.h>
#include <stdint.h>

/* Prepare a task context.  Reports are created, renamed and removed
 * relative to `dirfd`, an open directory the caller keeps open; `outdir`
 * (may be NULL) names it in messages and must outlive the context, as
 * must `route` (the batch's: NULL, or none set, keeps each report as
 * written).
 * Reusable: a worker keeps one for all its tasks so the record buffer is
 * allocated once. */
void task_init(struct cowrun_task *t, const struct cowrun_workload *w,
	       const char *outdir, int dirfd, const struct report_route *route);

/*
 * Run task k of `state`.  Returns 0 with the record in t->record /
 * t->record_len, or -1 with the reason in t->error; in both cases no
 * temporary file is left, and a report exists under its final name only on
 * success.
 */
int task_execute(struct cowrun_task *t, const void *state, size_t k);

/* task_execute() in two steps, for a fork worker whose parent commits
 * its reports (engine/commits.c): task_run() calls run() and ends its
 * command, leaving the report open; task_commit() commits it, or with
 * `hand_over` closes it for the parent (task_hand_over_report()).  Each
 * returns 0, or -1 with t->error and nothing of the task's left in the
 * output directory. */
int task_run(struct cowrun_task *t, const void *state, size_t k);
int task_commit(struct cowrun_task *t, int hand_over);

void task_free(struct cowrun_task *t);

/* The --tasks-per-worker quota cowrun_tasks_per_worker() tells the
 * workload: set in each worker after its fork. */
void task_set_tasks_per_worker(uint64_t quota);
/* The run seed cowrun_run_seed() and cowrun_task_seed() derive from
 * (--seed; 0 unless given). */
void task_set_seed(uint64_t seed);

#endif
