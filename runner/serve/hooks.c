/*
 * hooks.c - a served batch's steps, given to the server as its hooks
 * (serve.h): a generation's setup is a direct run's (run_setup()); a
 * request's options are set over the server's own as if they were on its
 * command line (proto_apply_request()); a leader runs run_batch() with the
 * client's output directory and joblog passed as descriptors.
 */
#include "serve.h"
#include "engine/pool.h"
#include "engine/task.h"
#include "os/workmsg.h"
#include "os/util.h"
#include "run/run.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

/* The server's command line and, in a generation, its setup. */
static struct served {
	struct run_config cfg;
	struct batch b;
} served;

static int served_setup(void *ctx, size_t *ntasks)
{
	struct served *s = ctx;
	uint64_t t0;
	int rc = run_setup(&s->cfg, &s->b, &t0);

	*ntasks = s->b.ntasks;
	return rc;
}

/* The generation retires: the setup's state goes as a direct run's does
 * (run.c), once, in the process that set it up. */
static void served_teardown(void *ctx)
{
	struct served *s = ctx;

	if (s->b.state != NULL && s->cfg.workload->teardown)
		s->cfg.workload->teardown(s->b.state);
	s->b.state = NULL;
}

/* A request's options over the server's own, checked as if they were on
 * its command line.  Returns 0 or EXIT_USAGE after a message. */
static int apply_request(struct run_config *cfg, const struct proto_request *rq)
{
	if (proto_apply_request(cfg, rq) != 0)
		return EXIT_USAGE;
	return run_config_check(cfg) != 0 ? EXIT_USAGE : 0;
}

static size_t served_want(void *ctx, const struct proto_request *rq, size_t ntasks)
{
	const struct served *s = ctx;
	struct run_config cfg = s->cfg;
	size_t *selected = NULL, count = ntasks;

	if (apply_request(&cfg, rq) != 0)
		return 1;   /* its leader says why */
	if (selection_active(&cfg.selection)) {
		if (selection_resolve(&cfg.selection, ntasks, &selected, &count) != 0)
			return 1;
		free(selected);
	}
	return count ? jobs_resolve(&cfg.jobs, cpu_count(), count) : 0;
}

/* In a leader: the batch, exactly as a fork-mode run's after its setup. */
static const char *field_or_null(const struct proto_request *rq, enum proto_field f)
{
	return (rq->present & (1u << f)) ? rq->field[f] : NULL;
}

static int served_run(void *ctx, const struct proto_request *rq, size_t workers,
		      const int files_in[6], unsigned *whole)
{
	const struct sidefiles_paths paths = {
		.save = field_or_null(rq, PF_SAVE),
		.timeline = field_or_null(rq, PF_TIMELINE),
		.joblog = field_or_null(rq, PF_JOBLOG),
		.stats = field_or_null(rq, PF_STATS),
		.resume = (rq->present & (1u << PF_RESUME)) != 0,
		.by_fd = 1, .joblog_fd = files_in[1], .journal_fd = files_in[2],
		.save_fd = files_in[3], .timeline_fd = files_in[4], .stats_fd = files_in[5],
		.in_outdir = field_or_null(rq, PF_IN_OUTDIR),
	};
	struct served *s = ctx;
	struct run_config cfg = s->cfg;
	struct batch b = { 0 };
	struct sidefiles files;
	/* The programs are looked up in the server's environment: the
	 * leader's, which starts them. */
	int rc = apply_request(&cfg, rq);

	if (rc == 0 && run_check_report_commands(&cfg) != 0)
		rc = EXIT_USAGE;
	sidefiles_init(&files, &paths);
	if (rc != 0 || (cfg.resume && sidefiles_lock(&files, s->b.workload->name) != 0)) {
		sidefiles_close(&files, &b, 0);
		return rc != 0 ? rc : EXIT_USAGE;
	}
	/* Standard output is the client's now: not open for writing, it
	 * was closed there (submit holds its place read-only). */
	run_note_stdout_closed((fcntl(STDOUT_FILENO, F_GETFL) & O_ACCMODE) == O_RDONLY);
	cfg.jobs = (struct jobs_spec){ JOBS_ABSOLUTE, workers ? (long long)workers : 1 };
	b.workload = s->b.workload;
	b.state = s->b.state;
	b.ntasks = s->b.ntasks;
	b.verbose = cfg.verbose;
	b.outdir = cfg.outdir;
	b.outdir_by_fd = 1;
	b.outdir_fd = files_in[0];
	b.outdir_open = 1;
	cfg.reap_later = 1;   /* leader_main() reaps them after its reply */
	rc = run_batch(&cfg, &b, &files);
	sidefiles_close(&files, &b, 0);
	*whole = files.whole;
	batch_free(&b);
	return rc;
}

static int served_spare(void *ctx, const int *drop, size_t ndrop)
{
	const struct served *s = ctx;

	return pool_standby_fork(s->b.workload, s->b.state, drop, ndrop);
}

/* The server's command line: side files are per batch (submit gives
 * them), and one the server named would be every batch's: refused.
 * Returns 0 or EXIT_USAGE. */
static int check_served(const struct run_config *cfg)
{
	const char *bad = cfg->mode != MODE_FORK ? "--mode other than fork" :
		cfg->nmerge ? "--merge" : cfg->save_path ? "--save-results" :
		cfg->timeline_path ? "--timeline" : cfg->joblog_path ? "--joblog" :
		cfg->resume ? "--resume" : cfg->stats_path ? "--stats" :
		cfg->metrics_path ? "--metrics" :
		cfg->check_args ? "--check-args" : NULL;

	if (bad == NULL)
		return 0;
	warnx_("serve: %s cannot be given to a server (%s)", bad,
	       cfg->mode != MODE_FORK || cfg->nmerge || cfg->metrics_path || cfg->check_args
	       ? "not supported for served batches yet"
	       : "a side file is per batch: give it to cowrun submit");
	return EXIT_USAGE;
}

int serve_workload(const struct serve_config *scfg, const struct run_config *cfg)
{
	int rc = check_served(cfg);

	if (rc != 0)
		return rc;
	served.cfg = *cfg;
	signal(SIGXFSZ, SIG_IGN);
	workmsg_set_workload(served.cfg.workload->name);
	workmsg_set_verbosity(served.cfg.verbose);
	task_set_seed(served.cfg.seed);   /* the setups'; a batch's is its request's */
	const struct serve_hooks hooks = { served_setup, served_want, served_run, served_spare,
					   served_teardown, &served };
	return serve_main(scfg, &hooks);
}
