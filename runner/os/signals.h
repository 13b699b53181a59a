/*
 * signals.h - SIGINT and SIGTERM (and SIGHUP in a direct run) in the
 * parent.  The handlers count the signal, set the workers' stop flag and
 * write a byte to a self-pipe, so the main loop's poll() wakes up; the
 * loop decides what to do: first signal, stop handing out tasks and let
 * running ones finish; second signal, kill the workers.  During the
 * setup, which is the workload's code and never polls, the handler ends
 * the run itself (signals_setup_begin()).
 */
#ifndef COWRUN_SIGNALS_H
#define COWRUN_SIGNALS_H

#include <stddef.h>

/* Install the handlers.  Returns 0 or -1 with errno. */
int signals_install(void);

/* A direct run: SIGHUP (the terminal closed) as SIGTERM, unless it was
 * ignored when cowrun started (nohup): then it stays ignored, in the
 * workers too.  cowrun serve keeps SIGHUP as its reload, and a served
 * batch's leader never calls this.  Returns 0 or -1 with errno. */
int signals_install_hangup(void);

/* From signals_setup_begin() to signals_setup_end(), a signal ends the
 * run in its handler: the files noted are removed, one line "WHO:
 * interrupted (SIGINT) during the setup: no task was started" goes to
 * stderr, and the process _exits with 128 + the signal.  Up to 4 files,
 * noted before the setup begins; the path is copied. */
void signals_setup_begin(const char *who);
void signals_setup_note_file(const char *path);
void signals_setup_end(void);

/* The workers' stop flag (pool.c's shared page): the handler sets it, so
 * no task is claimed after the first signal; set at once if a signal has
 * already come.  NULL before that page is unmapped. */
void signals_stop_flag(_Atomic int *flag);

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
 * parent's to handle), SIGTERM back to its default (SIGHUP too, unless it
 * was ignored at start), the pipe and the watched descriptor closed, no
 * stop flag. */
void signals_reset_in_worker(void);

#endif
