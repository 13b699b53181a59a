/*
 * task.h - running one task, the same way in every mode: call the
 * workload's run(), then commit its report file (fsync + rename) or throw
 * it away, and keep its result record or its error message.
 */
#ifndef COWRUN_TASK_H
#define COWRUN_TASK_H

#include "cowrun.h"

#include <limits.h>
#include <stddef.h>

struct cowrun_task {
	const struct cowrun_workload *workload;
	size_t index;
	const void *state;         /* the workload's state, for its name */
	char name[COWRUN_NAME_MAX]; /* formatted on first use; "" until then */
	const char *outdir;        /* the directory's name, for messages; NULL: none */
	int dirfd;                 /* the output directory, open */
	FILE *report;              /* open temporary report, or NULL */
	char temp_path[PATH_MAX];
	char final_path[PATH_MAX];
	unsigned char *record;     /* result record being built */
	size_t record_len, record_cap;
	char error[512];           /* why it failed, when it did */
};

/* Prepare a task context.  Reports are created, renamed and removed
 * relative to `dirfd`, an open directory the caller keeps open; `outdir`
 * (may be NULL) names it in messages and must outlive the context.
 * Reusable: a worker keeps one for all its tasks so the record buffer is
 * allocated once. */
void task_init(struct cowrun_task *t, const struct cowrun_workload *w,
	       const char *outdir, int dirfd);

/* A new unpredictable part for the batch's temporary report names
 * (random_tag()).  Called by the parent before it forks or starts any
 * worker, so it can name a dead worker's temporary file. */
void task_new_temp_tag(void);

/* The tag as it is now (16 hex digits), and setting it to one a parent
 * gave (a standby worker takes its batch's).  */
const char *task_temp_tag(void);
void task_set_temp_tag(const char *tag);

/*
 * Run task k of `state`.  Returns 0 with the record in t->record /
 * t->record_len, or -1 with the reason in t->error; in both cases no
 * temporary file is left, and a report exists under its final name only on
 * success.
 */
int task_execute(struct cowrun_task *t, const void *state, size_t k);

/* The temporary and final report names of task `name` run by process
 * `pid` on this host, in the output directory: .NAME.HOST.PID.TAG.tmp
 * (host_tag(), task_new_temp_tag()) and NAME.  Both buffers are `size`
 * bytes. */
void task_report_paths(char *temp, char *final, size_t size, const char *name, long pid);

/* Remove what a failed task leaves in the directory `dirfd`: its temporary
 * file, and a report under its final name from an earlier run. */
void task_remove_report(int dirfd, const char *name, long pid);

void task_free(struct cowrun_task *t);

/* The workload named in messages by cowrun_error(). */
void task_set_current_workload(const char *name);

/* The -v level cowrun_verbosity() tells the workload. */
void task_set_verbosity(int verbose);

/* How many messages cowrun_error() has printed in this process so far: a
 * caller compares the counts before and after a workload's call. */
unsigned long task_errors_reported(void);

#endif
