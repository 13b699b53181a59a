/*
 * resume.h - --resume and --resume-failed: reuse what an interrupted run
 * kept in its results journal (JOBLOG.res), run only the rest, and merge
 * everything, so the output is byte-identical to an uninterrupted run.
 */
#ifndef COWRUN_RESUME_H
#define COWRUN_RESUME_H

#include "engine/batch.h"

#include <stddef.h>

struct resume_state {
	size_t ntasks;
	unsigned char *outcome;  /* per task: 0 none, WIRE_RESULT or WIRE_FAILED */
	void **bytes;            /* the record, or the failure message */
	size_t *length;
	long long keep;          /* journal bytes to keep when appending */
	int journal_found;
};

/* The results journal of a joblog: JOBLOG.res (a leading '+' dropped).
 * Writes into buf, returns buf. */
char *resume_journal_path(const char *joblog, char *buf, size_t size);

/*
 * Read the journal of `joblog`, if there is one, checking it belongs to
 * this workload and arguments (the joblog itself was read and checked by
 * sidefiles_lock()).  No journal and no joblog line: nothing to resume,
 * every task runs.  A damaged record in the middle of the journal is
 * refused unless rerun_failed (--resume-failed), which runs its task
 * again (journal_load()).  `fds`, if not NULL, are the joblog and its
 * journal as a served batch's client passed them (the names then only for
 * messages): read through them, never by name, an empty journal standing
 * for none.  Returns 0, or -1 after a message.
 */
int resume_load(struct resume_state *r, const char *joblog, const char *workload,
		const char *identity, size_t ntasks, int rerun_failed, const int fds[2]);

/*
 * Remove from tasks[0..*count) (ascending) those the journal settles:
 * successes, and failures too unless rerun_failed.  In place.
 */
void resume_filter(const struct resume_state *r, int rerun_failed, size_t *tasks,
		   size_t *count);

/* Feed the settled outcomes to the batch (after batch_init).  Returns 0 or
 * -1 (out of memory). */
int resume_apply(const struct resume_state *r, int rerun_failed, struct batch *b);

void resume_free(struct resume_state *r);

#endif
