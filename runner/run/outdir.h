/*
 * outdir.h - the output directory and the report files' names: every task
 * of a workload that writes reports must have a name that is a safe file
 * name of its own, no side file may lie where a report goes, and the
 * directory must exist and take files before any task runs.
 */
#ifndef COWRUN_OUTDIR_H
#define COWRUN_OUTDIR_H

#include "engine/batch.h"
#include "sidefiles.h"

/*
 * Before anything is opened: every task's name is a file name (no '/',
 * not hidden, not empty) and no two are the same, and no side file lies
 * in b->outdir under one of them (a served batch's: where its client
 * says they lie, sidefiles_check_reports()).  Nothing to check for a
 * workload that writes no reports.  Returns 0 or -1 after a message.
 */
int outdir_check_reports(const struct batch *b, const struct sidefiles *files);

/*
 * Open the output directory (sidefiles_open()'s `prepare` step, `ctx`
 * being the batch): a direct run creates b->outdir and its parents, then
 * opens it once, its last component never followed if it is a symbolic
 * link, and (run as root) refuses one that another user owns; every
 * report is then made relative to that descriptor (b->outdir_fd, closed
 * by batch_free()).  A served batch's was passed as a descriptor
 * (b->outdir_by_fd).  Then make sure a file can be created in it, and
 * remove the stale temporary files of this host's dead runs
 * (outdir_remove_stale_at()).  Nothing for a workload that writes no
 * reports.  Returns 0 or -1 after a message naming the directory.
 */
int outdir_make(void *ctx);

/* What a run would refuse of `dir` as it is now, before creating anything
 * (--dry-run): a link or no directory; run as root, one another user owns.
 * A missing one passes (the run creates it).  Returns 0, or -1 after the
 * run's message. */
int outdir_check_existing(const char *dir);

/*
 * Remove from the open directory `dirfd` (the caller's, kept open) the
 * temporary report files (".NAME.HOST.PID.TAG.tmp", or ".NAME.HOST.PID.tmp"
 * from cowrun 0.3) that this host's runs left when they were killed: HOST
 * this host's (host_tag()), PID no live process here.  Another host's
 * files, which a shared directory holds while their runs go on, and any
 * other name are left alone.  Returns how many were removed.
 */
size_t outdir_remove_stale_at(int dirfd);

#endif
