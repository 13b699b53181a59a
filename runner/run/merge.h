/*
 * merge.h - --merge: fold saved results (--save-results files, one per
 * shard or task) into a batch instead of running its tasks.
 */
#ifndef COWRUN_MERGE_H
#define COWRUN_MERGE_H

#include "engine/batch.h"

#include <stddef.h>

/*
 * Load each of `paths` into the batch (after batch_init): a file is one
 * saved-results file, a directory means each of its *.res files in name
 * order.  Each file's identity must be `identity`; a task may come from
 * one file only; afterwards every task of the batch must have come from
 * some file.  Returns 0, or -1 after a one-line message naming the file
 * (or listing the first missing tasks).
 */
int merge_load(struct batch *b, const char *const *paths, size_t npaths, const char *identity);

/* One saved-results file into the batch, checked as above but for tasks
 * missing.  Returns 0 or -1 after a message naming the file. */
int merge_load_file(struct batch *b, const char *path, const char *identity);

/*
 * --merge of a workload with merge_setup(): its state, built from the
 * merge context saved in the first file (the first *.res of a directory)
 * instead of a setup.  merge_load() then checks every file against the
 * identity of that state, so files of another input are refused.  Returns
 * 1 with *state set; 0 if the first file holds no context to build from
 * (the caller runs the setup instead, and merge_load() says what is wrong
 * with the file); -1 if merge_setup() refused the context (after its
 * message).
 */
int merge_setup_state(const struct cowrun_workload *w, const char *const *paths, size_t npaths,
		      int argc, char **argv, void **state);

/* The first results file a merge of `paths` reads: paths[0], or the first
 * *.res file (by name) of directory paths[0], into buf.  Returns 0, or -1
 * if there is none. */
int merge_first_file(const char *const *paths, size_t npaths, char *buf, size_t size);

#endif
