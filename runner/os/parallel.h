/*
 * parallel.h - the setup threads behind cowrun_parallel() (cowrun.h): how
 * many there are is the runner's decision, made before setup.
 */
#ifndef COWRUN_PARALLEL_H
#define COWRUN_PARALLEL_H

/* Threads for the next setup: at least 1 (0 is taken as 1). */
void setup_threads_set(unsigned threads);

#endif
