/*
 * options.c - parse workload options from a declarative table, and print
 * them as help.  A table entry names a field of the workload's config
 * struct by offset, so one parser serves every workload.
 */
#include "options.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An entry's type without its ABI 3 flags (TUNING, NOT_INPUT). */
static int kind_of(const struct cowrun_option *o)
{
	return COWRUN_OPT_KIND((int)o->type);
}

static const struct cowrun_option *find_option(const struct cowrun_option *opts,
					       const char *name, size_t len)
{
	for (; opts && kind_of(opts) != COWRUN_OPT_END; opts++)
		if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

/* Store `value` into the field `o` describes.  Returns 0 or -1 after a
 * message naming the option and the reason. */
static int store_value(const struct cowrun_option *o, const char *value, void *config)
{
	char *field = (char *)config + o->offset;
	long long integer;
	double real;

	switch (kind_of(o)) {
	case COWRUN_OPT_INT:
		if (parse_ll(value, (long long)o->min, (long long)o->max, &integer) != 0)
			goto bad;
		memcpy(field, &integer, sizeof integer);
		return 0;
	case COWRUN_OPT_DOUBLE:
		if (parse_double(value, o->min, o->max, &real) != 0)
			goto bad;
		memcpy(field, &real, sizeof real);
		return 0;
	case COWRUN_OPT_STRING:
	case COWRUN_OPT_INPUT:
		memcpy(field, &value, sizeof value);
		return 0;
	default:
		cowrun_error("--%s: option table entry has an unknown type", o->name);
		return -1;
	}
bad:
	if (errno == ERANGE)
		cowrun_error("--%s: '%s' is out of range (%.15g to %.15g)",
			     o->name, value, o->min, o->max);
	else
		cowrun_error("--%s: '%s' is not a number", o->name, value);
	return -1;
}

/* Parse one "--name[=value]" at argv[*i], consuming its value argument
 * if separate.  Returns 0 or -1 after a message. */
static int parse_one(int argc, char **argv, int *i,
		     const struct cowrun_option *opts, void *config)
{
	const char *arg = argv[*i] + 2;
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct cowrun_option *o = find_option(opts, arg, len);

	if (o == NULL) {
		cowrun_error("unknown option '%s' (see --help)", argv[*i]);
		return -1;
	}
	if (kind_of(o) == COWRUN_OPT_FLAG) {
		if (eq) {
			cowrun_error("--%s takes no value", o->name);
			return -1;
		}
		int one = 1;
		memcpy((char *)config + o->offset, &one, sizeof one);
		return 0;
	}
	if (eq)
		return store_value(o, eq + 1, config);
	if (*i + 1 >= argc) {
		cowrun_error("--%s needs a value (%s)", o->name, o->argname ? o->argname : "VALUE");
		return -1;
	}
	return store_value(o, argv[++*i], config);
}

int cowrun_parse_options(int argc, char **argv,
			 const struct cowrun_option *options, void *config)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0 && i + 1 < argc) {
			cowrun_error("unexpected argument '%s'", argv[i + 1]);
			return -1;
		}
		if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
			if (strcmp(argv[i], "--") == 0)
				continue;
			cowrun_error("unexpected argument '%s' (options are --name VALUE)", argv[i]);
			return -1;
		}
		if (parse_one(argc, argv, &i, options, config) != 0)
			return -1;
	}
	return 0;
}

/* Bytes of a config struct the table writes: its last field's end. */
static size_t config_size(const struct cowrun_option *opts)
{
	size_t size = 0;

	for (const struct cowrun_option *o = opts; kind_of(o) != COWRUN_OPT_END; o++) {
		int kind = kind_of(o);
		size_t field = kind == COWRUN_OPT_INT ? sizeof(long long)
			: kind == COWRUN_OPT_DOUBLE ? sizeof(double)
			: kind == COWRUN_OPT_STRING || kind == COWRUN_OPT_INPUT ? sizeof(const char *)
			: sizeof(int);
		if (o->offset + field > size)
			size = o->offset + field;
	}
	return size;
}

/* A workload that parses its own arguments (COWRUN_OWN_ARGV: python, r)
 * has no table to check them against, but its first, the script, is
 * always an input: it must be readable here, said in the words the
 * workload's setup would say it (cowrun-cluster --slurm checks before it
 * submits, instead of every element failing on its node).  No script is
 * the workload's own line, at its setup. */
static int check_script(int argc, char **argv)
{
	struct stat st;
	int fd, err = 0;

	if (argc < 2 || argv[1][0] == '-')
		return 0;
	fd = open(argv[1], O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO must not block */
	if (fd < 0 || fstat(fd, &st) != 0)
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = EISDIR;
	if (fd >= 0)
		close(fd);
	if (err == 0)
		return 0;
	cowrun_error("cannot read the script '%s': %s", argv[1], strerror(err));
	return -1;
}

int options_check(const struct cowrun_workload *w, int argc, char **argv)
{
	if (w->flags & COWRUN_OWN_ARGV)
		return check_script(argc, argv);
	if (w->options == NULL)
		return 0;
	size_t size = config_size(w->options);
	void *config = calloc(1, size ? size : 1);
	if (config == NULL) {
		cowrun_error("out of memory");
		return -1;
	}
	/* The defaults struct holds every field the table names. */
	if (w->defaults != NULL && size > 0)
		memcpy(config, w->defaults, size);
	int rc = cowrun_parse_options(argc, argv, w->options, config);
	free(config);
	return rc;
}

int options_want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	}
	return 0;
}

/* The default value of `o`, read from the workload's defaults config. */
static void format_default(const struct cowrun_option *o, const void *defaults,
			   char *buf, size_t size)
{
	long long integer;
	double real;
	const char *text;

	buf[0] = '\0';
	if (defaults == NULL)
		return;
	const char *field = (const char *)defaults + o->offset;
	switch (kind_of(o)) {
	case COWRUN_OPT_INT:
		memcpy(&integer, field, sizeof integer);
		snprintf(buf, size, " (default %lld)", integer);
		break;
	case COWRUN_OPT_DOUBLE:
		memcpy(&real, field, sizeof real);
		snprintf(buf, size, " (default %g)", real);
		break;
	case COWRUN_OPT_STRING:
	case COWRUN_OPT_INPUT:
		memcpy(&text, field, sizeof text);
		if (text)
			snprintf(buf, size, " (default %s)", text);
		break;
	default:
		break;
	}
}

void options_print_help(const struct cowrun_workload *w, FILE *out)
{
	/* A workload that parses its own argv says its usage in its
	 * description, and has no table. */
	if (w->abi_version >= 4 && (w->flags & COWRUN_OWN_ARGV)) {
		fprintf(out, "%s\n\n%s\n", w->description ? w->description : w->summary,
			"Runner options (-j, --mode, -o ...): cowrun --help");
		return;
	}
	fprintf(out, "Usage: cowrun [RUNNER OPTIONS] %s [OPTIONS]\n\n%s\n",
		w->name, w->summary);
	if (w->description)
		fprintf(out, "\n%s\n", w->description);
	fprintf(out, "\nOptions of %s:\n", w->name);
	for (const struct cowrun_option *o = w->options; o && kind_of(o) != COWRUN_OPT_END; o++) {
		char left[64], dflt[96];
		snprintf(left, sizeof left, "--%s%s%s", o->name,
			 o->argname ? " " : "", o->argname ? o->argname : "");
		format_default(o, w->defaults, dflt, sizeof dflt);
		fprintf(out, "  %-22s %s%s%s\n", left, o->help, dflt,
			(o->type & COWRUN_OPT_TUNING) ? " [changes no result]"
			: kind_of(o) == COWRUN_OPT_INPUT ? " [an input: resume and merge check it]" : "");
	}
	fprintf(out, "  %-22s %s\n", "--help", "show this help");
	fprintf(out, "\nRunner options (-j, --mode, -o ...): cowrun --help\n");
}

/* ---- what the runner reads from a table ---- */

int options_declares_inputs(const struct cowrun_option *options)
{
	for (const struct cowrun_option *o = options; o && kind_of(o) != COWRUN_OPT_END; o++)
		if (kind_of(o) == COWRUN_OPT_INPUT)
			return 1;
	return 0;
}

const struct cowrun_option *options_find(const struct cowrun_option *options, const char *name)
{
	if (strncmp(name, "--", 2) == 0)
		name += 2;
	return find_option(options, name, strlen(name));
}

int options_next(const struct cowrun_option *options, int argc, char **argv, int *i,
		 struct options_token *t)
{
	if (*i >= argc)
		return 0;
	const char *arg = argv[*i];
	*t = (struct options_token){ *i, 1, NULL, NULL };
	if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0') {
		const char *eq = strchr(arg + 2, '=');
		size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		t->option = find_option(options, arg + 2, len);
		if (t->option && eq)
			t->value = eq + 1;
		else if (t->option && kind_of(t->option) != COWRUN_OPT_FLAG && *i + 1 < argc)
			t->value = argv[*i + 1], t->count = 2;
	}
	*i += t->count;
	return 1;
}
