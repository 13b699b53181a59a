/*
 * manifest.h - a run's outputs are its own.  Every run that writes
 * reports leaves a manifest in its output directory, under a name of its
 * own:
 *
 *   .cowrun-manifest.WORKLOAD                 a run of the whole batch
 *   .cowrun-manifest.WORKLOAD.shard-K-of-M    --shard K/M
 *   .cowrun-manifest.WORKLOAD.tasks-HASH      --tasks LIST (HASH: of LIST
 *                                             and any --shard)
 *
 * written by temp + rename like a report: the reports the run wrote (the
 * tasks that succeeded, in it or, for --resume, in the run it resumes),
 * their sizes and content hashes, and the run's identity (runid.h):
 *
 *   cowrun manifest 1
 *   workload sales
 *   identity cowrun results 4            each identity line
 *   report 5120 0123456789abcdef store-0001.txt
 *   earlier 4096 fedcba9876543210 store-0099.txt
 *   end 2
 *
 * A stale report is a file an earlier manifest of the same workload in
 * that directory names ("report" or "earlier") that no task of this run's
 * batch would write (all its tasks: not only this run's selection, so
 * never another shard's report), still as that manifest recorded it (size
 * and hash).  A run says after it how many there are and names the first
 * few; with --clean it removes them, and the earlier manifests that then
 * name nothing left.  Nothing else is ever removed: not a file no
 * manifest names, not one changed since, not another workload's.  A stale
 * report not removed is carried into the new manifest as "earlier", so
 * later runs still know it.  Names are written with '%' and control
 * characters as %XX.
 */
#ifndef COWRUN_MANIFEST_H
#define COWRUN_MANIFEST_H

#include "engine/batch.h"
#include "engine/selection.h"

/*
 * After the task phase, in the process that ran it: find the stale
 * reports (the earlier manifests read before this run's replaces its
 * predecessor), write this run's manifest, then say how many are stale,
 * or with `clean` remove them.  A run that was stopped (`stopped`) writes
 * its manifest and says nothing: --resume keeps what it wrote.  A run that
 * wrote no report leaves no manifest.  Nothing for a workload that writes
 * no reports.  Returns 0, or -1 after a message (the manifest could not
 * be written).
 */
int manifest_finish(struct batch *b, const struct selection *sel, const char *identity,
		    int clean, int stopped);

/* The manifest name of a run of `workload` (and `script`, or NULL) with
 * selection `sel`: .cowrun-manifest.WORKLOAD, with .script-HASH for a
 * script, then .shard-K-of-M or .tasks-HASH for a selection, into buf. */
void manifest_name(const char *workload, const char *script, const struct selection *sel,
		   char *buf, size_t size);

#endif
