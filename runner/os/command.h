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
 * Running it is command_run.h.
 */
#ifndef COWRUN_COMMAND_H
#define COWRUN_COMMAND_H

#include <stddef.h>
#include <sys/types.h>

struct command;

/* How long a label (command_run.h) may be, its final NUL included. */
#define COMMAND_LABEL_MAX 96

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

/* The replacement strings filled in, as the command would see them, for
 * -v and the dry run: the argument words joined by spaces, or the shell
 * text.  Returns a malloc'd string, or NULL. */
char *command_expand(const struct command *c, const struct command_values *v);

#endif
