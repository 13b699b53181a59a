/*
 * outdir.h - the output directory and the report files' names: every task
 * of a workload that writes reports must have a name that is a safe file
 * name of its own, no side file may lie where a report goes, and the
 * directory must exist and take files before any task runs.
 */
#ifndef COWRUN_OUTDIR_H
#define COWRUN_OUTDIR_H

#include "batch.h"
#include "sidefiles.h"

/*
 * Before anything is opened: every task's name is a file name (no '/',
 * not hidden, not empty) and no two are the same, and no side file lies
 * in b->outdir under one of them.  Nothing to check for a workload that
 * writes no reports.  Returns 0 or -1 after a message.
 */
int outdir_check_reports(const struct batch *b, const struct sidefiles *files);

/*
 * Create b->outdir (and its parents) and make sure a file can be created
 * in it: sidefiles_open()'s `prepare` step, `ctx` being the batch.
 * Nothing for a workload that writes no reports.  Returns 0 or -1 after a
 * message naming the directory.
 */
int outdir_make(void *ctx);

#endif
