/*
 * batch.h - one run of a workload, as every executor (serial, fork pool,
 * OpenMP) sees it: the state setup built, which tasks to run, and what to
 * do with each outcome as it arrives: merge it in task order, or save it
 * (--save-results), and note when and where it ran (--timeline).
 */
#ifndef COWRUN_BATCH_H
#define COWRUN_BATCH_H

#include "cowrun.h"
#include "halt.h"
#include "files/joblog.h"
#include "progress.h"
#include "reorder.h"
#include "taskreport.h"
#include "files/wire.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Somewhere outcomes go as well as to the merge: the saved results
 * (--save-results, in task order) and the results journal (--joblog, as
 * each task is resolved) implement it.  put() writes one RESULT or FAILED
 * frame for task `task` and returns 0, or -1 after a message naming its
 * file.  The batch only calls it; whoever set it up owns ctx and closes
 * it.  put == NULL: no such sink.
 */
struct outcome_sink {
	int (*put)(void *ctx, enum wire_type type, size_t task, const void *bytes, size_t length);
	void *ctx;
};

struct batch {
	const struct cowrun_workload *workload;
	void *state;
	size_t ntasks;
	const char *outdir;      /* where reports go (its name, in messages) */
	const char *outdir_at;   /* outdir made absolute before the setup, which may
				  * change the working directory: what it is created
				  * and opened by; NULL: outdir */
	int outdir_fd;           /* the output directory, open once outdir_open is set: */
	int outdir_open;         /* every report is made relative to it, never by name */
	int outdir_by_fd;        /* set: outdir_fd is a served client's, not opened by name */
	const size_t *selected;  /* ascending task indices to run; NULL: all */
	size_t nselected;
	/* The side files' handles are lent by sidefiles_open() and taken
	 * back by sidefiles_close(): the batch writes, never closes them. */
	struct outcome_sink save; /* set: save outcomes instead of merging */
	FILE *timeline;          /* set: one CSV row per finished task */
	uint64_t started_ns;     /* task phase start, timeline origin */
	uint64_t ended_ns;       /* task phase end */
	struct reorder reorder;
	size_t succeeded, failed;
	int merge_failed;        /* a merge() or a save failed: output is wrong */
	int verbose;

	/* Robustness (--retries, --joblog, --halt, --bar). */
	unsigned retries;        /* extra attempts a failed task gets */
	uint64_t retry_delay_ns; /* --retry-delay: the wait before a retry; 0: none */
	unsigned *attempts;      /* per task: attempts made */
	struct joblog *joblog;   /* set: a line per attempt */
	struct outcome_sink journal; /* set: every outcome appended */
	struct halt_policy halt;
	enum halt_when halting;  /* HALT_SOON or HALT_NOW once --halt is met */
	size_t done_at_stop;     /* tasks resolved when stopping began */
	size_t failed_at_stop;   /* of them, failed */
	size_t killed;           /* running tasks killed by --halt now or a 2nd signal */
	int stopped;             /* stopping has begun */
	struct progress progress;
	struct report_route route; /* where its reports go (run_route_reports());
				    * zero: each kept as written */
};

/* Set up the in-order buffer and leave unselected tasks out.  Returns 0
 * or -1 (ENOMEM). */
int batch_init(struct batch *b);

/* Where a task's report goes, as task_init() takes it: the open output
 * directory (-1 if the batch has none: its workload writes no report),
 * and its name for messages (NULL for a served client's). */
static inline int batch_outdir_fd(const struct batch *b)
{
	return b->outdir_open ? b->outdir_fd : -1;
}

static inline const char *batch_outdir_label(const struct batch *b)
{
	return b->outdir_by_fd ? NULL : b->outdir;
}

/* How many tasks this run executes, and the i-th of them. */
static inline size_t batch_count(const struct batch *b)
{
	return b->selected ? b->nselected : b->ntasks;
}

static inline size_t batch_task(const struct batch *b, size_t i)
{
	return b->selected ? b->selected[i] : i;
}

/*
 * Task k succeeded with this record: merge (or save) it and everything
 * after it that is now in order.  The record is copied only if it has to
 * wait.  Returns 0, or -1 if memory ran out (the caller stops the run).
 */
int batch_result(struct batch *b, size_t k, const void *record, size_t length);

/* Task k failed: print "cowrun: W: task K (NAME) failed: why" and skip it
 * in the merge order (a save keeps the message).  Ignored if k is already
 * resolved. */
void batch_failed(struct batch *b, size_t k, const char *why);

/* True while task k has neither succeeded nor failed. */
int batch_pending(const struct batch *b, size_t k);

/* True once every selected task is merged or skipped. */
int batch_complete(const struct batch *b);

/*
 * An attempt at task a->task succeeded: joblog, timeline, journal, then
 * batch_result().  Returns 0 or -1 (out of memory: stop the run).
 */
int batch_attempt_ok(struct batch *b, const struct attempt *a, const void *record,
		     size_t length);

/*
 * An attempt failed.  Returns 1 if the task has attempts left (--retries):
 * the caller runs it again, on a fresh fork where it can.  Otherwise it is
 * resolved as failed (batch_failed, journal) and 0 is returned.
 */
int batch_attempt_failed(struct batch *b, const struct attempt *a, const char *why);

/*
 * --retry-delay: how long task k's retry waits after its latest failed
 * attempt: the delay after the first, doubling with each attempt, at most
 * ten times the delay (0 without --retry-delay).
 */
uint64_t batch_retry_delay_ns(const struct batch *b, size_t k);

/*
 * Serial and omp modes: wait out task k's retry delay in this thread (the
 * fork pool holds the retry instead and runs other tasks).  Returns 0, or
 * -1 if a signal arrived meanwhile: the caller runs no retry.
 */
int batch_retry_pause(struct batch *b, size_t k);

/* An attempt was cut short through no fault of its task (--memfree): it
 * goes to the joblog and the timeline, `why` to stderr, and spends no
 * retry; the caller runs the task again. */
void batch_attempt_requeued(struct batch *b, const struct attempt *a, const char *why);

/* Hand out no new task: --halt was met, or SIGINT/SIGTERM arrived.  The
 * first call that says so notes how many tasks were done by then. */
int batch_stopping(struct batch *b);

/* Kill the running tasks too: --halt now, or a second signal. */
int batch_killing(const struct batch *b);

void batch_free(struct batch *b);

#endif
