/*
 * command_internal.h - what command.c (parsing, rendering) gives
 * command_run.c (running): a parsed command's argument vector and label.
 */
#ifndef COWRUN_COMMAND_INTERNAL_H
#define COWRUN_COMMAND_INTERNAL_H

#include "command.h"

#include <stddef.h>

/* The argument vector with the values filled in, in one allocation
 * (free() it): the words, or /bin/sh -c and the text.  NULL: out of
 * memory. */
char **command_argv(const struct command *c, const struct command_values *v);

/* How messages name it (COMMAND_LABEL_MAX bytes). */
const char *command_label(const struct command *c);

/* The longest prefix of s[0..len) of at most max bytes that does not cut
 * a UTF-8 sequence. */
size_t command_utf8_prefix(const char *s, size_t len, size_t max);

#endif
