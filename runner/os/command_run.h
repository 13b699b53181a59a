/*
 * command_run.h - running a command parsed by command.h: started once per
 * report with its replacement strings filled in, waited for or taken down.
 *
 * Spawned with posix_spawn(), never fork(): the cost does not grow with
 * the caller's page tables (a worker holding a 1 GiB setup).  What is
 * spawned is bin/cowrun-supervise (tools/supervise.c), in a process group
 * of its own, which starts the command in another and stays its parent:
 * when the caller dies (even by SIGKILL) or gives up on the command, the
 * supervisor sends SIGTERM to the command's group, waits
 * COMMAND_KILL_GRACE_MS, then SIGKILL.  The command gets every signal at
 * its default action and an empty mask, whatever the caller ignores or
 * blocks (workers ignore SIGINT, SIGXFSZ, SIGPIPE), and no descriptor but
 * 0, 1 and 2.  Its standard error goes to an unnamed temporary file, not a
 * pipe, so no write of the caller's can deadlock against it; the last line
 * names a failure.
 */
#ifndef COWRUN_COMMAND_RUN_H
#define COWRUN_COMMAND_RUN_H

#include "command.h"

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

/* SIGTERM, then SIGKILL this much later: the pool's grace period for a
 * worker's group, and the supervisor's for its command's. */
#define COMMAND_KILL_GRACE_MS 2000

/* command_start()'s out_fd: its stdout into the file its stderr goes to,
 * copied to the caller's stderr (tagged) when it ends. */
#define COMMAND_OUT_CAPTURE (-2)

/* One started command. */
struct command_run {
	pid_t pid;                   /* its supervisor's */
	int stderr_fd;               /* the unnamed file its stderr goes to */
	const char *tag;             /* command_values' tag */
	char label[COMMAND_LABEL_MAX]; /* how messages name it: its first word,
				       * or the start of a shell command's text */
};

/*
 * Start it with standard input `in_fd` and standard output `out_fd`
 * (either -1: the caller's own 0 or 1; out_fd COMMAND_OUT_CAPTURE: with
 * its stderr), its stderr into a new unnamed temporary file.  It has
 * started (exec'd) when this returns 0.  Returns 0 with *run filled in, or -1 with a one-line
 * reason in `why` that names the command ("cannot run 'lpx': No such file
 * or directory").
 */
int command_start(const struct command *c, const struct command_values *v, int in_fd,
		  int out_fd, struct command_run *run, char *why, size_t size);

/*
 * Wait for it (EINTR retried) and close its stderr file.  Returns 0 when
 * it exited 0; else -1 with `why`: "'gzip' exited with status 1: gzip:
 * stdin: not in gzip format" or "'cat' was killed by signal 9 (Killed)",
 * the last non-empty line of its stderr after the colon when there is
 * one (control characters shown as '?', at most 200 bytes).  On success
 * whatever it wrote to stderr (and its captured stdout) is copied to the
 * caller's stderr in one write, each line tagged "TAG: " when v->tag was
 * given, so a filter's warnings are not lost and a printer's job ids
 * name their task.
 */
int command_finish(struct command_run *run, char *why, size_t size);

/* Take it down (its supervisor: SIGTERM to its group, the grace period,
 * SIGKILL), wait for it and close its stderr file: for a caller that gives
 * up before it would finish (run() failed). */
void command_abandon(struct command_run *run);

/* Use this supervisor (a unit test's), not the one beside the binary. */
void command_set_supervisor(const char *path);

/* A fork-mode worker: keep the pid of its running supervisor (0: none)
 * in *where, for the pool to wait for when the worker dies (the
 * supervisor, in its own group, then becomes the pool's child). */
void command_publish_to(_Atomic int *where);

#endif
