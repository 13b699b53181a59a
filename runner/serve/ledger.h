/*
 * ledger.h - the master's count of workers under --max-workers, for the
 * whole server: every generation asks it for a batch's workers and gives
 * them back, so reloads (an old generation finishing its batches beside a
 * new one) never run more than the cap.  Pure bookkeeping, no I/O: the
 * master sends what it grants (master_gens.c).
 *
 * A batch wanting w workers gets min(w, what is free) once something is
 * free, in the order the wants came, across generations; a want of 0 (a
 * batch running no task) is never asked for.
 */
#ifndef COWRUN_SERVE_LEDGER_H
#define COWRUN_SERVE_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#define LEDGER_WANTS_MAX 512     /* waiting batches, all generations */

struct ledger_grant {
	int gen;                 /* the master's index of the generation */
	uint32_t ticket;         /* the generation's name for the batch */
	size_t workers;
};

/* Start empty, with a cap of `cap` (at least 1). */
void ledger_init(size_t cap);

/* A batch of generation `gen` waits for up to `want` workers (at least
 * 1).  Returns 0, or -1 when the list is full (nothing recorded). */
int ledger_want(int gen, uint32_t ticket, size_t want);

/* A batch of generation `gen` that wants up to `want` workers, granted
 * at once if no batch waits before it and some are free: returns how
 * many it holds now (counted as held by gen), or 0 (then ask with
 * ledger_want(), in turn). */
size_t ledger_take_now(int gen, size_t want);

/* The batch no longer waits (its client went away).  Returns 1 if it was
 * waiting, 0 if not (granted already, or unknown). */
int ledger_withdraw(int gen, uint32_t ticket);

/* The next grant, in order, while workers are free: fills *g, counts the
 * workers as held by g->gen and returns 1; 0 when nothing more can be
 * granted now. */
int ledger_next(struct ledger_grant *g);

/* Generation `gen` gives back `workers` it held (a batch ended or never
 * started).  More than it holds is clamped. */
void ledger_free(int gen, size_t workers);

/* Generation `gen` is gone: its wants dropped, what it held freed. */
void ledger_forget(int gen);

size_t ledger_cap(void);
size_t ledger_in_use(void);
size_t ledger_waiting(void);

#endif
