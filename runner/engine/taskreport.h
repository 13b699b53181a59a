/*
 * taskreport.h - a task's context and its report: the report's file
 * (cowrun_report()), its names (the batch's temporary tag, the route's
 * suffix), and its commit: fsync + rename into place, or through the
 * batch's report commands (--report-filter, --report-to).  task.h, which
 * runs the task, includes it; this module calls nothing in task.c.
 */
#ifndef COWRUN_TASKREPORT_H
#define COWRUN_TASKREPORT_H

#include "cowrun.h"
#include "os/command_run.h"

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

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
	unsigned long slot;        /* {%}: the worker's slot, 1 to -j */
	struct command_run started; /* cowrun_command()'s, pid 0 when none */
	FILE *feed;                /* the stream to its standard input */
	sigset_t mask_before;      /* the thread's mask before SIGPIPE was held */
	unsigned char *record;     /* result record being built */
	size_t record_len, record_cap;
	char error[512];           /* why it failed, when it did */
	const struct report_route *route; /* the batch's; NULL: kept as written */
	int handed_over;           /* its report left closed for the parent to commit */
};

/*
 * Where every report of a batch goes (--report-filter, --report-to,
 * --report-suffix): parsed once for the batch and kept on it (struct
 * batch), handed to each task by task_init(); the commands (command.h)
 * outlive the task phase.
 */
struct report_route {
	const struct command *filter;  /* NULL: the report is kept as written */
	const struct command *sink;    /* NULL: the report is kept as a file */
	const char *suffix;            /* "" or NULL: none */
};

/* The suffix appended to every report's file name in this process (the
 * batch's route's), set once before the task phase like the temporary
 * names' tag: NULL or "" for none. */
void task_set_report_suffix(const char *suffix);
const char *task_report_suffix(void);

/* A report's file name in the output directory: the task's name and the
 * suffix.  Returns 0, or -1 if it does not fit in `size`. */
int task_report_file(const char *task_name, char *buf, size_t size);

/* Task k's report file name, from its workload and state, into buf
 * (COWRUN_NAME_MAX + 64 bytes always fit). */
void task_report_file_of(const struct cowrun_workload *w, const void *state, size_t k,
			 char *buf, size_t size);
#define REPORT_FILE_MAX (COWRUN_NAME_MAX + 64)

/* A new unpredictable part for the batch's temporary report names
 * (random_tag()).  Called by the parent before it forks or starts any
 * worker, so it can name a dead worker's temporary file. */
void task_new_temp_tag(void);

/* The tag as it is now (16 hex digits), and setting it to one a parent
 * gave (a standby worker takes its batch's).  */
const char *task_temp_tag(void);
void task_set_temp_tag(const char *tag);

/* The temporary and final report names of task `name` run by process
 * `pid` on this host, in the output directory: .FILE.HOST.PID.TAG.tmp
 * (host_tag(), task_new_temp_tag()) and FILE, the report's file name
 * (task_report_file()).  Both buffers are `size` bytes. */
void task_report_paths(char *temp, char *final, size_t size, const char *name, long pid);

/* The temporary name a filter's output gets before its rename:
 * .FILE.filtered.HOST.PID.TAG.tmp. */
void task_filtered_path(char *buf, size_t size, const char *name, long pid);
/* The private directory (0700) a report is shown in under its own name
 * while a command that names it ({}) runs: a temporary name, so the
 * stale sweep and task_remove_report() remove it. */
void task_private_dir(char *buf, size_t size, const char *name, long pid);

/* Remove what a failed task leaves in the directory `dirfd`: its temporary
 * files, and a report under its final name from an earlier run. */
void task_remove_report(int dirfd, const char *name, long pid);

/* The task's name, formatted on first use: most tasks of a batch of small
 * ones never need it. */
const char *task_name_of(struct cowrun_task *t, const void *state);

/* Flush the report, then fsync it and rename it into place, or route it
 * through the batch's commands.  Returns 0, or -1 with t->error; the
 * temporary files are removed. */
int task_commit_report(struct cowrun_task *t);

/* task_commit_report() for a fork worker whose parent commits its reports
 * (engine/commits.c): a report kept as a file is flushed and closed under
 * its temporary name, t->handed_over set, and left for the parent to
 * fsync and rename; a routed report is committed here as always.
 * Returns 0, or -1 with t->error (the temporary file removed). */
int task_hand_over_report(struct cowrun_task *t);

/* Close and remove a report the task left unfinished (if any). */
void task_discard_report(struct cowrun_task *t);

#endif
