/*
 * results.h - saved-results files (--save-results, --merge).
 *
 * A file is a stream of wire frames (wire.h): an IDENTITY frame saying which
 * workload, arguments and task count produced it, then one RESULT or FAILED
 * frame per task run, in task order, then an END frame counting them, so a
 * truncated file is recognised.  It is written to a temporary name in the
 * same directory, fsync'd and renamed: a file under its final name is
 * complete.
 */
#ifndef COWRUN_RESULTS_H
#define COWRUN_RESULTS_H

#include "wire.h"

#include <limits.h>
#include <stddef.h>

/*
 * What a reader hands every task frame (RESULT or FAILED) to, in file
 * order: both results_load() and journal_load() take one.  The frame's
 * payload is valid only during the call.  Returns 0 to read on, or -1 to
 * stop (after its own message): the load then fails.
 */
typedef int results_take_fn(void *ctx, const struct wire_frame *f);

/* The identity text of a run: workload, its arguments, task count.  A
 * merge refuses files whose identity differs.  Returns a malloc'd string
 * (the caller frees it), or NULL (ENOMEM). */
char *results_identity(const char *workload, int argc, char **argv, size_t ntasks);

struct results_writer {
	int fd;
	struct wire_writer out;
	uint64_t frames;
	uint64_t synced_ns;      /* journal: last fsync */
	char temp[PATH_MAX], final[PATH_MAX];
};

/* Create the temporary file and write the identity.  Returns 0 or -1 after
 * a message naming the file. */
int results_create(struct results_writer *w, const char *path, const char *identity);

/* Append one RESULT or FAILED frame.  Returns 0 or -1 after a message. */
int results_put(struct results_writer *w, enum wire_type type, size_t task,
		const void *bytes, size_t length);

/* Write the END frame, fsync, close and rename into place.  Returns 0 or -1
 * after a message (the temporary file is then removed). */
int results_commit(struct results_writer *w);

/* Close and remove the temporary file. */
void results_abort(struct results_writer *w);

/*
 * Read saved-results file `path`, handing every task frame to `take` (for
 * --merge, merge_load_file()'s, which also refuses a task this run lacks
 * or already has).  Refuses (-1 after a one-line message naming the file) a
 * file that is not a results file, is truncated or comes from another
 * identity, and fails when `take` does.
 */
int results_load(const char *path, const char *identity, results_take_fn *take, void *ctx);

/*
 * The results journal that goes with a --joblog (JOBLOG.res): an IDENTITY
 * frame, then every task's final outcome appended as it happens, written
 * at once and fsync'd at most once a second and at close, so --resume can
 * reuse finished work after any interruption.  It has no END frame: a torn
 * last frame is dropped when it is read back.
 *
 * journal_open() starts a new journal, or with `keep` > 0 truncates an
 * existing one to its first `keep` bytes (its complete frames, as
 * journal_load() measured them) and appends.  Returns 0 or -1 after a
 * message.
 */
int journal_open(struct results_writer *w, const char *path, const char *identity,
		 long long keep);

/* Append one outcome now.  Returns 0 or -1 after a message. */
int journal_put(struct results_writer *w, enum wire_type type, size_t task,
		const void *bytes, size_t length);

/* Flush, fsync and close.  Returns 0 or -1 after a message. */
int journal_close(struct results_writer *w);

/*
 * Read journal `path`: check its identity, then call `take` for every
 * complete task frame in file order.  Sets *keep to the length of the
 * complete part.  Returns 0, or -1 after a message naming the file (missing,
 * foreign, unreadable) or when `take` fails.
 */
int journal_load(const char *path, const char *identity, results_take_fn *take, void *ctx,
		 long long *keep);

#endif
