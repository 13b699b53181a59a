/*
 * options_table.h - the runner's options, in one table: each one's long
 * name, its key, its argument, where it may be given (cowrun's own
 * command line, `cowrun submit`, `cowrun serve`), whether it may be given
 * once only, whether it ends the options, its parser (a setter of a run's
 * settings, config.h), its help text, and the request field (PF_) that
 * carries it from submit to the server.  cli/main.c's getopt table and
 * --help, submit's and serve's parsers and help, and what a served
 * request sets (serve/proto.c) are all built from it, so an option means
 * the same wherever it is given.
 *
 * Keys are internal (getopt's values; the short option where an option
 * has one, -j): the wire carries a field's number, never a key.
 */
#ifndef COWRUN_OPTIONS_TABLE_H
#define COWRUN_OPTIONS_TABLE_H

#include "run/config.h"

#include <stdio.h>

/* A request's fields: the runner options a client may give per batch.
 * A field's number is its tag on the wire (serve/proto.h): new fields go
 * last, and none is renumbered. */
enum proto_field {
	PF_JOBS, PF_TASKS, PF_SHARD, PF_RETRIES, PF_HALT, PF_TIMEOUT, PF_OUTDIR,
	PF_JOBLOG,   /* its name as given (+FILE appends); the file is passed */
	PF_SAVE,     /* --save-results, --timeline, --stats: the final names as */
	PF_TIMELINE, /* given (for messages); the client's temporary files are */
	PF_STATS,    /* passed */
	PF_RESUME,   /* "1" --resume, "2" --resume-failed; needs PF_JOBLOG */
	PF_IN_OUTDIR, /* which side files lie in the output directory, as the
		       * client found them (sidefiles_in_outdir()): 5 names
		       * separated by '/', each empty unless that file's final
		       * name is there; absent: none is.  Taken on the client's
		       * word: a lie only lets its own file be overwritten.  No
		       * option's: submit finds it */
	PF_REPORT_FILTER, /* --report-filter, --report-to: the command as */
	PF_REPORT_TO,     /* given; run as the client (identity.c) */
	PF_REPORT_SUFFIX, /* --report-suffix */
	PF_SEED,          /* --seed (absent: the server's) */
	PF_TASKS_PER_WORKER, /* --tasks-per-worker */
	PF_RETRY_DELAY,      /* --retry-delay */
	PF_COUNT
};

#define PF_NONE (-1)

enum opt_arg { OPT_NO_ARG, OPT_REQUIRED, OPT_OPTIONAL /* --bar[=always] */ };

/* Where an option may be given (bits), and how. */
enum {
	OPT_DIRECT = 1,   /* cowrun's command line (also a server's runner options) */
	OPT_SUBMIT = 2,   /* cowrun submit */
	OPT_SERVE = 4,    /* cowrun serve's own, before the runner's */
	OPT_ONCE = 8,     /* given twice on cowrun's command line: refused */
	OPT_ENDS = 16,    /* the last runner option: what follows is the workload's */
};

/* Keys of the options with no letter of their own. */
enum {
	OPT_KEY_SOCKET = 256, OPT_KEY_SOCKET_MODE, OPT_KEY_ALLOW_UID, OPT_KEY_MAX_WORKERS,
	OPT_KEY_PIDFILE, OPT_KEY_READ_TIMEOUT, OPT_KEY_STATUS, OPT_KEY_RELOAD,
};

struct runner_option {
	const char *name;       /* without "--"; NULL: a free-text row of --help */
	int key;                /* unique; the short option if 'a'-'z'/'A'-'Z' and short */
	int is_short;           /* -KEY works too (-j, -o) */
	enum opt_arg arg;
	const char *metavar;    /* the argument's name in --help: "N", "FILE" */
	unsigned flags;         /* OPT_DIRECT ... OPT_ENDS */
	/* Sets a run's settings from the argument (NULL for OPT_NO_ARG, or
	 * --bar without one); 0 or EXIT_USAGE after a one-line message.  NULL
	 * for an option its command handles itself (--help, --list, serve's
	 * and submit's own). */
	int (*set)(struct run_config *cfg, const char *arg);
	int wire;               /* PF_ field submit sends it in, or PF_NONE */
	const char *wire_value; /* an option without argument: the field's text */
	const char *help;       /* cowrun's (serve's for OPT_SERVE) --help text,
				 * lines after the first at the text column;
				 * a free-text row: printed as it is */
};

/* The table, and its length (free-text rows included): less than
 * OPTIONS_MAX, the room a getopt table built from it needs. */
#define OPTIONS_MAX 64
extern const struct runner_option runner_options[];
extern const size_t runner_options_count;

/* The option with this key, or NULL. */
const struct runner_option *option_by_key(int key);

/* The option named `name` (without "--") given where `scope` says, or
 * NULL. */
const struct runner_option *option_by_name(const char *name, unsigned scope);

/* The option whose request field is f and, for one without argument,
 * whose field text is `text`; or NULL (PF_IN_OUTDIR). */
const struct runner_option *option_by_wire(int f, const char *text);

/* The getopt_long table and optstring ("+:" first) of the options given
 * where `scope` says, into longopts (OPTIONS_MAX of getopt.h's `struct
 * option`) and optstring (size bytes). */
void options_getopt(unsigned scope, void *longopts, char *optstring, size_t size);

/*
 * Set the option that has key `key` from its argument (NULL for none),
 * refusing a second of an OPT_ONCE option.  The command line (cli/main.c)
 * and a served request (serve/proto.c) both set options so.  Returns 0, or
 * EXIT_USAGE after a one-line message naming the option.  The config
 * keeps pointers to `arg`, which the caller keeps alive.
 */
int run_config_set(struct run_config *cfg, int key, const char *arg);

/* The --help rows of the options given where `scope` says (OPT_DIRECT:
 * cowrun's, OPT_SERVE: serve's), in the table's order, with the
 * free-text rows for OPT_DIRECT. */
void options_help(FILE *out, unsigned scope);

/* One --help row: the options with these keys (0-ended) side by side,
 * then text at column `col`, as submit lists its options. */
void options_help_row(FILE *out, const int *keys, int col, const char *text);

#endif
