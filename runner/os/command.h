/*
 * command.h - a command a report goes through (--report-filter) or to
 * (--report-to), or that a workload starts (cowrun_command()): parsed
 * once, run once per report with its replacement strings filled in.
 *
 * The text is GNU Parallel's: {} the complete report's absolute path, {/}
 * its name (basename({})), {#} the task's number counted from 1, {%} the
 * worker's slot, 1 to -j.  {.}, {/.} and {//} are refused, and so is a
 * '|' pipeline: /bin/sh has no pipefail.  A text without shell
 * syntax is split into words at blanks and run directly (each word one
 * argument, whatever a value holds); one with shell syntax runs under
 * /bin/sh -c, each value substituted shell-quoted for where it stands
 * (unquoted, inside '...' or inside "...").
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
#ifndef COWRUN_COMMAND_H
#define COWRUN_COMMAND_H

#include <stddef.h>
#include <sys/types.h>

struct command;

/* SIGTERM, then SIGKILL this much later: the pool's grace period for a
 * worker's group, and the supervisor's for its command's. */
#define COMMAND_KILL_GRACE_MS 2000

/* command_start()'s out_fd: its stdout into the file its stderr goes to,
 * copied to the caller's stderr (tagged) when it ends. */
#define COMMAND_OUT_CAPTURE (-2)

/* The values of the replacement strings for one run. */
struct command_values {
	const char *name;            /* {/}: the report's file name */
	unsigned long long number;   /* {#}: the task's number, from 1 */
	unsigned long slot;          /* {%}: the worker's slot, from 1 */
	const char *path;            /* {}: the complete report's absolute path
				      * (NULL: none; see command_uses_path()) */
	const char *tag;             /* its copied output's lines start "TAG: "
				      * (the task's name); NULL: untagged.
				      * Must live until command_finish(). */
};

/* One started command. */
struct command_run {
	pid_t pid;                   /* its supervisor's */
	int stderr_fd;               /* the unnamed file its stderr goes to */
	const char *tag;             /* command_values' tag */
	char label[96];              /* how messages name it: its first word,
				      * or the start of a shell command's text */
};

/*
 * Parse `text` (for messages, `option` names where it came from, e.g.
 * "--report-filter").  Returns the command, or NULL with a one-line
 * reason in `why` (empty text, only blanks, a '{' that starts no
 * replacement string is fine: it is literal; a replacement string
 * between backquotes, where no quoting is safe: $(...) is; {.}, {/.} or
 * {//}; a '|' pipeline outside $(...) and quotes; quotes and parentheses
 * nested over 63 deep; out of memory).
 */
struct command *command_parse(const char *option, const char *text, char *why, size_t size);
void command_free(struct command *c);

/* 1 if it runs under /bin/sh -c, 0 if directly (for -v). */
int command_uses_shell(const struct command *c);
/*
 * The program it starts, to look up on PATH before any report exists:
 * a direct command's first word, or a shell command's first word when
 * that is plain (no quote, variable, assignment, glob or replacement
 * string in it, and not a word /bin/sh runs itself: `{`, `if`, `cd`,
 * `exec`, `echo`...).  Returns 1 with it in out, or 0 when there is none
 * to look up (or it does not fit in size).
 */
int command_program(const struct command *c, char *out, size_t size);
/* Its text as given. */
const char *command_text(const struct command *c);
/* 1 if its text holds {}: it needs the complete report as a file. */
int command_uses_path(const struct command *c);

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

/* The replacement strings filled in, as the command would see them, for
 * -v and the dry run: the argument words joined by spaces, or the shell
 * text.  Returns a malloc'd string, or NULL. */
char *command_expand(const struct command *c, const struct command_values *v);

#endif
