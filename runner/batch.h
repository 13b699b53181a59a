/*
 * batch.h - one run of a workload, as every executor (serial, fork pool,
 * OpenMP) sees it: the state setup built, the task count, and the in-order
 * merge of outcomes as they arrive.
 */
#ifndef COWRUN_BATCH_H
#define COWRUN_BATCH_H

#include "cowrun.h"
#include "reorder.h"

#include <stddef.h>

struct batch {
	const struct cowrun_workload *workload;
	void *state;
	size_t ntasks;
	const char *outdir;     /* where reports go */
	struct reorder reorder;
	size_t succeeded, failed;
	int merge_failed;       /* a merge() returned -1: the summary is wrong */
	int verbose;
};

/* Set up the in-order buffer for b->ntasks tasks.  Returns 0 or -1. */
int batch_init(struct batch *b);

/*
 * Task k succeeded with this record: merge it and everything after it that
 * is now in order.  The record is copied only if it has to wait.  Returns
 * 0, or -1 if memory ran out (the caller stops the run).
 */
int batch_result(struct batch *b, size_t k, const void *record, size_t length);

/* Task k failed: print "cowrun: W: task K (NAME) failed: why" and skip it
 * in the merge order.  Ignored if k is already resolved. */
void batch_failed(struct batch *b, size_t k, const char *why);

/* True while task k has neither succeeded nor failed. */
int batch_pending(const struct batch *b, size_t k);

/* True once every task is merged or skipped. */
int batch_complete(const struct batch *b);

/* Run every task in this process, in order: the reference executor. */
int serial_run(struct batch *b);

void batch_free(struct batch *b);

#endif
