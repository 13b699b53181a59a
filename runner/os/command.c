/*
 * command.c - a report's command: parsed once, spawned once per report
 * with its replacement strings filled in.  See command.h.
 *
 * The text is cut into parts at parse time: literal text, and the
 * replacement strings with how each value must be written where it
 * stands (as is, or quoted for the shell).  A run only renders the parts.
 *
 * A direct command's words are each rendered into one argument with the
 * raw values.  A shell command's text is rendered into one string for
 * /bin/sh -c, each value quoted for the place it stands in: unquoted, it
 * is single-quoted (unless every byte of it is plain); inside the text's
 * own '...' its quotes are closed and reopened; inside "..." the four
 * bytes special there are backslashed.  So `gzip < "{}"`, a common habit,
 * gets the name itself, and no name runs anything in any of them.  A
 * replacement string between backquotes is refused: it would need a
 * second level of escaping per nesting, $(...) does not.
 *
 * Braces: only {}, {/}, {#} and {%} are replacement strings; GNU
 * Parallel's {.}, {/.} and {//} are refused, not left as text (a report
 * has no extension of its own to strip, and its directory is private).
 * Any other '{'
 * or '}' is literal text and not shell syntax: /bin/sh (dash) does no
 * brace expansion, so "{a,b}" means the same run either way, and a
 * brace group needs a ';' or a newline, which are syntax already.  In a
 * shell text, "${" starts a parameter expansion ("${#}" is the shell's,
 * not {#}) and "\{}" is a quoted brace, not a replacement string.
 *
 * Pipes: a '|' that makes a pipeline is refused.  /bin/sh (dash) has no
 * pipefail: a pipeline's status is its last stage's, so `sort | gzip`
 * would commit a truncated report when sort fails.  A '|' inside quotes,
 * inside $(...) or backquotes (whose status no command's depends on; in
 * $((...)) it is arithmetic), "||" and the ">|" redirection are no
 * pipelines.  A group, { ...; } or ( ... ), is no way around: its status
 * is still the last stage's.
 */
#define _GNU_SOURCE
#include "command_internal.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A shell command's label shows this much of its text. */
#define LABEL_TEXT_MAX 60
/* Contexts ("...", $(...), ${...}) nested deeper than this are refused. */
#define NEST_MAX 64

/* PART_PATH {} the complete report's path, PART_NAME {/} its name;
 * PART_REFUSED one of GNU Parallel's that cowrun does not fill in. */
enum part_kind { PART_TEXT, PART_PATH, PART_NAME, PART_NUMBER, PART_SLOT, PART_REFUSED };

/* How a value is written where its replacement string stands. */
enum quoting {
	QUOTE_RAW,          /* a direct command's argument: as is */
	QUOTE_SHELL,        /* unquoted shell text */
	QUOTE_IN_SINGLE,    /* inside the text's own '...' */
	QUOTE_IN_DOUBLE,    /* inside the text's own "..." */
};

struct part {
	enum part_kind kind;
	enum quoting quoting;
	size_t start, len;          /* PART_TEXT: the bytes of c->text */
};

struct command {
	char *text;
	int shell;
	struct part *parts;
	size_t nparts, cap;
	size_t *word_end;           /* word i is parts [word_end[i-1], word_end[i]) */
	size_t nwords;
	char label[COMMAND_LABEL_MAX];
};

/* ---- parsing ---- */

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* The replacement string at s: its kind in *kind and its length, or 0. */
static size_t replacement_at(const char *s, enum part_kind *kind)
{
	if (s[0] != '{')
		return 0;
	if (s[1] == '}') {
		*kind = PART_PATH;
		return 2;
	}
	if ((s[1] == '#' || s[1] == '%' || s[1] == '/' || s[1] == '.') && s[2] == '}') {
		*kind = s[1] == '#' ? PART_NUMBER : s[1] == '%' ? PART_SLOT
			: s[1] == '/' ? PART_NAME : PART_REFUSED;
		return 3;
	}
	if (s[1] == '/' && (s[2] == '.' || s[2] == '/') && s[3] == '}') {
		*kind = PART_REFUSED;   /* {/.} {//} */
		return 4;
	}
	return 0;
}

/* A leading "NAME=" word: the shell would take it as an assignment. */
static int starts_with_assignment(const char *s)
{
	while (is_blank(*s))
		s++;
	if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	while (*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	       (*s >= '0' && *s <= '9'))
		s++;
	return *s == '=';
}

/* Whether the text needs /bin/sh: a byte of its syntax outside the
 * replacement strings ("{#}" holds a '#'), or a leading assignment. */
static int has_shell_syntax(const char *text)
{
	enum part_kind kind;

	if (starts_with_assignment(text))
		return 1;
	for (const char *s = text; *s; s++) {
		size_t n = replacement_at(s, &kind);
		if (n > 0)
			s += n - 1;
		else if (strchr("|&;<>()$`\\\"'*?[]~#\n", *s))
			return 1;
	}
	return 0;
}

static int add_part(struct command *c, enum part_kind kind, enum quoting quoting,
		    size_t start, size_t len)
{
	if (kind == PART_TEXT && len == 0)
		return 0;
	if (c->nparts == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		struct part *p = realloc(c->parts, cap * sizeof *p);
		if (p == NULL)
			return -1;
		c->parts = p;
		c->cap = cap;
	}
	c->parts[c->nparts++] = (struct part){ kind, quoting, start, len };
	return 0;
}

/* The literal text [from, to), then the replacement string at `to` (if
 * n > 0).  Returns 0 or -1 (out of memory). */
static int add_text_and(struct command *c, size_t from, size_t to, enum part_kind kind,
			size_t n, enum quoting quoting)
{
	if (add_part(c, PART_TEXT, quoting, from, to - from) != 0)
		return -1;
	return n > 0 ? add_part(c, kind, quoting, to, n) : 0;
}

/* The one-line refusal of the replacement string at s (n bytes). */
static int refuse_replacement(const char *option, const char *s, size_t n, char *why,
			      size_t size)
{
	snprintf(why, size, "%s: %.*s is not filled in: cowrun knows {} (the complete report's "
		 "path), {/} (its name), {#} and {%%}", option, (int)n, s);
	return -1;
}

/* A direct command: words at blanks, each its text and replacement
 * strings.  Returns 0, or -1 with why. */
static int parse_words(struct command *c, const char *option, char *why, size_t size)
{
	const char *t = c->text;
	size_t i = 0, len = strlen(t);

	c->word_end = malloc((len / 2 + 1) * sizeof *c->word_end); /* words <= (len+1)/2 */
	if (c->word_end == NULL)
		goto oom;
	while (t[i]) {
		while (is_blank(t[i]))
			i++;
		if (!t[i])
			break;
		size_t from = i;
		while (t[i] && !is_blank(t[i])) {
			enum part_kind kind;
			size_t n = replacement_at(t + i, &kind);
			if (n == 0) {
				i++;
				continue;
			}
			if (kind == PART_REFUSED)
				return refuse_replacement(option, t + i, n, why, size);
			if (add_text_and(c, from, i, kind, n, QUOTE_RAW) != 0)
				goto oom;
			i += n;
			from = i;
		}
		if (add_text_and(c, from, i, PART_TEXT, 0, QUOTE_RAW) != 0)
			goto oom;
		c->word_end[c->nwords++] = c->nparts;
	}
	return 0;
oom:
	snprintf(why, size, "%s: out of memory", option);
	return -1;
}

/* Where the shell lexer stands.  Enough of sh's grammar to know how a
 * replacement string is quoted: quotes, backslashes, comments, $(...),
 * (...), ${...} and backquotes, nested.  Not modelled (rare in a
 * filter; there a value may be mis-quoted, as it would be with plain
 * single quotes everywhere): here-documents, and an unbalanced ')' of
 * a case pattern inside $(...). */
enum context {
	CTX_TOP,            /* unquoted, outermost */
	CTX_PAREN,          /* unquoted, inside (...) */
	CTX_SUBST,          /* unquoted, inside $(...) or $((...)) */
	CTX_BRACE,          /* unquoted, inside ${...} */
	CTX_SINGLE,         /* '...' */
	CTX_DOUBLE,         /* "..." */
	CTX_DOUBLE_BRACE,   /* ${...} inside "..." */
	CTX_BACKQUOTE,      /* `...` */
};

struct lexer {
	const char *t;
	size_t i;
	int depth;
	int substs;         /* CTX_SUBST on the stack */
	int pipe;           /* a pipeline's '|' was stepped over */
	enum context stack[NEST_MAX];
};

static enum context top(const struct lexer *lx)
{
	return lx->stack[lx->depth];
}

static int push(struct lexer *lx, enum context ctx, size_t skip)
{
	if (lx->depth + 1 >= NEST_MAX)
		return -1;
	lx->stack[++lx->depth] = ctx;
	lx->substs += ctx == CTX_SUBST;
	lx->i += skip;
	return 0;
}

static void pop(struct lexer *lx)
{
	if (lx->depth > 0)
		lx->substs -= lx->stack[lx->depth--] == CTX_SUBST;
	lx->i++;
}

/* At an unquoted '|': "||" and ">|" are stepped over whole; a pipe
 * outside every $(...) is noted. */
static void step_bar(struct lexer *lx)
{
	const char *s = lx->t + lx->i;

	if (s[1] == '|') {
		lx->i += 2;
		return;
	}
	if (!(lx->i > 0 && s[-1] == '>') && lx->substs == 0)
		lx->pipe = 1;
	lx->i++;
}

/* A '#' starts a comment only at the start of a word. */
static int word_starts_at(const struct lexer *lx)
{
	return lx->i == 0 || strchr(" \t\n;&|()<>", lx->t[lx->i - 1]) != NULL;
}

/* One step in an unquoted context.  Returns 0, or -1 (too deep). */
static int step_unquoted(struct lexer *lx)
{
	const char *s = lx->t + lx->i;
	enum context ctx = top(lx);

	if (s[0] == '\\')
		lx->i += s[1] ? 2 : 1;
	else if (s[0] == '\'')
		return push(lx, CTX_SINGLE, 1);
	else if (s[0] == '"')
		return push(lx, CTX_DOUBLE, 1);
	else if (s[0] == '`')
		return push(lx, CTX_BACKQUOTE, 1);
	else if (s[0] == '$' && s[1] == '(')
		return push(lx, CTX_SUBST, 2);
	else if (s[0] == '$' && s[1] == '{')
		return push(lx, CTX_BRACE, 2);
	else if (s[0] == '(' && ctx != CTX_BRACE)
		return push(lx, CTX_PAREN, 1);
	else if ((s[0] == ')' && (ctx == CTX_PAREN || ctx == CTX_SUBST)) ||
		 (s[0] == '}' && ctx == CTX_BRACE))
		pop(lx);
	else if (s[0] == '|' && ctx != CTX_BRACE)
		step_bar(lx);
	else if (s[0] == '#' && ctx != CTX_BRACE && word_starts_at(lx))
		lx->i += strcspn(s, "\n");
	else
		lx->i++;
	return 0;
}

/* One step inside "..." (or a ${...} in it).  Returns 0 or -1. */
static int step_double(struct lexer *lx)
{
	const char *s = lx->t + lx->i;

	if (s[0] == '\\')
		/* There a backslash quotes only these; before others it is
		 * itself literal, and a "{}" after it is a replacement string. */
		lx->i += s[1] && strchr("$`\"\\\n", s[1]) ? 2 : 1;
	else if (s[0] == '"' && top(lx) == CTX_DOUBLE)
		pop(lx);
	else if (s[0] == '}' && top(lx) == CTX_DOUBLE_BRACE)
		pop(lx);
	else if (s[0] == '"')
		return push(lx, CTX_DOUBLE, 1);
	else if (s[0] == '`')
		return push(lx, CTX_BACKQUOTE, 1);
	else if (s[0] == '$' && s[1] == '(')
		return push(lx, CTX_SUBST, 2);
	else if (s[0] == '$' && s[1] == '{')
		return push(lx, CTX_DOUBLE_BRACE, 2);
	else
		lx->i++;
	return 0;
}

static void step_other(struct lexer *lx)
{
	const char *s = lx->t + lx->i;

	if (top(lx) == CTX_SINGLE && s[0] == '\'')
		pop(lx);
	else if (top(lx) == CTX_BACKQUOTE && s[0] == '`')
		pop(lx);
	else if (top(lx) == CTX_BACKQUOTE && s[0] == '\\' && s[1])
		lx->i += 2;
	else
		lx->i++;
}

static int lexer_step(struct lexer *lx)
{
	switch (top(lx)) {
	case CTX_TOP:
	case CTX_PAREN:
	case CTX_SUBST:
	case CTX_BRACE:
		return step_unquoted(lx);
	case CTX_DOUBLE:
	case CTX_DOUBLE_BRACE:
		return step_double(lx);
	default:
		step_other(lx);
		return 0;
	}
}

static enum quoting quoting_in(enum context ctx)
{
	if (ctx == CTX_SINGLE)
		return QUOTE_IN_SINGLE;
	if (ctx == CTX_DOUBLE || ctx == CTX_DOUBLE_BRACE)
		return QUOTE_IN_DOUBLE;
	return QUOTE_SHELL;
}

/* A shell command: the text, its replacement strings marked with how
 * each value is quoted there.  Returns 0, or -1 with why. */
static int parse_shell(struct command *c, const char *option, char *why, size_t size)
{
	struct lexer lx = { .t = c->text };
	size_t from = 0;

	/* A '\' before a '{' in unquoted text or backquotes quotes the
	 * brace: the lexer steps over both, so no replacement starts there. */
	while (lx.t[lx.i]) {
		enum part_kind kind;
		size_t n = replacement_at(lx.t + lx.i, &kind);
		if (n == 0) {
			if (lexer_step(&lx) != 0) {
				snprintf(why, size, "%s: quotes and parentheses nested over %d deep",
					 option, NEST_MAX - 1);
				return -1;
			}
			if (lx.pipe) {
				snprintf(why, size, "%s: a '|' pipeline hides a failing stage (/bin/sh "
					 "has no pipefail; its status is the last stage's): write the "
					 "stages in a script that checks each, and name the script",
					 option);
				return -1;
			}
			continue;
		}
		if (kind == PART_REFUSED)
			return refuse_replacement(option, lx.t + lx.i, n, why, size);
		if (top(&lx) == CTX_BACKQUOTE) {
			snprintf(why, size, "%s: a replacement string inside `...`: "
				 "write $(...) instead", option);
			return -1;
		}
		if (add_text_and(c, from, lx.i, kind, n, quoting_in(top(&lx))) != 0)
			goto oom;
		lx.i += n;
		from = lx.i;
	}
	if (add_text_and(c, from, lx.i, PART_TEXT, 0, QUOTE_SHELL) != 0)
		goto oom;
	c->word_end = malloc(sizeof *c->word_end);
	if (c->word_end == NULL)
		goto oom;
	c->word_end[0] = c->nparts;
	c->nwords = 1;
	return 0;
oom:
	snprintf(why, size, "%s: out of memory", option);
	return -1;
}

/* Control characters of a label shown as '?': it goes into one-line
 * messages. */
static void make_printable(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* How much of the `len` bytes at s to keep: at most `max`, not cutting
 * a UTF-8 character. */
size_t command_utf8_prefix(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

static void make_label(struct command *c)
{
	if (c->shell) {
		size_t n = command_utf8_prefix(c->text, strlen(c->text), LABEL_TEXT_MAX);
		/* Its text (messages quote it; -v says it runs under sh -c). */
		snprintf(c->label, sizeof c->label, "%.*s%s", (int)n, c->text,
			 c->text[n] ? "..." : "");
	} else {
		/* The first word as given: up to the first blank. */
		const char *t = c->text + strspn(c->text, " \t");
		size_t n = strcspn(t, " \t");
		n = command_utf8_prefix(t, n, sizeof c->label - 1);
		snprintf(c->label, sizeof c->label, "%.*s", (int)n, t);
	}
	make_printable(c->label);
}

struct command *command_parse(const char *option, const char *text, char *why, size_t size)
{
	if (option == NULL)
		option = "command";
	/* A newline alone would make an empty shell script: as empty. */
	if (text == NULL || text[strspn(text, " \t\n")] == '\0') {
		snprintf(why, size, "%s: empty command", option);
		return NULL;
	}
	struct command *c = calloc(1, sizeof *c);
	if (c == NULL || (c->text = strdup(text)) == NULL) {
		free(c);
		snprintf(why, size, "%s: out of memory", option);
		return NULL;
	}
	c->shell = has_shell_syntax(text);
	make_label(c);
	int rc = c->shell ? parse_shell(c, option, why, size) : parse_words(c, option, why, size);
	if (rc != 0) {
		command_free(c);
		return NULL;
	}
	return c;
}

void command_free(struct command *c)
{
	if (c == NULL)
		return;
	free(c->text);
	free(c->parts);
	free(c->word_end);
	free(c);
}

int command_uses_shell(const struct command *c)
{
	return c->shell;
}

const char *command_text(const struct command *c)
{
	return c->text;
}

/* The words /bin/sh (dash) runs itself, whatever PATH holds: its
 * reserved words and builtins.  A shell command starting with one has no
 * program to look up. */
static int shell_runs_itself(const char *w)
{
	static const char *const own[] = {
		"!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if",
		"in", "then", "until", "while", ":", ".", "alias", "bg", "break", "cd", "chdir",
		"command", "continue", "echo", "eval", "exec", "exit", "export", "false", "fc",
		"fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read",
		"readonly", "return", "set", "shift", "test", "times", "trap", "true", "type",
		"ulimit", "umask", "unalias", "unset", "wait",
	};

	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (strcmp(w, own[i]) == 0)
			return 1;
	return 0;
}

int command_uses_path(const struct command *c)
{
	for (size_t p = 0; p < c->nparts; p++)
		if (c->parts[p].kind == PART_PATH)
			return 1;
	return 0;
}

/* A byte of a plain word: taken as itself by the shell anywhere. */
static int plain_byte(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("_-./,:+@%", ch) != NULL;
}

int command_program(const struct command *c, char *out, size_t size)
{
	/* Its first part must be text: a replacement string first has no
	 * name before a report exists. */
	if (c->nparts == 0 || c->parts[0].kind != PART_TEXT)
		return 0;
	const char *t = c->text + c->parts[0].start;
	size_t len = c->parts[0].len, i = 0;
	if (c->shell)
		while (i < len && (is_blank(t[i]) || t[i] == '\n'))
			i++;
	size_t from = i;
	while (i < len && !is_blank(t[i]) && !(c->shell && strchr("\n;&|()<>", t[i])))
		i++;
	size_t n = i - from;
	/* A word glued to a replacement string ("lp{#}") is not known yet. */
	if (n == 0 || (i == len && c->nparts > 1 && (c->shell || c->word_end[0] > 1)))
		return 0;
	if (c->shell) {
		for (size_t j = from; j < i; j++)
			if (!plain_byte(t[j]))
				return 0;   /* quoted, a variable, an assignment, a glob */
		size_t k = i;
		while (k < len && is_blank(t[k]))
			k++;
		if (k < len && t[k] == '(')
			return 0;   /* "f() ...": a function's definition */
	}
	if (n + 1 > size)
		return 0;
	memcpy(out, t + from, n);
	out[n] = '\0';
	return c->shell && shell_runs_itself(out) ? 0 : 1;
}

/* ---- rendering ---- */

/* The values as strings, for one run. */
struct values {
	const char *path;
	const char *name;
	char number[24];
	char slot[24];
};

static void values_of(const struct command_values *v, struct values *out)
{
	out->path = v->path ? v->path : "";
	out->name = v->name ? v->name : "";
	snprintf(out->number, sizeof out->number, "%llu", v->number);
	snprintf(out->slot, sizeof out->slot, "%lu", v->slot);
}

/* Bytes the shell takes as themselves anywhere unquoted (not '=': "{}"
 * first would be an assignment; not '~', '#', '{' at a word's start). */
static int plain_for_shell(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_-./,:+@%", *s)))
			return 0;
	return 1;
}

/* Append one byte at out[n] when out is not NULL; return n + 1.  Each
 * render is called twice: to measure (out NULL), then to write. */
static size_t put(char *out, size_t n, char ch)
{
	if (out)
		out[n] = ch;
	return n + 1;
}

static size_t put_str(char *out, size_t n, const char *s)
{
	while (*s)
		n = put(out, n, *s++);
	return n;
}

/* The value `val` written for its place, at out + n; the new length. */
static size_t render_value(char *out, size_t n, const char *val, enum quoting q)
{
	int wrap = q == QUOTE_SHELL && !plain_for_shell(val);

	if (q == QUOTE_RAW || (q == QUOTE_SHELL && !wrap))
		return put_str(out, n, val);
	if (wrap)
		n = put(out, n, '\'');
	for (const char *s = val; *s; s++) {
		if (q == QUOTE_IN_DOUBLE && strchr("$`\"\\", *s))
			n = put(out, n, '\\');
		if (q != QUOTE_IN_DOUBLE && *s == '\'')
			n = put_str(out, n, "'\\'"); /* close, a quoted ', reopen */
		n = put(out, n, *s);
	}
	return wrap ? put(out, n, '\'') : n;
}

/* Word w rendered at out + n (not terminated); the new length. */
static size_t render_word(const struct command *c, size_t w, const struct values *v,
			  char *out, size_t n)
{
	for (size_t p = w ? c->word_end[w - 1] : 0; p < c->word_end[w]; p++) {
		const struct part *part = &c->parts[p];
		switch (part->kind) {
		case PART_TEXT:
			if (out)
				memcpy(out + n, c->text + part->start, part->len);
			n += part->len;
			break;
		case PART_PATH:
			n = render_value(out, n, v->path, part->quoting);
			break;
		case PART_NAME:
			n = render_value(out, n, v->name, part->quoting);
			break;
		case PART_NUMBER:
			n = render_value(out, n, v->number, part->quoting);
			break;
		case PART_SLOT:
			n = render_value(out, n, v->slot, part->quoting);
			break;
		case PART_REFUSED:   /* never parsed into a command */
			break;
		}
	}
	return n;
}

/*
 * The argument vector, in one allocation (free() it): the words, or
 * /bin/sh -c and the text.  With `joined`, instead one string of them
 * separated by spaces (command_expand()).  NULL: out of memory.
 */
static void *render(const struct command *c, const struct command_values *cv, int joined)
{
	static const char *const shell[] = { "/bin/sh", "-c" };
	size_t nfixed = c->shell && !joined ? 2 : 0;
	size_t nargs = nfixed + c->nwords;
	size_t ptrs = joined ? 0 : (nargs + 1) * sizeof(char *);
	size_t bytes = ptrs;
	struct values v;

	values_of(cv, &v);
	for (size_t i = 0; i < nfixed; i++)
		bytes += strlen(shell[i]) + 1;
	for (size_t w = 0; w < c->nwords; w++)
		bytes += render_word(c, w, &v, NULL, 0) + 1;
	char *block = malloc(bytes);
	if (block == NULL)
		return NULL;
	char **argv = (char **)block;
	char *s = block + ptrs;
	for (size_t i = 0; i < nargs; i++) {
		if (!joined)
			argv[i] = s;
		if (i < nfixed) {
			s = stpcpy(s, shell[i]) + 1;
			continue;
		}
		s += render_word(c, i - nfixed, &v, s, 0);
		*s++ = joined && i + 1 < nargs ? ' ' : '\0';
	}
	if (!joined)
		argv[nargs] = NULL;
	return block;
}

char *command_expand(const struct command *c, const struct command_values *v)
{
	return render(c, v, 1);
}

char **command_argv(const struct command *c, const struct command_values *v)
{
	return render(c, v, 0);
}

const char *command_label(const struct command *c)
{
	return c->label;
}
