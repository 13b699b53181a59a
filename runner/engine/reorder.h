/*
 * reorder.h - the in-order merge buffer.  Results arrive in completion
 * order; the workload's merge() must see them in task order.  The buffer
 * keeps each early result until every task before it is resolved (merged
 * or failed), then hands them out in order.
 */
#ifndef COWRUN_REORDER_H
#define COWRUN_REORDER_H

#include <stddef.h>

enum reorder_state {
	REORDER_WAITING = 0,
	REORDER_READY,     /* record held */
	REORDER_FAILED,    /* failed; its message held as the record */
	REORDER_EXCLUDED,  /* not part of this run (--tasks, --shard) */
	REORDER_DONE,      /* handed out */
};

struct reorder_slot {
	enum reorder_state state;
	void *record;  /* owned by the buffer while READY */
	size_t length;
};

struct reorder {
	struct reorder_slot *slots;
	size_t ntasks;
	size_t next;     /* first task not yet handed out */
	size_t held;     /* READY or FAILED slots at or after next */
	size_t held_bytes;
};

/* Returns 0 or -1 (ENOMEM). */
int reorder_init(struct reorder *r, size_t ntasks);

/* Task k's state (REORDER_DONE once handed out, and for k >= ntasks). */
enum reorder_state reorder_state(const struct reorder *r, size_t k);

/* Keep a copy of task k's record.  Returns 0, 1 if task k was already
 * resolved or does not exist (the record is ignored), or -1 (ENOMEM). */
int reorder_put(struct reorder *r, size_t k, const void *record, size_t length);

/* Mark task k failed, keeping a copy of its message: it is handed out in
 * order with *failed set.  Returns 0, 1 if it was already resolved, or -1
 * (ENOMEM). */
int reorder_fail(struct reorder *r, size_t k, const char *message, size_t length);

/* Leave task k out of this run: reorder_next passes over it silently.
 * Only before any record arrives. */
void reorder_exclude(struct reorder *r, size_t k);

/* Take an excluded task k back in (waiting again). */
void reorder_include(struct reorder *r, size_t k);

/*
 * The next task in order, if it is resolved: returns 1 with *k, *failed,
 * and *record and *length: the result, or the failure message (owned by
 * the buffer, valid until the next call).  Excluded tasks are passed over.
 * Returns 0 if the next task is still waiting or all are done.
 */
int reorder_next(struct reorder *r, size_t *k, int *failed,
		 const void **record, size_t *length);

/* Resolve the next task as done without storing it: for a record the
 * caller merged itself because it was next in order (saves a copy).
 * Does nothing unless the next task is still waiting. */
void reorder_skip_next(struct reorder *r);

/* True once every task has been handed out. */
int reorder_complete(const struct reorder *r);

void reorder_free(struct reorder *r);

#endif
