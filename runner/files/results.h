/*
 * results.h - saved-results files (--save-results, --merge).
 *
 * A file is a stream of wire frames (wire.h), each with its checksum: an
 * IDENTITY frame saying which format, cowrun version, workload (and its
 * ABI), arguments and task count produced it, then one RESULT or FAILED
 * frame per task run, in task order, then an END frame counting them, so a
 * truncated file is recognised.  A frame whose checksum fails is refused
 * with a message naming the file, the frame's task and "checksum".  It is written to a temporary name in the
 * same directory, fsync'd and renamed: a file under its final name is
 * complete.
 */
#ifndef COWRUN_RESULTS_H
#define COWRUN_RESULTS_H

#include "cowrun.h"
#include "wire.h"

#include <limits.h>

/* The saved-results and journal format this cowrun writes and reads, and
 * what it brought, for the message refusing an older one. */
#define RESULTS_FORMAT 5
#define RESULTS_FORMAT_NEWS "the run's seed and its task names"
#include <stddef.h>

/*
 * What a reader hands every task frame (RESULT or FAILED) to, in file
 * order: both results_load() and journal_load() take one.  The frame's
 * payload is valid only during the call.  Returns 0 to read on, or -1 to
 * stop (after its own message): the load then fails.
 */
typedef int results_take_fn(void *ctx, const struct wire_frame *f);

/* The workload's merge context (cowrun.h, merge_context()): what a merge
 * needs besides the arguments, including a hash of the input.  len 0: none. */
struct results_context {
	const void *bytes;
	size_t len;
};

/* The merge context of a workload's state (none if it has no
 * merge_context()). */
struct results_context results_context_of(const struct cowrun_workload *w, const void *state);

/*
 * The identity text of a run (runid.h), one "KEY VALUE" line each: the
 * results format ("cowrun results 5"), cowrun's `version`, the workload's
 * name and ABI, the run seed (--seed), the task count, the hash of the
 * task names in order (`names`; NULL before the setup: no line), the hash
 * of its merge context (no line without one), then `body`: its inputs and
 * arguments, as run/inputs.c writes them ("arg --rows\narg 10\n" for a
 * run without inputs).  No build id: shards built on different hosts from
 * one source merge.  A merge or --resume refuses files whose identity
 * differs (runid_check()).  Returns a malloc'd string (the caller frees
 * it), or NULL (ENOMEM).
 */
char *results_identity(const char *version, const struct cowrun_workload *w, uint64_t seed,
		       const char *body, size_t ntasks, const uint64_t *names,
		       struct results_context context);

/* The hash of a batch's task names in task order, for its identity: two
 * batches of as many tasks whose names differ (a script whose tasks()
 * depends on more than its inputs: the environment, a set's order) never
 * mix their results. */
uint64_t results_names_hash(const struct cowrun_workload *w, const void *state, size_t ntasks);

struct results_writer {
	int fd;
	struct wire_writer out;
	uint64_t frames;
	uint64_t synced_ns;      /* journal: last fsync */
	char temp[PATH_MAX], final[PATH_MAX];
	int by_fd;               /* the caller's descriptor: never renamed or removed */
};

/* Create the temporary file and write the identity, then the merge
 * context if there is one.  Returns 0 or -1 after a message naming the
 * file. */
int results_create(struct results_writer *w, const char *path, const char *identity,
		   struct results_context context);

/* The same on a temporary file the caller created (a served batch: its
 * client's, passed with the request), which this then owns; `name` is for
 * messages.  results_commit() then writes the end marker, fsyncs and
 * closes it but renames nothing, and results_abort() only closes it: the
 * caller renames or removes its own file.  Returns 0 or -1 after a
 * message (fd closed). */
int results_create_fd(struct results_writer *w, int fd, const char *name, const char *identity,
		      struct results_context context);

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
 * The merge context saved in results file `path` (its second frame), for
 * --merge to build the workload's state from (merge_setup()) without a
 * setup: a malloc'd copy in *context (the caller frees its bytes).  Checks
 * only what it reads; results_load() checks the whole file later.  Returns
 * 0, or -1 without a message when there is none to read (no such file, not
 * a results file of this format, no context, damaged): the merge then runs
 * the setup, and results_load() says what is wrong with the file.
 */
int results_read_context(const char *path, struct results_context *context);

/* The identity text of a results file or journal `path` (its first frame)
 * if it is one of this format: a malloc'd, NUL-terminated copy in
 * *identity (the caller frees it).  Returns 0, or -1 without a message
 * when there is none to read (its full read later says why). */
int results_read_identity(const char *path, char **identity);

/*
 * The results journal that goes with a --joblog (JOBLOG.res): an IDENTITY
 * frame, then every task's final outcome appended as it happens, written
 * at once and fsync'd at most once a second and at close, so --resume can
 * reuse finished work after any interruption.  It has no END frame.  Read
 * back as a write-ahead log is: a torn or damaged tail (no good frame after
 * it) is dropped; a damaged record with good ones after it is an error
 * (journal_load()).
 *
 * journal_open() starts a new journal, or with `keep` > 0 truncates an
 * existing one to its first `keep` bytes (its good frames, as
 * journal_load() measured them) and appends.  Returns 0 or -1 after a
 * message.
 */
int journal_open(struct results_writer *w, const char *path, const char *identity,
		 long long keep);

/* The same on a descriptor the caller opened (a served batch: passed by
 * its client), which the writer then owns; `name` is for messages. */
int journal_open_fd(struct results_writer *w, int fd, const char *name, const char *identity,
		    long long keep);

/* Append one outcome now.  Returns 0 or -1 after a message. */
int journal_put(struct results_writer *w, enum wire_type type, size_t task,
		const void *bytes, size_t length);

/* Flush, fsync and close.  Returns 0 or -1 after a message. */
int journal_close(struct results_writer *w);

/*
 * Read journal `path`: check its identity, then call `take` for every good
 * task frame in file order.  A torn or damaged tail is dropped, saying on
 * stderr how many records were kept and how many bytes dropped.  A damaged
 * record followed by good ones is refused naming its task, unless
 * `rerun_damaged` (--resume-failed): then the record is dropped (its task
 * has no record left, or an earlier FAILED one, so it runs again) and the
 * journal is rewritten without the damaged bytes (to a temporary file,
 * fsync'd and renamed).  Sets *keep to the
 * length of the good part.  Returns 0, or -1 after a message naming the
 * file (missing, foreign, unreadable, damaged) or when `take` fails.
 */
int journal_load(const char *path, const char *identity, int rerun_damaged,
		 results_take_fn *take, void *ctx, long long *keep);

/* The same through a descriptor open for reading and writing (a served
 * batch: the journal its client passed), read from its start and kept
 * open; `name` is for messages.  A damaged middle record dropped under
 * `rerun_damaged` is cut out in place (rewritten, truncated, fsync'd):
 * the file is never renamed. */
int journal_load_fd(int fd, const char *name, const char *identity, int rerun_damaged,
		    results_take_fn *take, void *ctx, long long *keep);

#endif
