/*
 * main.c - the cowrun command line: parse the runner's options into a
 * run's settings (run/config.h), find the workload, and hand over: to
 * run_direct() (run/run.h) for a run, to serve_workload() for `cowrun
 * serve`, to submit_main() for `cowrun submit`.
 */
#define _GNU_SOURCE
#include "files/results.h"
#include "os/util.h"
#include "os/fileops.h"
#include "run/config.h"
#include "run/options_table.h"
#include "run/run.h"
#include "serve/serve.h"
#include "workload/registry.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fputs(
"Usage: cowrun [OPTIONS] WORKLOAD [WORKLOAD OPTIONS]\n"
"  or:  cowrun [OPTIONS] --workload FILE.so [WORKLOAD OPTIONS]\n"
"  or:  cowrun serve --socket PATH [SERVE OPTIONS] [OPTIONS] WORKLOAD [...]\n"
"  or:  cowrun submit --socket PATH [-j N] [-o DIR] [--tasks LIST] ...\n"
"\n"
"Run a batch of reports in parallel: do the workload's expensive setup once,\n"
"then fork workers that share it copy-on-write and merge their results in\n"
"task order.  Everything after WORKLOAD goes to the workload\n"
"(cowrun WORKLOAD --help lists its options).\n"
"\n"
"Options:\n",
		out);
	options_help(out, OPT_DIRECT);
}

/* --workload FILE.so: every argument after the options is the plugin's.
 * Its argv[0] is its name, in the slot of the last option (already
 * parsed), so a plugin sees the same argv a built-in does. */
static int take_plugin(int argc, char **argv, struct run_config *cfg)
{
	cfg->workload = registry_load_plugin(cfg->plugin_path);
	if (cfg->workload == NULL)
		return EXIT_USAGE;
	argv[optind - 1] = (char *)cfg->workload->name;
	cfg->wargc = argc - optind + 1;
	cfg->wargv = argv + optind - 1;
	return run_config_check(cfg);
}

/* --version; with --verbose also what saved results from another cowrun
 * must share with this one to merge (cowrun-cluster --check compares it
 * on every host). */
static void print_version(int verbose)
{
	printf("cowrun %s\n", COWRUN_VERSION);
	if (verbose)
		printf("results format %d, workload ABI %d\n", RESULTS_FORMAT, COWRUN_ABI_VERSION);
}

/* Parse the runner's own options.  Returns -1 to exit 0 (help, list,
 * version done), 0 to run, or EXIT_USAGE after a message. */
static int parse_cli(int argc, char **argv, struct run_config *cfg)
{
	/* Built from the option table, once. */
	static struct option longopts[OPTIONS_MAX];
	static char optstring[OPTIONS_MAX];
	int c, rc;

	if (longopts[0].name == NULL)
		options_getopt(OPT_DIRECT, longopts, optstring, sizeof optstring);
	run_config_init(cfg);
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		const struct runner_option *o = option_by_key(c);
		switch (c) {
		case 'l': registry_list(stdout); return -1;
		case 'h': usage(stdout); return -1;
		case ':':
			warnx_("option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			warnx_("unknown option '%s' (see cowrun --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if ((rc = run_config_set(cfg, c, optarg)) != 0)
				return rc;
		}
		/* --workload FILE stands where the WORKLOAD name would:
		 * what follows it is the workload's. */
		if (o != NULL && (o->flags & OPT_ENDS))
			break;
	}
	if (cfg->show_version) {
		print_version(cfg->verbose);
		return -1;
	}
	if (cfg->plugin_path)
		return take_plugin(argc, argv, cfg);
	if (optind >= argc) {
		warnx_("no workload given (see cowrun --list and cowrun --help)");
		return EXIT_USAGE;
	}
	cfg->workload = registry_find(argv[optind]);
	if (cfg->workload == NULL)
		return EXIT_USAGE;
	cfg->wargc = argc - optind;
	cfg->wargv = argv + optind;
	return run_config_check(cfg);
}

/* cowrun serve [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD [ARGS]. */
static int serve_command(int argc, char **argv)
{
	static struct run_config cfg;   /* 32 KiB of --merge slots: not on the stack */
	struct serve_config scfg;
	int taken = serve_parse(argc, argv, &scfg), rc;

	if (taken <= 0)
		return taken == 0 ? run_stdout_written() : EXIT_USAGE;
	/* The runner's options start after the last serve option, whose
	 * slot stands for argv[0]. */
	rc = parse_cli(argc - taken + 1, argv + taken - 1, &cfg);
	if (rc != 0)
		return rc > 0 ? rc : run_stdout_written();
	return serve_workload(&scfg, &cfg);
}

int main(int argc, char **argv)
{
	static struct run_config cfg;

	run_note_stdout_closed((hold_standard_fds() & (1 << STDOUT_FILENO)) != 0);
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return serve_command(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "submit") == 0)
		return submit_main(argc - 1, argv + 1);
	int rc = parse_cli(argc, argv, &cfg);

	if (rc != 0)
		return rc < 0 ? run_stdout_written() : rc;
	if (cfg.dry_run) {
		rc = run_dry(&cfg);
		return rc != 0 ? rc : run_stdout_written();
	}
	return run_direct(&cfg);
}
