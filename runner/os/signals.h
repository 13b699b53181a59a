/*
 * signals.h - SIGINT and SIGTERM in the parent.  The handlers only count
 * the signal and write a byte to a self-pipe, so the main loop's poll()
 * wakes up; the loop decides what to do: first signal, stop handing out
 * tasks and let running ones finish; second signal, kill the workers.
 */
#ifndef COWRUN_SIGNALS_H
#define COWRUN_SIGNALS_H

#include <stddef.h>

/* Install the handlers.  Returns 0 or -1 with errno. */
int signals_install(void);

/* The self-pipe pattern both the run and cowrun serve's master use: open
 * a non-blocking, close-on-exec pipe into wake[] and route each of the
 * nsigs signals in sigs[] to handler (SA_RESTART).  Returns 0 or -1 with
 * errno. */
int signals_route(int wake[2], void (*handler)(int), const int *sigs, size_t nsigs);

/* Close a pipe signals_route() opened (if open) and mark it closed. */
void signals_close_pipe(int wake[2]);

/* In a process forked from one that installed them (a served batch's
 * leader): a fresh self-pipe, the counts back to 0, the handlers again,
 * nothing watched.  Returns 0 or -1 with errno. */
int signals_restart(void);

/* Watch `fd` (a served batch's client connection; the caller keeps it):
 * the pool polls it with the self-pipe, and any input or hangup on it
 * means the client is gone: signals_watched_gone() counts it as a second
 * signal (SIGPIPE): stop, kill the running workers.  -1: nothing. */
void signals_watch(int fd);
int signals_watched_fd(void);
void signals_watched_gone(void);

/* How many SIGINT/SIGTERM have arrived, and the last one (0 if none). */
int signals_count(void);
int signals_last(void);

/* The read end of the self-pipe, for poll(); -1 before install.  Read it
 * empty with signals_drain(). */
int signals_fd(void);
void signals_drain(void);

/* In a freshly forked worker: SIGINT ignored (the terminal's Ctrl-C is the
 * parent's to handle), SIGTERM back to its default, the pipe and the
 * watched descriptor closed. */
void signals_reset_in_worker(void);

#endif
