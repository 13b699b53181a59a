/*
 * parallel.h - the setup threads behind cowrun_parallel() (cowrun.h): how
 * many there are is the runner's decision, made before setup.
 */
#ifndef COWRUN_PARALLEL_H
#define COWRUN_PARALLEL_H

/* Threads for the next setup: at least 1 (0 is taken as 1). */
void setup_threads_set(unsigned threads);

/* The threads the widest cowrun_parallel() call ran on since
 * setup_threads_used_reset() (the calling thread counted): 0 if none was
 * made.  For -v, which says what a setup really used. */
unsigned setup_threads_used(void);
void setup_threads_used_reset(void);

/* The processes of the widest cowrun_setup_forked() since the reset: 0
 * if the workload forked none for its setup. */
unsigned setup_processes_used(void);

/* The threads of the widest cowrun_setup_threaded() since the reset: 0
 * if the workload's libraries ran none for its setup. */
unsigned setup_own_threads_used(void);

#endif
