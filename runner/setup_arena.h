/*
 * setup_arena.h - the process's one setup arena, behind cowrun_alloc() and
 * friends (cowrun.h), and what the runner does with it: create it before
 * setup, freeze it after, describe it for --verbose, and tell a worker's
 * SIGSEGV handler whether a faulting address was in it.
 */
#ifndef COWRUN_SETUP_ARENA_H
#define COWRUN_SETUP_ARENA_H

#include "arena.h"

#include <stddef.h>

/* Reserve the arena (as much address space as the machine has memory).
 * Returns 0 or -1 after a message. */
int setup_arena_init(int use_huge_pages);

/* Make it read-only: called after setup.  Returns 0 or -1 after a message. */
int setup_arena_freeze(void);

/* The arena itself, for statistics and the fault handler. */
const struct arena *setup_arena(void);

void setup_arena_destroy(void);

#endif
