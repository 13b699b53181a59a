/*
 * setup_arena.h - the process's one setup arena, behind cowrun_alloc() and
 * friends (cowrun.h), and what the runner does with it: create it before
 * setup, freeze it after, describe it for --verbose, and catch a task's
 * write to it (SIGSEGV) to say it in words.
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

/*
 * Install this process's SIGSEGV handler for writes to the frozen arena
 * (fork mode's workers, the serial/omp watchdog's child): a fault in it
 * writes a line naming the offset ("wrote to shared setup memory at
 * offset N of the setup arena, ...") into fault[size] (memory the parent
 * reads), calls on_fault (may be NULL; it runs in the signal handler, on
 * the faulting thread, so it must be async-signal-safe) and _exit()s with
 * exit_code.  Any other fault crashes as it would have.
 */
void setup_arena_catch_frozen_writes(char *fault, size_t size, int exit_code,
				     void (*on_fault)(void));

#endif
