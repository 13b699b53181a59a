/*
 * inputs.c - the input files of a run and the identity body built from
 * them.  See inputs.h.
 */
#define _GNU_SOURCE
#include "inputs.h"
#include "config.h"
#include "files/inputid.h"
#include "files/results.h"
#include "files/runid.h"
#include "os/util.h"
#include "os/fileops.h"
#include "workload/options.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* At most this many files declared by cowrun_input() in one setup (a
 * Python script's own modules among them). */
#define DECLARED_MAX 256
/* The label of such an input in the identity. */
#define DECLARED_LABEL "cowrun_input"

/* One input: the option at argv[first], its value, what the file is. */
struct input {
	int first;
	char option[72];         /* "--input" */
	const char *given;       /* the value, as given */
	char at[PATH_MAX];       /* `given` made absolute before the setup, which may
				  * change the working directory: looked at by this */
	int guessed;             /* taken for one: its value names a file */
	int maybe;               /* a merge without setup: a guess not yet settled */
	struct inputid before;   /* before the setup */
	struct inputid id;       /* after it: the one in the identity */
};

/* This process's run's inputs: one set, filled by inputs_find(). */
static struct {
	const struct cowrun_workload *w;
	int argc;
	char **argv;
	struct input *in;
	size_t n, cap;
	char from[4096];         /* the results file a merge took them from */
	char *declared[DECLARED_MAX]; /* cowrun_input()'s paths, malloc'd */
	size_t ndeclared;
	int settled;             /* inputs_settle() began: no more are declared */
} inputs;

static int kind_of(const struct cowrun_option *o)
{
	return COWRUN_OPT_KIND((int)o->type);
}

/* Could this entry's value name a file? */
static int names_a_file(const struct cowrun_option *o)
{
	return kind_of(o) == COWRUN_OPT_STRING || kind_of(o) == COWRUN_OPT_INPUT;
}

/* ---- a workload that parses its own arguments (COWRUN_OWN_ARGV) ----
 * Its first argument (a script) is an input by rule; every later one
 * that names an existing regular file, or whose "--name=VALUE" value
 * does, is guessed to be one, unless --not-input gives its text. */

static int own_argv(const struct cowrun_workload *w)
{
	return w != NULL && w->abi_version >= 4 && (w->flags & COWRUN_OWN_ARGV);
}

/* The file an argument of such a workload could name: the argument, or
 * the value of "--name=VALUE". */
static const char *own_value(const char *arg)
{
	const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;

	return eq ? eq + 1 : arg;
}

static int own_said_not_input(const char *arg, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], arg) == 0 || strcmp(names[i], own_value(arg)) == 0)
			return 1;
	return 0;
}

/* An argument --not-input names must be one of the run's. */
static int own_check_names(const struct cowrun_workload *w, int argc, char **argv,
			   const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int found = 0;
		for (int a = 2; a < argc && !found; a++)
			found = own_said_not_input(argv[a], &names[i], 1);
		if (!found) {
			warnx_("--not-input: '%s' is none of the arguments given to %s after its "
			       "first (for %s, --not-input names an argument as given)",
			       names[i], w->name, w->name);
			return -1;
		}
	}
	return 0;
}

/* The input kind (0, 1, or 2: a guess a merge settles) of the argument
 * argv[a]; its label into option. */
static int own_input_kind(char **argv, int a, const char *const *not_inputs, size_t nnot,
			  int look, char *option, size_t size)
{
	if (a == 1) {
		snprintf(option, size, "script");
		return 1;
	}
	const char *value = own_value(argv[a]);
	if (value[0] == '\0' || strcmp(argv[a], "--") == 0 ||
	    own_said_not_input(argv[a], not_inputs, nnot))
		return 0;
	snprintf(option, size, "argv[%d]", a - 1); /* no space: a field of the identity */
	if (!look)
		return 2;
	struct inputid id;
	inputid_stat(&id, value);
	return id.kind == INPUT_FILE ? 1 : 0;
}

int inputs_check_names(const struct cowrun_workload *w, const char *const *names, size_t n)
{
	if (own_argv(w))
		return 0; /* checked against the arguments in inputs_find() */
	for (size_t i = 0; i < n; i++) {
		const struct cowrun_option *o = options_find(w->options, names[i]);
		if (o == NULL || !names_a_file(o)) {
			warnx_("--not-input: '%s' is no option of %s that names a file (see %s --help)",
			       names[i], w->name, w->name);
			return -1;
		}
	}
	return 0;
}

static int said_not_input(const struct cowrun_option *o, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (options_find(o, names[i]) == o)
			return 1;
	return 0;
}

/* Is the token an input, a guess to settle later (2), or neither (0)?
 * `declared`: the table declares inputs, so nothing is guessed. */
static int input_kind(const struct options_token *t, int declared, const char *const *not_inputs,
		      size_t nnot, int look)
{
	const struct cowrun_option *o = t->option;

	if (o == NULL || t->value == NULL || !names_a_file(o) ||
	    (o->type & (COWRUN_OPT_TUNING | COWRUN_OPT_NOT_INPUT)) ||
	    said_not_input(o, not_inputs, nnot))
		return 0;
	if (kind_of(o) == COWRUN_OPT_INPUT)
		return 1;
	if (declared || t->value[0] == '\0')
		return 0;
	if (!look)
		return 2;
	struct inputid id;
	inputid_stat(&id, t->value);
	return id.kind == INPUT_FILE ? 1 : 0;
}

int inputs_find(const struct cowrun_workload *w, int argc, char **argv,
		const char *const *not_inputs, size_t nnot, int look)
{
	struct options_token t;
	int declared = options_declares_inputs(w->options), i = 1;

	inputs_free();
	inputs.w = w;
	inputs.argc = argc;
	inputs.argv = argv;
	if (inputs_check_names(w, not_inputs, nnot) != 0 ||
	    (own_argv(w) && own_check_names(w, argc, argv, not_inputs, nnot) != 0))
		return -1;
	inputs.cap = (size_t)(argc > 0 ? argc : 1) + DECLARED_MAX;
	inputs.in = calloc(inputs.cap, sizeof *inputs.in);
	if (inputs.in == NULL) {
		warnx_("out of memory");
		return -1;
	}
	/* An own-argv workload has no table: each argument is a token. */
	while (options_next(own_argv(w) ? NULL : w->options, argc, argv, &i, &t)) {
		char option[72];
		int kind = own_argv(w)
			? own_input_kind(argv, t.first, not_inputs, nnot, look, option, sizeof option)
			: input_kind(&t, declared, not_inputs, nnot, look);
		if (kind == 0)
			continue;
		if (!own_argv(w))
			snprintf(option, sizeof option, "--%s", t.option->name);
		struct input *in = &inputs.in[inputs.n++];
		in->first = t.first;
		snprintf(in->option, sizeof in->option, "%s", option);
		in->given = own_argv(w) ? own_value(argv[t.first]) : t.value;
		in->guessed = own_argv(w) ? t.first > 1 : kind_of(t.option) != COWRUN_OPT_INPUT;
		in->maybe = kind == 2;
		absolute_path(in->given, in->at, sizeof in->at);
		if (look)
			inputid_stat(&in->before, in->at);
		in->id = in->before;
	}
	return 0;
}

/* ---- the body ---- */

/* The input that starts at argv[first], or NULL. */
static const struct input *input_at(int first)
{
	for (size_t k = 0; k < inputs.n; k++)
		if (inputs.in[k].first == first && !inputs.in[k].maybe)
			return &inputs.in[k];
	return NULL;
}

/* The body with each input's identity `early ? before : id`. */
static char *body_of(int early)
{
	char *text = NULL;
	size_t size = 0, n = 0;
	FILE *f = open_memstream(&text, &size);
	struct options_token t;
	int i = 1;

	if (f == NULL)
		return NULL;
	if (inputs.from[0])
		fprintf(f, "inputs-from %s\n", inputs.from);
	for (size_t k = 0; k < inputs.n; k++)
		if (!inputs.in[k].maybe)
			inputid_format(f, (unsigned)++n, inputs.in[k].option, inputs.in[k].guessed,
				       early ? &inputs.in[k].before : &inputs.in[k].id);
	for (n = 0; inputs.w && options_next(inputs.w->options, inputs.argc, inputs.argv, &i, &t);) {
		if (input_at(t.first)) {
			fprintf(f, "arg %s\narg-input %zu\n", input_at(t.first)->option, ++n);
			continue;
		}
		if (t.option && (t.option->type & COWRUN_OPT_TUNING))
			continue;
		for (int a = t.first; a < t.first + t.count; a++)
			fprintf(f, "arg %s\n", inputs.argv[a]);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

char *inputs_body(void)
{
	return body_of(0);
}

/* ---- before and after the setup ---- */

int inputs_check_journal(const struct cowrun_workload *w, uint64_t seed, const char *journal)
{
	char *saved = NULL, *body = NULL, *ours = NULL;
	int rc = 0;

	if (results_read_identity(journal, &saved) != 0)
		return 0;
	if ((body = body_of(1)) == NULL ||
	    (ours = results_identity(COWRUN_VERSION, w, seed, body, 0, NULL,
				     (struct results_context){ 0 })) == NULL) {
		warnx_("out of memory");
		rc = -1;
	} else {
		rc = runid_check("--resume", journal, saved, strlen(saved), ours,
				 RUNID_RESUME | RUNID_EARLY);
	}
	free(saved);
	free(body);
	free(ours);
	return rc;
}

/* Does this process hold the file `id` names open for writing (the
 * setup opened it so, a sqlite database it keeps)? */
static int open_for_writing_here(const struct inputid *id)
{
	DIR *d = id->kind == INPUT_FILE ? opendir("/proc/self/fd") : NULL;
	int found = 0;

	for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
		struct stat st;
		int fd = atoi(e->d_name), fl;
		if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) != 0)
			continue;
		fl = fcntl(fd, F_GETFL);
		found = (uint64_t)st.st_dev == id->dev && (uint64_t)st.st_ino == id->ino &&
			fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
	}
	if (d)
		closedir(d);
	return found;
}

/* The one line for an input the setup changed, with the way out: an
 * argument or an option is said to be none with --not-input; a file the
 * setup declared (cowrun_input()) is not declared; the script has none
 * but to run again. */
static void say_changed_in_setup(const struct input *in)
{
	char way[PATH_MAX + 96] = "";
	const char *arg = in->first > 0 ? inputs.argv[in->first] : NULL;

	if (in->first < 0)
		snprintf(way, sizeof way, ": a file the setup writes is no input to declare "
			 "(cowrun_input()); else run again");
	else if (!(own_argv(inputs.w) && in->first == 1))
		snprintf(way, sizeof way, ": if the setup writes to it, it is no input: give "
			 "--not-input '%s'; else run again", own_argv(inputs.w) ? arg : in->option + 2);
	warnx_("input '%s' (%s) changed while the setup read it%s%s", in->given, in->option,
	       open_for_writing_here(&in->id) ? " (this process holds it open for writing)" : "",
	       way[0] ? way : ": run again");
}

/* One input after the setup: the same file, in the same state, as
 * before it; then its hash.  *hashed_here: the runner read it. */
static int settle_one(struct input *in, int *hashed_here)
{
	inputid_stat(&in->id, in->at);
	if (!inputid_same_state(&in->before, &in->id)) {
		say_changed_in_setup(in);
		return -1;
	}
	*hashed_here = 0;
	if (in->id.kind == INPUT_MISSING || inputid_take_reported(&in->id) ||
	    in->id.kind != INPUT_FILE)
		return 0;
	*hashed_here = 1;
	return inputid_hash(&in->id, in->at);
}

/* ---- inputs the setup declares (cowrun_input) ---- */

/* A declared input, its path copied into inputs.declared; or NULL (too
 * many, or out of memory). */
static struct input *add_declared(const char *path)
{
	for (size_t k = 0; k < inputs.n; k++)
		if (inputs.in[k].first < 0 && strcmp(inputs.in[k].given, path) == 0)
			return &inputs.in[k];
	char *copy = inputs.ndeclared < DECLARED_MAX && inputs.n < inputs.cap ? strdup(path) : NULL;
	if (copy == NULL)
		return NULL;
	inputs.declared[inputs.ndeclared++] = copy;
	struct input *in = &inputs.in[inputs.n++];
	*in = (struct input){ .first = -1, .given = copy };
	snprintf(in->option, sizeof in->option, DECLARED_LABEL);
	return in;
}

int cowrun_input(const char *path)
{
	if (inputs.in == NULL || inputs.settled) {
		warnx_("%s: cowrun_input('%s') outside setup(): ignored", inputs.w ? inputs.w->name : "?",
		       path ? path : "(null)");
		return -1;
	}
	if (path == NULL || path[0] == '\0') {
		warnx_("%s: cowrun_input(): an empty path", inputs.w->name);
		return -1;
	}
	/* A file already an input (an argument, or declared under another
	 * spelling) is one input: its identity is recorded, and hashed, once. */
	char at[PATH_MAX];
	struct inputid id;
	absolute_path(path, at, sizeof at);
	inputid_stat(&id, at);
	for (size_t k = 0; id.kind == INPUT_FILE && k < inputs.n; k++)
		if (inputs.in[k].before.kind == INPUT_FILE && inputs.in[k].before.dev == id.dev &&
		    inputs.in[k].before.ino == id.ino)
			return 0;
	struct input *in = add_declared(path);
	if (in == NULL) {
		warnx_("%s: cowrun_input('%s'): more than %d inputs declared, or out of memory",
		       inputs.w->name, path, DECLARED_MAX);
		return -1;
	}
	/* Relative to the working directory the setup has now. */
	absolute_path(in->given, in->at, sizeof in->at);
	inputid_stat(&in->before, in->at);
	in->id = in->before;
	return 0;
}

int inputs_settle(const char *workload, int verbose)
{
	uint64_t t0 = now_ns(), bytes = 0, hashed_bytes = 0;
	size_t from_setup = 0, hashed = 0;

	inputs.settled = 1;
	for (size_t k = 0; k < inputs.n; k++) {
		int here;
		if (settle_one(&inputs.in[k], &here) != 0)
			return -1;
		bytes += inputs.in[k].id.size;
		hashed += here;
		hashed_bytes += here ? inputs.in[k].id.size : 0;
		from_setup += !here && inputs.in[k].id.hashed;
	}
	if (verbose && inputs.n > 0) {
		char b[32], h[32];
		warnx_("%s: %zu input%s, %s bytes: %zu hashed by the setup's own read, %zu (%s bytes) "
		       "hashed here in %.3f s", workload, inputs.n, inputs.n == 1 ? "" : "s",
		       cowrun_fmt_count(b, sizeof b, (int64_t)bytes), from_setup, hashed,
		       cowrun_fmt_count(h, sizeof h, (int64_t)hashed_bytes), (now_ns() - t0) / 1e9);
	}
	return 0;
}

/* ---- a merge without setup ---- */

/* The saved input `s` as this run's input `in`. */
static void take_input(struct input *in, const struct runid_input *s)
{
	memset(&in->id, 0, sizeof in->id);
	in->id.kind = strcmp(s->kind, "file") == 0 ? INPUT_FILE
		: strcmp(s->kind, "missing") == 0 ? INPUT_MISSING
		: strcmp(s->kind, "other") == 0 ? INPUT_OTHER : INPUT_UNKNOWN;
	in->id.size = strtoull(s->size, NULL, 10);
	in->id.hashed = strcmp(s->hash, "-") != 0;
	in->id.hash = strtoull(s->hash, NULL, 16);
	in->guessed = s->guessed;
	in->maybe = 0;
}

int inputs_take_from(const char *path)
{
	char *text = NULL;
	struct runid_input *saved = NULL;
	size_t nsaved = 0, next = 0;

	if (results_read_identity(path, &text) != 0)
		return 0;
	if (runid_inputs(text, strlen(text), &saved, &nsaved) != 0) {
		free(text);
		return -1;
	}
	/* In argv order, as both were numbered: an input here whose option
	 * is the next saved one's takes its identity. */
	for (size_t k = 0; k < inputs.n; k++) {
		if (next < nsaved && strcmp(inputs.in[k].option, saved[next].option) == 0)
			take_input(&inputs.in[k], &saved[next++]);
	}
	/* The files its setup declared come last: this merge ran no setup
	 * to declare them, so they are taken as they were saved. */
	for (; next < nsaved; next++) {
		struct input *in = strcmp(saved[next].option, DECLARED_LABEL) == 0
			? add_declared(saved[next].path) : NULL;
		if (in != NULL)
			take_input(in, &saved[next]);
	}
	snprintf(inputs.from, sizeof inputs.from, "%s", path);
	free(saved);
	free(text);
	return 0;
}

const char *inputs_script(void)
{
	if (!own_argv(inputs.w) || inputs.n == 0 || inputs.in[0].first != 1)
		return NULL;
	return inputs.in[0].before.path[0] ? inputs.in[0].before.path : inputs.in[0].at;
}

void inputs_free(void)
{
	for (size_t k = 0; k < inputs.ndeclared; k++)
		free(inputs.declared[k]);
	free(inputs.in);
	memset(&inputs, 0, sizeof inputs);
}
