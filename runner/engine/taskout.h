/*
 * taskout.h - where run()'s standard output goes: during the task phase,
 * in every mode, file descriptor 1 is a copy of standard error, so a
 * task's printf() reaches stderr (untagged; in omp mode threads share the
 * descriptor, so lines from tasks may interleave) and can never mix with
 * the summary.  The real standard output is kept on a saved descriptor
 * and put back before the summary is printed.  Forked workers inherit the
 * redirection; each flushes stdout after every task.
 */
#ifndef COWRUN_TASKOUT_H
#define COWRUN_TASKOUT_H

/* Flush stdout, keep a copy of fd 1 (close-on-exec), point fd 1 at fd 2.
 * Returns the saved descriptor for taskout_end(), or -1 when fd 1 could
 * not be copied (closed): then nothing was changed. */
int taskout_begin(void);

/* Flush stdout (run()'s last prints go to stderr) and put the saved
 * descriptor back on fd 1; closes `saved`.  No-op for -1. */
void taskout_end(int saved);

#endif
