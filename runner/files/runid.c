/*
 * runid.c - a run's identity text read back and compared with this run's,
 * naming what differs.  See runid.h.
 */
#define _GNU_SOURCE
#include "runid.h"
#include "inputid.h"
#include "os/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An identity cut into its lines: a NUL-terminated copy. */
struct lines {
	char *copy;
	char **line;
	size_t n;
};

static void lines_free(struct lines *l)
{
	free(l->copy);
	free(l->line);
}

/* Returns 0, or -1 (ENOMEM) with nothing left to free. */
static int lines_cut(struct lines *l, const char *text, size_t len)
{
	size_t max = 1;

	for (size_t i = 0; i < len; i++)
		max += text[i] == '\n';
	l->n = 0;
	l->copy = malloc(len + 1);
	l->line = malloc(max * sizeof *l->line);
	if (l->copy == NULL || l->line == NULL) {
		lines_free(l);
		return -1;
	}
	memcpy(l->copy, text, len);
	l->copy[len] = '\0';
	for (char *p = l->copy, *nl; *p; p = nl + 1) {
		l->line[l->n++] = p;
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		*nl = '\0';
	}
	return 0;
}

static int has_key(const char *line, const char *key)
{
	size_t k = strlen(key);

	return strncmp(line, key, k) == 0 && line[k] == ' ';
}

enum line_class { HEAD, SEED, TASKS, NAMES, CONTEXT, INPUT, INPUT_AT, ARG, FROM, RUN };

static enum line_class class_of(const char *line)
{
	return has_key(line, "arg") || has_key(line, "arg-input") ? ARG
		: has_key(line, "input") ? INPUT : has_key(line, "input-at") ? INPUT_AT
		: has_key(line, "tasks") ? TASKS : has_key(line, "context") ? CONTEXT
		: has_key(line, "seed") ? SEED : has_key(line, "names") ? NAMES
		: has_key(line, "inputs-from") ? FROM : has_key(line, "run-id") ? RUN : HEAD;
}

/* Are a's and b's lines of class c the same, in order? */
static int same_class(const struct lines *a, const struct lines *b, enum line_class c)
{
	size_t i = 0, j = 0;

	for (;; i++, j++) {
		while (i < a->n && class_of(a->line[i]) != c)
			i++;
		while (j < b->n && class_of(b->line[j]) != c)
			j++;
		if (i == a->n || j == b->n)
			return i == a->n && j == b->n;
		if (strcmp(a->line[i], b->line[j]) != 0)
			return 0;
	}
}

/* The line "KEY N ..." (KEY input or input-at), or NULL. */
static const char *numbered(const struct lines *l, enum line_class c, unsigned n)
{
	for (size_t i = 0; i < l->n; i++) {
		unsigned m;
		if (class_of(l->line[i]) == c && sscanf(strchr(l->line[i], ' '), " %u", &m) == 1 &&
		    m == n)
			return l->line[i];
	}
	return NULL;
}

/* One input: its "input" line and, if there is one, its "input-at" line. */
static int parse_input(const struct lines *l, const char *line, struct runid_input *in)
{
	char where[2][48];
	int used = 0;
	const char *at;

	memset(in, 0, sizeof *in);
	if (sscanf(line, "input %u %63s %15s %23s %23s%n", &in->n, in->option, in->kind,
		   in->size, in->hash, &used) != 5)
		return -1;
	in->guessed = strcmp(line + used, " guessed") == 0;
	if ((at = numbered(l, INPUT_AT, in->n)) != NULL &&
	    sscanf(at, "input-at %*u %47s %47s %n", where[0], where[1], &used) == 2 && used > 0) {
		snprintf(in->where, sizeof in->where, "%s %s", where[0], where[1]);
		snprintf(in->path, sizeof in->path, "%s", at + used);
		inputid_unescape(in->path);
	}
	return 0;
}

/* Every input of l, in order (see runid_inputs()). */
static int parse_inputs(const struct lines *l, struct runid_input **inputs, size_t *n)
{
	*n = 0;
	*inputs = malloc((l->n + 1) * sizeof **inputs);
	if (*inputs == NULL)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		if (class_of(l->line[i]) == INPUT && parse_input(l, l->line[i], &(*inputs)[*n]) == 0)
			++*n;
	return 0;
}

int runid_inputs(const char *text, size_t len, struct runid_input **inputs, size_t *n)
{
	struct lines l;
	int rc;

	*inputs = NULL;
	*n = 0;
	if (lines_cut(&l, text, len) != 0)
		return -1;
	rc = parse_inputs(&l, inputs, n);
	lines_free(&l);
	return rc;
}

void runid_field(const char *text, size_t len, const char *key, char *buf, size_t size)
{
	size_t k = strlen(key);
	const char *p = text, *end = text + len;

	snprintf(buf, size, "?");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		if (n > k && memcmp(p, key, k) == 0 && p[k] == ' ') {
			snprintf(buf, size, "%.*s", (int)(n - k - 1), p + k + 1);
			return;
		}
		p += n + 1;
	}
}

/* ---- describing a whole identity ---- */

/* The "cowrun VERSION" line's value: the first line, "cowrun results N",
 * is the format's magic, not the version. */
static void cowrun_version(const char *text, size_t len, char *buf, size_t size)
{
	const char *nl = memchr(text, '\n', len);
	size_t skip = nl ? (size_t)(nl - text) + 1 : len;

	runid_field(text + skip, len - skip, "cowrun", buf, size);
}

/* When the two were written for different workload ABIs (a cowrun
 * upgrade), say so: no flag makes such results mix.  "" otherwise. */
static void describe_upgrade(const char *context, const char *saved, size_t len,
			     const char *ours, char *buf, size_t size)
{
	char as[32], ao[32];

	runid_field(saved, len, "abi", as, sizeof as);
	runid_field(ours, strlen(ours), "abi", ao, sizeof ao);
	buf[0] = '\0';
	if (strcmp(as, ao) != 0)
		snprintf(buf, size, ": results do not cross a workload ABI upgrade (%s to %s): %s",
			 as, ao, strcmp(context, "merge") == 0 ? "save them again with this cowrun"
							       : "run the batch again without --resume");
}

/* ", cowrun 0.2.0, ABI 1" when the two identities differ there, ", input
 * HASH" when both have a merge context (an input) and those differ, else
 * "". */
static void describe_build(const char *a, size_t alen, const char *b, size_t blen, char *buf,
			   size_t size)
{
	char va[64], vb[64], aa[32], ab[32], ca[32], cb[32];

	cowrun_version(a, alen, va, sizeof va);
	cowrun_version(b, blen, vb, sizeof vb);
	runid_field(a, alen, "abi", aa, sizeof aa);
	runid_field(b, blen, "abi", ab, sizeof ab);
	runid_field(a, alen, "context", ca, sizeof ca);
	runid_field(b, blen, "context", cb, sizeof cb);
	buf[0] = '\0';
	if (strcmp(va, vb) != 0 || strcmp(aa, ab) != 0)
		snprintf(buf, size, ", cowrun %s, ABI %s", va, aa);
	if (strcmp(ca, cb) != 0 && strcmp(ca, "?") != 0 && strcmp(cb, "?") != 0) {
		size_t used = strlen(buf);
		snprintf(buf + used, size - used, ", input %s", ca);
	}
}

/* An argument as a message shows it: an input's value is its path. */
static const char *shown_arg(const struct lines *l, const char *line, char *buf, size_t size)
{
	unsigned n;
	struct runid_input in;
	const char *input;

	if (!has_key(line, "arg-input"))
		return strchr(line, ' ') + 1;
	snprintf(buf, size, "(an input)");
	if (sscanf(line, "arg-input %u", &n) == 1 && (input = numbered(l, INPUT, n)) != NULL &&
	    parse_input(l, input, &in) == 0 && in.path[0])
		snprintf(buf, size, "%s", in.path);
	return buf;
}

/* "sales --rows 10 (64 tasks)" from an identity text, for messages;
 * `build` (describe_build()) goes inside the parentheses. */
static void describe_identity(const char *identity, size_t length, const char *build,
			      char *buf, size_t size)
{
	struct lines l;
	size_t used = 0;
	const char *tasks = "?";

	buf[0] = '\0';
	if (lines_cut(&l, identity, length) != 0)
		return;
	for (size_t i = 0; i < l.n && used < size - 1; i++) {
		const char *line = l.line[i];
		if (has_key(line, "workload") || class_of(line) == ARG) {
			char path[PATH_MAX];
			used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "",
						 has_key(line, "workload") ? line + 9
						 : shown_arg(&l, line, path, sizeof path));
		} else if (has_key(line, "tasks")) {
			tasks = line + 6;
		}
	}
	if (used < size - 1)
		snprintf(buf + used, size - used, " (%s tasks%s)", tasks, build);
	lines_free(&l);
}

/* ---- one input that differs ---- */

static const char *kind_phrase(const char *kind)
{
	return strcmp(kind, "file") == 0 ? "a regular file"
		: strcmp(kind, "missing") == 0 ? "missing" : "not a regular file";
}

/* "2025-03-01 12:00:00.123456789 UTC" from "SECONDS.NANOSECONDS". */
static void format_mtime(const char *text, char *buf, size_t size)
{
	long long s;
	long ns = 0;
	struct tm tm;
	time_t t;

	if (sscanf(text, "%lld.%ld", &s, &ns) < 1) {
		snprintf(buf, size, "%s", text);
		return;
	}
	t = (time_t)s;
	if (gmtime_r(&t, &tm) == NULL)
		snprintf(buf, size, "%s", text);
	else
		snprintf(buf, size, "%04d-%02d-%02d %02d:%02d:%02d.%09ld UTC", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ns);
}

/* What changed from `was` to `now` (an input of the same number and
 * option), into buf: its kind, path (RESUME), size, content, device and
 * inode (RESUME), modification time (RESUME).  Returns 1 if anything did,
 * else 0.  A hash not known on either side (EARLY, a merge before it
 * took its inputs) is not compared. */
static int what_changed(const struct runid_input *was, const struct runid_input *now,
			int flags, char *buf, size_t size)
{
	char dev[2][48], mtime[2][48], a[64], b[64];

	if (strcmp(was->kind, now->kind) != 0)
		snprintf(buf, size, "it was %s and is %s now", kind_phrase(was->kind),
			 kind_phrase(now->kind));
	else if ((flags & RUNID_RESUME) && strcmp(was->path, now->path) != 0)
		snprintf(buf, size, "it is another file: '%s' then, '%s' now", was->path, now->path);
	else if (strcmp(was->size, now->size) != 0)
		snprintf(buf, size, "its size changed from %s to %s bytes", was->size, now->size);
	else if (strcmp(was->hash, now->hash) != 0 && strcmp(was->hash, "-") != 0 &&
		 strcmp(now->hash, "-") != 0)
		snprintf(buf, size, "its content changed (same size, hash %s then, %s now)",
			 was->hash, now->hash);
	else if (!(flags & RUNID_RESUME) || strcmp(was->where, now->where) == 0)
		return 0;
	else if (sscanf(was->where, "%47s %47s", dev[0], mtime[0]) != 2 ||
		 sscanf(now->where, "%47s %47s", dev[1], mtime[1]) != 2 ||
		 strcmp(dev[0], dev[1]) != 0)
		snprintf(buf, size, "it was replaced by another file (device:inode %s then, %s now)",
			 was->where, now->where);
	else {
		format_mtime(mtime[0], a, sizeof a);
		format_mtime(mtime[1], b, sizeof b);
		snprintf(buf, size, "it was modified (modification time %s then, %s now)", a, b);
	}
	return 1;
}

/* "1000 bytes with hash 0123...", "missing" or "not a regular file". */
static const char *content_phrase(const struct runid_input *in, char *buf, size_t size)
{
	if (strcmp(in->kind, "file") != 0)
		return kind_phrase(in->kind);
	snprintf(buf, size, "%s bytes with hash %s", in->size, in->hash);
	return buf;
}

/* The one line for an input that differs.  `from`: where this run's
 * inputs came from (a merge without setup), or NULL: this run. */
static void say_input_changed(const char *context, const char *path,
			      const struct runid_input *was, const struct runid_input *now,
			      const char *what, const char *from)
{
	char a[96], b[96], ours[PATH_MAX + 16];
	const char *file = now->path[0] ? now->path : was->path;

	if (strcmp(context, "merge") != 0) {
		warnx_("%s: input '%s' (%s) changed since the run being resumed: %s: run again "
		       "without --resume", context, file, now->option, what);
		return;
	}
	snprintf(ours, sizeof ours, from ? "'%s'" : "this run", from);
	warnx_("%s: '%s' was saved from another input than %s: %s '%s' was %s there and %s in %s",
	       context, path, ours, now->option, file, content_phrase(was, a, sizeof a),
	       content_phrase(now, b, sizeof b), ours);
}

/* The input whose option was guessed in one identity and is no input in
 * the other: the hint for a general mismatch, or NULL. */
static const char *guessed_in_one(const struct runid_input *a, size_t na,
				  const struct runid_input *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;
		while (j < nb && strcmp(a[i].option, b[j].option) != 0)
			j++;
		if (a[i].guessed && j == nb)
			return a[i].option;
	}
	return NULL;
}

/* The general mismatch: both runs described, and a hint when an option
 * was taken for an input in one run only. */
static void say_other_run(const char *context, const char *path, const char *saved, size_t len,
			  const char *ours, const char *guessed)
{
	char s[512], o[512], sb[128], ob[128], hint[256] = "";

	describe_build(saved, len, ours, strlen(ours), sb, sizeof sb);
	describe_build(ours, strlen(ours), saved, len, ob, sizeof ob);
	describe_identity(saved, len, sb, s, sizeof s);
	describe_identity(ours, strlen(ours), ob, o, sizeof o);
	if (guessed && strncmp(guessed, "--", 2) == 0)
		snprintf(hint, sizeof hint, " (%s names an existing file in one run only, so it was "
			 "taken for an input there: if it names none, give --not-input %s)",
			 guessed, guessed + 2);
	else if (guessed) /* an argument of a workload that parses its own */
		snprintf(hint, sizeof hint, " (its %s names an existing file in one run only, so "
			 "it was taken for an input there: if it names none, give --not-input "
			 "with its text)", guessed);
	if (!guessed)
		describe_upgrade(context, saved, len, ours, hint, sizeof hint);
	warnx_("%s: '%s' was saved by '%s', not by this run's '%s'%s", context, path, s, o, hint);
}

/* Another --seed: the tasks would draw other numbers. */
static void say_other_seed(const char *context, const char *path, const char *saved, size_t len,
			   const char *ours)
{
	char s[32], o[32];

	runid_field(saved, len, "seed", s, sizeof s);
	runid_field(ours, strlen(ours), "seed", o, sizeof o);
	if (strcmp(context, "merge") == 0)
		warnx_("merge: '%s' was saved with --seed %s, not this run's --seed %s: its tasks "
		       "drew other numbers: merge with --seed %s, or save it again", path, s, o, s);
	else
		warnx_("%s: '%s' was saved with --seed %s, not this run's --seed %s: resume with "
		       "--seed %s, or run again without --resume", context, path, s, o, s);
}

/* As many tasks, named otherwise (or in another order): the names
 * depend on more than the inputs and arguments. */
static void say_other_names(const char *context, const char *path, const char *saved,
			    size_t len, const char *ours)
{
	char s[32], o[32], n[32];

	runid_field(saved, len, "names", s, sizeof s);
	runid_field(ours, strlen(ours), "names", o, sizeof o);
	runid_field(ours, strlen(ours), "tasks", n, sizeof n);
	warnx_("%s: '%s' was saved for other task names than this run's (%s tasks; names hash %s "
	       "there, %s here: the names depend on more than the inputs and arguments): %s",
	       context, path, n, s, o, strcmp(context, "merge") == 0
	       ? "save the results again" : "run again without --resume");
}

/* The inputs of both: 0 if they match, 1 after a message (an input that
 * differs), -1 if they cannot be paired (the caller says so). */
static int check_inputs(const char *context, const char *path, const struct runid_input *s,
			size_t ns, const struct runid_input *o, size_t no, int flags,
			const char *from)
{
	char what[PATH_MAX * 2 + 64];

	/* Before the setup, the inputs it will declare (cowrun_input) are
	 * not known yet: those before them are compared. */
	if (ns != no && !((flags & RUNID_EARLY) && ns > no))
		return -1;
	for (size_t i = 0; i < no; i++) {
		if (s[i].n != o[i].n || strcmp(s[i].option, o[i].option) != 0)
			return -1;
		if (what_changed(&s[i], &o[i], flags, what, sizeof what)) {
			say_input_changed(context, path, &s[i], &o[i], what, from);
			return 1;
		}
	}
	return 0;
}

int runid_check(const char *context, const char *path, const char *saved, size_t len,
		const char *ours, int flags)
{
	struct lines sl, ol;
	struct runid_input *si = NULL, *oi = NULL;
	size_t ns = 0, no = 0;
	char from[PATH_MAX];
	int rc = -1, inputs;

	if (lines_cut(&sl, saved, len) != 0) {
		warnx_("%s: out of memory reading the identity of '%s'", context, path);
		return -1;
	}
	if (lines_cut(&ol, ours, strlen(ours)) != 0) {
		warnx_("%s: out of memory reading the identity of '%s'", context, path);
		lines_free(&sl);
		return -1;
	}
	if (parse_inputs(&sl, &si, &ns) != 0 || parse_inputs(&ol, &oi, &no) != 0) {
		warnx_("%s: out of memory reading the identity of '%s'", context, path);
		goto out;
	}
	runid_field(ours, strlen(ours), "inputs-from", from, sizeof from);
	/* The seed first: it is known before the setup, and a run of
	 * another seed is another batch whatever else it shares. */
	if (same_class(&sl, &ol, HEAD) && !same_class(&sl, &ol, SEED)) {
		say_other_seed(context, path, saved, len, ours);
		goto out;
	}
	/* An input next: a task count or a merge context that differs
	 * because the input did is not the news. */
	if (same_class(&sl, &ol, HEAD) && same_class(&sl, &ol, ARG) &&
	    (inputs = check_inputs(context, path, si, ns, oi, no, flags,
				   strcmp(from, "?") ? from : NULL)) >= 0) {
		if (inputs > 0)
			goto out;
		if (same_class(&sl, &ol, TASKS) && same_class(&sl, &ol, CONTEXT)) {
			/* Before the setup the names are not known yet. */
			rc = (flags & RUNID_EARLY) || same_class(&sl, &ol, NAMES) ? 0 : -1;
			if (rc != 0)
				say_other_names(context, path, saved, len, ours);
			goto out;
		}
	}
	/* Before the setup only an input is refused: the rest is compared,
	 * and said with the task count, once the setup has run. */
	if (flags & RUNID_EARLY) {
		rc = 0;
		goto out;
	}
	say_other_run(context, path, saved, len, ours, guessed_in_one(si, ns, oi, no)
		      ? guessed_in_one(si, ns, oi, no) : guessed_in_one(oi, no, si, ns));
out:
	free(si);
	free(oi);
	lines_free(&sl);
	lines_free(&ol);
	return rc;
}
