/*
 * watchdog.h - serial and omp modes run their task phase in one forked
 * child, watched by the process that forked it.  Nothing a task does can
 * then end the run silently: the child does everything the run did before
 * (tasks, merge, side files, the summary) and, when that is done, writes a
 * token on a pipe; the parent only waits.  If the child ends any other way
 * (exit() or _exit() inside a task, a signal, a write to the frozen setup
 * arena), the parent names the task or tasks that were running, from
 * "current task" slots in a MAP_SHARED page (one per thread), removes the
 * temporary files the child left (reports of running tasks, --timeline,
 * --save-results), and the run exits 254.  SIGINT and SIGTERM sent to the
 * parent alone are forwarded to the child, which handles them as before.
 *
 *   parent                           child
 *   watchdog_start() -> 1, status    watchdog_start() -> 0
 *                                    watchdog_enter/leave around each task
 *                                    watchdog_note_temp(path)
 *                                    watchdog_done(), then exits as before
 */
#ifndef COWRUN_WATCHDOG_H
#define COWRUN_WATCHDOG_H

#include "batch.h"

#include <stddef.h>

/*
 * Fork the child that runs the task phase; `nslots` slots (omp threads),
 * at least 1; `catch_frozen`: trap writes to the frozen arena in the child.
 * Returns 0 in the child, which carries on and calls watchdog_done() once
 * the run is finished.  In the parent, waits for the child and returns 1
 * with *status: the child's exit status when it finished, else 254 after
 * one message naming the task(s).  If the watchdog cannot be set up,
 * returns 1 with *status 254 after a message, having run nothing.  The
 * parent keeps `b` (names, outdir) for its message; it never merges.
 */
int watchdog_start(const struct batch *b, size_t nslots, int catch_frozen, int *status);

/* In the child, around each task: slot `slot` (the thread) runs task k.
 * No-ops when the run is not watched (fork mode). */
void watchdog_enter(size_t slot, size_t k);
void watchdog_leave(size_t slot);

/* In the child: `path` is a temporary file to remove if the run ends
 * early (copied; at most two). */
void watchdog_note_temp(const char *path);

/* In the child: the run finished (its status is the process's exit
 * status).  No-op when not watched. */
void watchdog_done(void);

/* In the parent, after watchdog_start() returned 1: did the child finish
 * the run (1), or did the run end with it (0: a task ended the process)? */
int watchdog_child_finished(void);

/* Whether this process is a watching parent: it forked the child that
 * ran the task phase, finish() and the rest.  It then leaves the state's
 * teardown to that child (the state's files, an interpreter's end: once,
 * in the process that finished the run). */
int watchdog_watching(void);

#endif
