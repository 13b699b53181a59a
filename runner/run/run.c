/*
 * run.c - a run's steps once its options are known (run.h): the setup,
 * the task selection, the task phase in the chosen mode with its side
 * files, the merge and summary, and the exit status.
 */
#define _GNU_SOURCE
#include "run.h"
#include "inputs.h"
#include "manifest.h"
#include "merge.h"
#include "metrics.h"
#include "outdir.h"
#include "os/command.h"
#include "resume.h"
#include "engine/omprun.h"
#include "engine/pool.h"
#include "engine/serial.h"
#include "engine/task.h"
#include "os/workmsg.h"
#include "engine/taskout.h"
#include "engine/watchdog.h"
#include "files/inputid.h"
#include "files/results.h"
#include "os/parallel.h"
#include "os/procstat.h"
#include "os/setup_arena.h"
#include "os/signals.h"
#include "os/util.h"
#include "os/fileops.h"
#include "workload/options.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Standard output was closed when cowrun started (/dev/null holds its
 * place): the summary has nowhere to go. */
static int stdout_closed;

/* --metrics: the figures, gathered as the run goes. */
static struct {
	const char *path;
	struct run_metrics m;
	const struct batch *b;   /* the batch whose counts go in, once it runs */
	int final_written;
	double every_s;          /* METRICS_EVERY_S, or COWRUN_METRICS_EVERY_S */
} metrics;

/* The task counts of metrics.b into metrics.m. */
static void metrics_take_counts(void)
{
	const struct batch *b = metrics.b;
	size_t retries = 0;

	metrics.m.counts_known = 1;
	metrics.m.tasks = batch_count(b);
	metrics.m.succeeded = b->succeeded;
	metrics.m.failed = b->failed;
	for (size_t k = 0; b->attempts && k < b->ntasks; k++)
		retries += b->attempts[k] > 1 ? b->attempts[k] - 1 : 0;
	metrics.m.retries = retries;
}

/* Every METRICS_EVERY_S of a long task phase: the figures so far. */
static void metrics_tick(void *ctx)
{
	(void)ctx;
	metrics_take_counts();
	metrics.m.running = 1;
	metrics_write(metrics.path, &metrics.m);
}

/* The run ended with `status`: the last figures, once (by the process
 * that ran the tasks, when it can).  Returns 0 or -1 after a message. */
static int metrics_final(int status)
{
	if (metrics.path == NULL || metrics.final_written)
		return 0;
	if (metrics.b && metrics.b->attempts)
		metrics_take_counts();
	metrics.m.running = 0;
	metrics.m.exit_status = status;
	metrics.m.end_epoch = epoch_seconds();
	metrics.final_written = 1;
	return metrics_write(metrics.path, &metrics.m);
}

void run_note_stdout_closed(int closed)
{
	stdout_closed = closed;
}

size_t run_choose_workers(const struct run_config *cfg, size_t ntasks)
{
	size_t workers = jobs_resolve(&cfg->jobs, cpu_count(), ntasks);
	size_t max = pool_max_workers();

	if (cfg->mode == MODE_FORK && workers > max) {
		if (cfg->jobs.kind != JOBS_PER_TASK)
			warnx_("only enough file descriptors for %zu workers: using %zu", max, max);
		workers = max;
	}
	return workers;
}

/* The setup's threads (cowrun_parallel()): the workers -j means, at most
 * the usable CPUs (-j 0, one per task, means the CPUs here: the task count
 * is not known before setup); one in serial mode. */
unsigned run_choose_setup_threads(const struct run_config *cfg)
{
	int cpus = cpu_count();
	size_t threads = jobs_resolve(&cfg->jobs, cpus, (size_t)1 << 30); /* no task count yet */

	if (cfg->mode == MODE_SERIAL)   /* one thread: the reference */
		return 1;
	return threads < (size_t)cpus ? (unsigned)threads : (unsigned)cpus;
}

/* --stats and the --verbose memory line: how much of the setup the
 * workers shared, and how much each copied.  Returns 0 or -1 after a
 * message (the stats file could not be written). */
static int report_worker_memory(const struct run_config *cfg, struct sidefiles *files,
				const struct pool_stats *st, size_t setup_bytes)
{
	uint64_t private_kb = 0, pss_kb = 0;

	for (size_t i = 0; i < st->nper_worker; i++) {
		const struct worker_stats *w = &st->per_worker[i];
		private_kb += w->private_dirty_kb;
		pss_kb += w->pss_kb;
		if (w->pss_kb * 1024 > metrics.m.worker_pss_max_bytes)
			metrics.m.worker_pss_max_bytes = w->pss_kb * 1024;
		if (w->private_dirty_kb * 1024 > metrics.m.worker_private_max_bytes)
			metrics.m.worker_private_max_bytes = w->private_dirty_kb * 1024;
	}
	if (cfg->verbose && st->nper_worker > 0) {
		double copied = (double)private_kb / (double)st->nper_worker * 1024.0;
		char share[48] = "";
		/* A share of a setup under 1 MiB says nothing (it read 430080%). */
		if (setup_bytes >= 1048576)
			snprintf(share, sizeof share, " (%.1f%% of the setup)",
				 100.0 * copied / (double)setup_bytes);
		warnx_("memory: setup %.1f MiB shared by %zu workers; each copied or allocated %.1f MiB"
		       "%s on average, Pss %.1f MiB; fork %.3f ms avg",
		       setup_bytes / 1048576.0, st->nper_worker, copied / 1048576.0, share,
		       (double)pss_kb / (double)st->nper_worker / 1024.0,
		       st->forks ? st->fork_ns_total / 1e6 / (double)st->forks : 0.0);
	}
	return sidefiles_write_stats(files, st->per_worker, st->nper_worker);
}

/* Run the task phase in the chosen mode.  Returns 0 or -1 (runner error). */
static int run_tasks(const struct run_config *cfg, struct batch *b, struct sidefiles *files)
{
	struct pool_stats stats;
	size_t count = batch_count(b);

	metrics.m.workers = 1;
	if (count == 0 && cfg->mode != MODE_SERIAL) {
		if (cfg->verbose)
			warnx_("%s: no task to run%s", cfg->mode == MODE_OMP ? "omp" : "fork",
			       cfg->resume ? ": the journal settles every selected task" : " is selected");
		return serial_run(b);
	}
	if (cfg->mode == MODE_SERIAL) {
		if (cfg->verbose)
			warnx_("serial: %zu tasks in this process, threads %zu", count,
			       procstat_threads());
		return serial_run(b);
	}
	size_t workers = run_choose_workers(cfg, count);
	metrics.m.workers = workers;
	if (cfg->mode == MODE_OMP) {
		if (cfg->verbose)
			warnx_("omp: %zu threads on %d CPUs", workers, cpu_count());
		return omp_run(b, workers);
	}
	/* A worker's Pss costs milliseconds to read: only when it is shown. */
	struct pool_options opt = {
		.timeout_ns = (uint64_t)(cfg->timeout_s * 1e9),
		.tasks_per_worker = (uint64_t)cfg->tasks_per_worker,
		.catch_frozen_writes = !cfg->no_freeze,
		.measure_memory = cfg->verbose || cfg->stats_path || cfg->metrics_path,
		.memfree = cfg->memfree,
		.reap_later = cfg->reap_later,
	};
	size_t setup_bytes = arena_used(setup_arena());
	if (setup_bytes == 0)
		setup_bytes = procstat_rss_bytes();
	int rc = pool_run(b, workers, &opt, &stats);
	if (cfg->verbose)
		warnx_("fork: %zu workers on %d CPUs, %zu forks%s, fork() avg %.3f ms max %.3f ms, "
		       "%zu worker deaths, threads at fork %zu",
		       stats.workers, cpu_count(), stats.forks,
		       stats.standby ? " (and a standby forked ahead)" : "",
		       stats.forks ? stats.fork_ns_total / 1e6 / (double)stats.forks : 0.0,
		       stats.fork_ns_max / 1e6, stats.worker_deaths, stats.threads_at_fork);
	if (report_worker_memory(cfg, files, &stats, setup_bytes) != 0 && rc == 0)
		rc = -1;
	free(stats.per_worker);
	return rc;
}

/* `len` bytes of the summary to standard output, with SIGPIPE held
 * blocked: a reader gone (`| head -1`) makes the write fail with EPIPE,
 * one line and exit 254 with the manifest and joblog written, instead of
 * killing the run.  A SIGPIPE left pending is taken before unblocking.
 * Through stdout, which a served batch's leader guards (guard.h); what
 * could not be written is dropped, so that exit() does not try it again.
 * Returns 0 or -1 with errno. */
static int write_summary(const char *text, size_t len)
{
	sigset_t pipe_only, before;
	struct timespec now = { 0, 0 };
	int rc = 0, err = 0;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0 || ferror(stdout)) {
		rc = -1;
		err = errno ? errno : EIO;
		__fpurge(stdout);
	}
	while (sigtimedwait(&pipe_only, NULL, &now) == SIGPIPE)
		;
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	errno = err;
	return rc;
}

/* finish() into memory: the summary is written whole, only when finish()
 * returns 0 (a finish() that fails half way prints nothing).  Returns
 * finish()'s 0 or -1. */
static int buffered_finish(struct batch *b)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	if (mem == NULL) {
		warnx_("%s: no summary: out of memory", b->workload->name);
		return -1;
	}
	rc = b->workload->finish(b->state, mem);
	if (fclose(mem) != 0 && rc == 0) {
		warnx_("%s: no summary: out of memory", b->workload->name);
		rc = -1;
	}
	/* A finish() that failed has said why (cowrun_error()). */
	if (rc == 0 && write_summary(text, len) != 0) {
		warnx_("cannot write the summary to standard output: %s", strerror(errno));
		rc = -1;
	}
	free(text);
	return rc;
}

/* Merge is done: print the summary and check stdout really took it.  No
 * summary from a merge that went wrong: it would be wrong too. */
static int finish_batch(struct batch *b)
{
	if (b->merge_failed) {
		warnx_("%s: no summary: a result could not be merged", b->workload->name);
		return -1;
	}
	if (stdout_closed) {
		warnx_("cannot write the summary to standard output: %s", strerror(EBADF));
		return -1;
	}
	int rc = buffered_finish(b);

	if (b->failed > 0)
		warnx_("%s: %zu of %zu tasks failed; the summary covers the other %zu",
		       b->workload->name, b->failed, batch_count(b), b->succeeded);
	return rc;
}

static int exit_status(const struct batch *b, int runner_failed)
{
	if (runner_failed || b->merge_failed)
		return EXIT_RUNNER_ERROR;
	if (b->failed > 100)
		return EXIT_MANY_FAILED;
	return (int)b->failed;
}

/* A stopped run: say what was done and what was not. */
static int report_stop(const struct run_config *cfg, const struct batch *b)
{
	size_t done = b->succeeded + b->failed, count = batch_count(b);

	char killed[64] = "";

	if (b->killed)
		snprintf(killed, sizeof killed, ", %zu killed while running", b->killed);
	if (signals_count() > 0) {
		/* A task the signal itself killed ended, but did not finish. */
		warnx_("interrupted: %zu done, %zu running ended (%zu failed), %zu not started%s; %s",
		       b->done_at_stop, done - b->done_at_stop, b->failed - b->failed_at_stop,
		       count - done - b->killed, killed,
		       cfg->joblog_path ? "rerun with --resume" : "finished work was not kept (no --joblog)");
		return EXIT_INTERRUPTED + signals_last();
	}
	warnx_("halted (--halt): %zu done, %zu failed, %zu not started%s; no summary",
	       done, b->failed, count - done - b->killed, killed);
	return exit_status(b, 0);
}

/* The temporary side files, for the watchdog to remove if the run ends
 * before it could commit or remove them itself. */
static void note_temporary_files(const struct sidefiles *files)
{
	if (files->paths.by_fd)
		return;   /* a served batch's client's, never removed here */
	if (files->paths.save)
		watchdog_note_temp(files->save.temp);
	if (files->paths.timeline)
		watchdog_note_temp(files->timeline.temp);
}

/* The task phase, with its side files.  Returns the exit status. */
static int execute_here(const struct run_config *cfg, struct batch *b, struct sidefiles *files,
			const char *identity, long long journal_keep, const struct resume_state *resume)
{
	/* Checks first, then sidefiles_open()'s order: a refused run leaves
	 * no output directory and no earlier joblog destroyed. */
	if (outdir_check_reports(b, files) != 0 ||
	    sidefiles_open(files, b, identity, journal_keep, outdir_make, b) != 0)
		return EXIT_USAGE;
	note_temporary_files(files);
	/* --resume with --save-results: the journal's outcomes go into the
	 * saved results too (they are taken once saving is wired), so that
	 * they hold the whole selection, as an uninterrupted run's do. */
	if (resume && resume_apply(resume, cfg->resume == 2, b) != 0) {
		warnx_("out of memory for %zu tasks", b->ntasks);
		sidefiles_close(files, b, 0);
		return EXIT_RUNNER_ERROR;
	}
	progress_init(&b->progress, cfg->bar, batch_count(b));
	if (metrics.path) {
		metrics.b = b;
		progress_set_tick(&b->progress, metrics_tick, NULL, (uint64_t)(metrics.every_s * 1e9));
	}
	int saved_stdout = taskout_begin();
	b->started_ns = now_ns();
	int failed = run_tasks(cfg, b, files) != 0;
	b->ended_ns = now_ns();
	taskout_end(saved_stdout);
	progress_finish(&b->progress, b->succeeded + b->failed, b->failed);
	int complete = !failed && !b->stopped;
	if (sidefiles_close(files, b, complete) != 0)
		failed = 1;
	/* The reports written so far are this run's, whatever came of it. */
	if (failed || b->stopped) {
		manifest_finish(b, &cfg->selection, identity, cfg->clean, 1);
		return failed ? EXIT_RUNNER_ERROR : report_stop(cfg, b);
	}
	if (cfg->save_path == NULL && finish_batch(b) != 0)
		failed = 1;
	if (manifest_finish(b, &cfg->selection, identity, cfg->clean, 0) != 0)
		failed = 1;
	return exit_status(b, failed);
}

/* Serial and omp modes run the task phase in a child under a watchdog
 * (watchdog.h): a task that ends its process is then named, exit 254.
 * Fork mode's workers are watched by the pool itself. */
static int execute(const struct run_config *cfg, struct batch *b, struct sidefiles *files,
		   const char *identity, long long journal_keep, const struct resume_state *resume)
{
	int status;

	if (cfg->mode != MODE_FORK) {
		size_t count = batch_count(b);
		size_t slots = cfg->mode == MODE_OMP && count ? run_choose_workers(cfg, count) : 1;
		if (watchdog_start(b, slots, !cfg->no_freeze, &status) != 0) {
			/* The watching parent: the child's status and files; its
			 * metrics too, unless it died before it could write them. */
			sidefiles_hand_over(files);
			metrics.final_written = watchdog_child_finished();
			metrics.b = NULL;
			return status;
		}
	}
	status = execute_here(cfg, b, files, identity, journal_keep, resume);
	if (metrics_final(status) != 0 && status == 0)
		status = EXIT_RUNNER_ERROR;
	watchdog_done();
	return status;
}

/* The tasks this run executes: --tasks/--shard, minus what --resume
 * settles.  Returns 0 or -1 after a message. */
static int choose_tasks(const struct run_config *cfg, struct batch *b, const struct resume_state *r,
			size_t **selected)
{
	*selected = NULL;
	if (selection_active(&cfg->selection)) {
		if (selection_resolve(&cfg->selection, b->ntasks, selected, &b->nselected) != 0)
			return -1;
	} else if (cfg->resume) {
		*selected = malloc((b->ntasks + 1) * sizeof **selected);
		if (*selected == NULL)
			return -1;
		for (size_t k = 0; k < b->ntasks; k++)
			(*selected)[k] = k;
		b->nselected = b->ntasks;
	}
	if (cfg->resume)
		resume_filter(r, cfg->resume == 2, *selected, &b->nselected);
	b->selected = *selected;
	return 0;
}

/* A direct run's id as the identity's last line, "run-id ID" (never
 * compared: runid.h), so its journal and saved results name the run its
 * metrics and --log-time lines name.  Returns 0 or -1 (ENOMEM). */
static int add_run_id(char **identity)
{
	if (metrics.m.run_id == NULL)
		return 0;   /* a served batch: the server's run has no one id */
	char *with = NULL;
	if (asprintf(&with, "%srun-id %s\n", *identity, metrics.m.run_id) < 0)
		return -1;
	free(*identity);
	*identity = with;
	return 0;
}

/* Can `prog` be started as posix_spawnp() or /bin/sh would start it?
 * Looked up on PATH (unset: the shell's default, "/bin:/usr/bin"; an
 * empty element is the working directory).  A relative path with a '/'
 * is not looked at: it is resolved where the setup leaves the working
 * directory.  Returns 0, or -1 with the reason in why. */
static int program_runnable(const char *prog, char *why, size_t size)
{
	struct stat st;

	if (prog[0] == '/') {
		int err = stat(prog, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EACCES
			: access(prog, X_OK) != 0 ? errno : 0;
		if (err)
			snprintf(why, size, "%s", strerror(err));
		return err ? -1 : 0;
	}
	if (strchr(prog, '/') != NULL)
		return 0;
	const char *path = getenv("PATH");
	int seen = 0;
	for (const char *p = path ? path : "/bin:/usr/bin";; p++) {
		size_t n = strcspn(p, ":");
		char full[PATH_MAX];
		if (snprintf(full, sizeof full, "%.*s%s%s", (int)n, n ? p : ".", "/", prog)
		    < (int)sizeof full && stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return 0;
			seen = 1;
		}
		p += n;
		if (*p == '\0')
			break;
	}
	snprintf(why, size, "%s", seen ? "not executable where it is on PATH"
					: "not found on PATH");
	return -1;
}

int run_check_report_commands(const struct run_config *cfg)
{
	static const char *const options[2] = { "--report-filter", "--report-to" };
	const char *texts[2] = { cfg->report_filter, cfg->report_to };
	const char *skip = getenv("COWRUN_CHECK_COMMANDS");

	/* cowrun-cluster-slurm's --check-args here: the nodes have the programs. */
	if (skip && strcmp(skip, "0") == 0)
		return 0;
	for (int i = 0; i < 2; i++) {
		char why[256], prog[256];
		if (texts[i] == NULL)
			continue;
		struct command *c = command_parse(options[i], texts[i], why, sizeof why);
		if (c == NULL) {
			warnx_("%s", why);
			return -1;
		}
		int bad = command_program(c, prog, sizeof prog) &&
			  program_runnable(prog, why, sizeof why) != 0;
		command_free(c);
		if (bad) {
			warnx_("%s: cannot run '%s': %s", options[i], prog, why);
			return -1;
		}
	}
	return 0;
}

int run_route_reports(const struct run_config *cfg, struct report_route *route)
{
	static const char *const options[2] = { "--report-filter", "--report-to" };
	const char *texts[2] = { cfg->report_filter, cfg->report_to };
	struct command *routed[2] = { NULL, NULL };
	char why[256];

	for (int i = 0; i < 2; i++) {
		if (texts[i] == NULL)
			continue;
		routed[i] = command_parse(options[i], texts[i], why, sizeof why);
		if (routed[i] == NULL) {
			warnx_("%s", why);
			command_free(routed[0]);
			*route = (struct report_route){ NULL, NULL, NULL };
			task_set_report_suffix(NULL);
			return -1;
		}
		if (cfg->verbose)
			warnx_("%s: %s", options[i], command_uses_shell(routed[i])
			       ? "shell syntax: runs under /bin/sh -c, each value shell-quoted"
			       : "no shell syntax: split into words and run directly");
	}
	*route = (struct report_route){ routed[0], routed[1], cfg->report_suffix };
	task_set_report_suffix(cfg->report_suffix);
	return 0;
}

void run_unroute_reports(struct report_route *route)
{
	task_set_report_suffix(NULL);
	/* The commands are the route's own (run_route_reports()). */
	command_free((struct command *)route->filter);
	command_free((struct command *)route->sink);
	*route = (struct report_route){ NULL, NULL, NULL };
}

int run_batch(const struct run_config *cfg, struct batch *b, struct sidefiles *files)
{
	char *body = inputs_body();
	const uint64_t names = results_names_hash(b->workload, b->state, b->ntasks);
	char *identity = body ? results_identity(COWRUN_VERSION, b->workload, cfg->seed, body,
						 b->ntasks, &names,
						 results_context_of(b->workload, b->state)) : NULL;
	struct resume_state resume = { 0 };
	size_t *selected = NULL;
	int rc = EXIT_USAGE;

	b->retries = (unsigned)cfg->retries;
	b->retry_delay_ns = (uint64_t)(cfg->retry_delay_s * 1e9);
	b->halt = cfg->halt;
	/* A served batch's seed is its request's (the setup had the
	 * server's). */
	task_set_seed(cfg->seed);
	if (cfg->verbose)
		warnx_("seed %" PRIu64 "%s: each task's seed derives from it and the task's number",
		       cfg->seed, cfg->seed_given ? "" : " (the default; --seed N changes it)");
	if (identity == NULL || add_run_id(&identity) != 0 ||
	    run_route_reports(cfg, &b->route) != 0)
		goto out;
	const int fds[2] = { files->joblog.fd, files->paths.journal_fd };
	/* The joblog's name as the side files have it: absolute after a
	 * setup that changed directory (sidefiles_rebase()). */
	const char *joblog = files->paths.joblog ? files->paths.joblog : cfg->joblog_path;
	if (cfg->resume && resume_load(&resume, joblog, b->workload->name, identity,
				       b->ntasks, cfg->resume == 2,
				       files->paths.by_fd ? fds : NULL) != 0)
		goto out;
	if (choose_tasks(cfg, b, &resume, &selected) != 0)
		goto out;
	/* Saving: the journal's outcomes are applied once the saved results
	 * are open (execute_here); merging: now. */
	int save_resumed = cfg->resume && cfg->save_path != NULL;
	if (batch_init(b) != 0 ||
	    (cfg->resume && !save_resumed && resume_apply(&resume, cfg->resume == 2, b) != 0)) {
		warnx_("out of memory for %zu tasks", b->ntasks);
		goto out;
	}
	if (cfg->nmerge > 0)
		rc = merge_load(b, cfg->merge_paths, cfg->nmerge, identity) != 0 ? EXIT_USAGE
							: exit_status(b, finish_batch(b) != 0);
	else
		rc = execute(cfg, b, files, identity, resume.journal_found ? resume.keep : 0,
			     save_resumed ? &resume : NULL);
out:
	run_unroute_reports(&b->route);
	resume_free(&resume);
	free(selected);
	free(identity);
	free(body);
	return rc;
}

/* The side files the command line names, checked now: a collision is
 * found before the setup, not after it.  Returns 0 or -1 after a message. */
int run_check_side_files(const struct run_config *cfg, struct sidefiles *files)
{
	const struct sidefiles_paths paths = {
		.save = cfg->save_path,
		.timeline = cfg->timeline_path,
		.joblog = cfg->joblog_path,
		.stats = cfg->stats_path,
		.resume = cfg->resume != 0,
	};

	sidefiles_init(files, &paths);
	sidefiles_anchor(files);   /* before the setup, which may change directory */
	return sidefiles_check(files);
}

int run_stdout_written(void)
{
	int failed = fflush(stdout) != 0 || ferror(stdout) || stdout_closed;
	int err = stdout_closed ? EBADF : errno;

	if (fclose(stdout) != 0 && !failed) {
		failed = 1;
		err = errno;
	}
	if (!failed)
		return 0;
	warnx_("cannot write to standard output: %s", strerror(err ? err : EIO));
	return EXIT_USAGE;
}

/* The workload's setup, between the looks at its input files: before it
 * (a --resume refuses a changed input before an expensive setup), and
 * after it (their identities).  *used: the threads the setup itself ran
 * on (setup_threads_used()).  Returns 0 or -1 after a message. */
int run_check_inputs(const struct run_config *cfg)
{
	char journal[4096];

	if (inputs_find(cfg->workload, cfg->wargc, cfg->wargv, cfg->not_inputs, cfg->nnot_inputs,
			1) != 0)
		return -1;
	if (cfg->resume && cfg->joblog_path &&
	    inputs_check_journal(cfg->workload, cfg->seed,
				 resume_journal_path(cfg->joblog_path, journal, sizeof journal)) != 0)
		return -1;
	return 0;
}

static int setup_with_inputs(const struct run_config *cfg, struct batch *b, unsigned *used)
{
	if (run_check_inputs(cfg) != 0)
		return -1;
	inputid_forget_reported();
	b->state = cfg->workload->setup(cfg->wargc, cfg->wargv);
	*used = setup_threads_used();
	if (b->state == NULL)
		return -1;
	return inputs_settle(b->workload->name, cfg->verbose);
}

/* --merge of a workload that rebuilds its state from the saved context:
 * no setup, and its input files are not needed (their identities come
 * from the first results file).  Returns 1 with b->state set, 0 if the
 * setup must run, -1 after a message. */
static int merge_without_setup(const struct run_config *cfg, struct batch *b)
{
	char first[4096];
	int rc;

	if (cfg->nmerge == 0 || cfg->workload->merge_setup == NULL)
		return 0;
	rc = merge_setup_state(cfg->workload, cfg->merge_paths, cfg->nmerge, cfg->wargc,
			       cfg->wargv, &b->state);
	if (rc <= 0)
		return rc;
	if (inputs_find(cfg->workload, cfg->wargc, cfg->wargv, cfg->not_inputs,
			cfg->nnot_inputs, 0) != 0 ||
	    (merge_first_file(cfg->merge_paths, cfg->nmerge, first, sizeof first) == 0 &&
	     inputs_take_from(first) != 0))
		return -1;
	return 1;
}

/* -v: what the setup took, and how many threads it really ran on. */
static void say_setup(const struct run_config *cfg, const struct batch *b, uint64_t ns,
		      unsigned used)
{
	char arena_line[256], threads[128];

	unsigned forked = setup_processes_used(), own = setup_own_threads_used();

	if (forked > 0)
		snprintf(threads, sizeof threads, "%u setup process%s (forked by the workload; "
			 "%u available)", forked, forked == 1 ? "" : "es", cowrun_setup_threads());
	else if (used > 0)
		snprintf(threads, sizeof threads, "%u setup thread%s", used, used == 1 ? "" : "s");
	else if (own > 0)   /* cowrun_setup_threaded(): data.table's, OpenMP's */
		snprintf(threads, sizeof threads, "%u setup thread%s (the workload's own; "
			 "%u available)", own, own == 1 ? "" : "s", cowrun_setup_threads());
	else
		snprintf(threads, sizeof threads, "1 setup thread (it never called cowrun_parallel;"
			 " %u available)", cowrun_setup_threads());
	warnx_("%s: setup %.3f s, %zu tasks, %s", b->workload->name, ns / 1e9, b->ntasks, threads);
	warnx_("%s%s", arena_describe(setup_arena(), arena_line, sizeof arena_line),
	       cfg->no_freeze ? ", writable" : ", frozen");
}

/* -o made absolute before the setup (run_setup()): one direct run, or
 * one served generation, per process. */
static char outdir_at[PATH_MAX];

/* The working directory before the setup, and whether the setup changed
 * it (os.chdir()): then the runner's own paths are the absolute ones it
 * took before (setup_moved()). */
static struct {
	dev_t dev;
	ino_t ino;
	int moved;
} setup_cwd;

static void note_cwd(int after)
{
	struct stat st;

	if (stat(".", &st) != 0)
		return;   /* removed: no name to go by but the absolute ones */
	if (!after) {
		setup_cwd.dev = st.st_dev;
		setup_cwd.ino = st.st_ino;
		setup_cwd.moved = 0;
	} else {
		setup_cwd.moved = st.st_dev != setup_cwd.dev || st.st_ino != setup_cwd.ino;
	}
}

/* Task names are report file names and fields of the joblog's
 * tab-separated lines: a control byte (a tab, a newline) would break a
 * line that --resume reads back.  All names are checked before the first
 * task.  Returns 0 or -1 after a message. */
static int check_task_names(const struct batch *b)
{
	char name[COWRUN_NAME_MAX];

	for (size_t k = 0; k < b->ntasks; k++) {
		name[0] = '\0';
		b->workload->task_name(b->state, k, name, sizeof name);
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			if (*c < 0x20 || *c == 0x7f) {
				warnx_("%s: task %zu's name holds byte 0x%02x at offset %zu: a task name "
				       "may hold no byte below 0x20 and no 0x7f", b->workload->name, k,
				       *c, (size_t)((const char *)c - name));
				return -1;
			}
	}
	return 0;
}

int run_setup(const struct run_config *cfg, struct batch *b, uint64_t *t0)
{
	if (setup_arena_init(!cfg->no_huge_pages) != 0)
		return -1;
	*t0 = now_ns();
	b->workload = cfg->workload;
	b->outdir = cfg->outdir;
	/* Taken now: the setup may change the working directory (os.chdir()),
	 * and the reports still go where -o said (not created yet). */
	absolute_path(cfg->outdir, outdir_at, sizeof outdir_at);
	b->outdir_at = outdir_at;
	b->verbose = cfg->verbose;
	setup_threads_set(run_choose_setup_threads(cfg));
	setup_threads_used_reset();
	note_cwd(0);
	int from_context = merge_without_setup(cfg, b);
	unsigned used = setup_threads_used();
	if (from_context < 0)
		return -1;
	if (from_context == 0 && setup_with_inputs(cfg, b, &used) != 0)
		return -1;
	note_cwd(1);
	b->ntasks = cfg->workload->ntasks(b->state);
	if (check_task_names(b) != 0)
		return -1;
	uint64_t t1 = now_ns();
	metrics.m.setup_s = (double)(t1 - *t0) / 1e9;
	metrics.m.setup_peak_rss_bytes = procstat_peak_rss_bytes();
	if (!cfg->no_freeze && setup_arena_freeze() != 0)
		return -1;
	if (cfg->verbose)
		say_setup(cfg, b, t1 - *t0, used);
	return 0;
}

/* --metrics' path made absolute before the setup (start_run_record()). */
static char metrics_at[PATH_MAX];

/* After a setup that changed the working directory: the output directory,
 * the side files and the metrics file are where the command line meant,
 * by the absolute paths taken before it; messages name them so. */
static void setup_moved(const struct run_config *cfg, struct batch *b, struct sidefiles *files)
{
	if (!setup_cwd.moved)
		return;
	if (cfg->verbose) {
		char cwd[PATH_MAX];
		warnx_("%s: the setup changed the working directory to '%s': cowrun's own files "
		       "stay where they were given", b->workload->name,
		       getcwd(cwd, sizeof cwd) ? cwd : "?");
	}
	b->outdir = b->outdir_at;
	sidefiles_rebase(files);
	if (metrics.path)
		metrics.path = metrics_at;
}
/* A watching parent only watched: the child that ran finish() has torn
 * the state down, once (watchdog.h); a second teardown would write again
 * what the state's open files hold, or end an interpreter twice.  The
 * parent leaves it as it is to its end, still reachable (valgrind). */
static void *volatile watched_state;

/* The setup, the batch and the teardown, once the side files are checked
 * and locked; closes them.  Returns the exit status. */
static int setup_and_run(const struct run_config *cfg, struct sidefiles *files)
{
	struct batch b = { 0 };
	uint64_t t0;
	int rc = EXIT_USAGE;

	/* A signal during the setup ends the run at once (signals.h): the
	 * setup is the workload's code and never looks for one.  All there
	 * is to remove is a joblog this run created, still empty. */
	if (files->joblog.created)
		signals_setup_note_file(files->joblog.path);
	signals_setup_begin(progname);
	int set_up = run_setup(cfg, &b, &t0) == 0;
	signals_setup_end();

	if (set_up) {
		setup_moved(cfg, &b, files);
		metrics.b = &b;
		rc = run_batch(cfg, &b, files);
		if (cfg->verbose && b.ended_ns)
			warnx_("%s: tasks %.3f s, merge and summary %.3f s, total %.3f s",
			       b.workload->name, (b.ended_ns - b.started_ns) / 1e9,
			       (now_ns() - b.ended_ns) / 1e9, (now_ns() - t0) / 1e9);
	}
	if (metrics_final(rc) != 0 && rc == 0)
		rc = EXIT_RUNNER_ERROR;
	metrics.b = NULL;
	if (set_up) {
		batch_free(&b);
		if (watchdog_watching())
			watched_state = b.state;
		else if (cfg->workload->teardown)
			cfg->workload->teardown(b.state);
	} else if (b.state != NULL && cfg->workload->teardown) {
		/* Refused after the workload's setup returned (a task name, an
		 * input the setup wrote): its state is still its own to free. */
		cfg->workload->teardown(b.state);
	}
	/* The joblog's lock, held since before the setup, goes last. */
	sidefiles_close(files, &b, 0);
	setup_arena_destroy();
	return rc;
}

/* The run's id, time stamps on stderr (--log-time), the metrics' start. */
static void start_run_record(const struct run_config *cfg)
{
	static char run_id[40];

	metrics.m.start_epoch = epoch_seconds();
	metrics_run_id(run_id, sizeof run_id, metrics.m.start_epoch);
	if (cfg->log_time)
		warnx_log_time(run_id);
	metrics.path = cfg->metrics_path;
	if (metrics.path)
		absolute_path(metrics.path, metrics_at, sizeof metrics_at);
	metrics.m.run_id = run_id;
	metrics.m.workload = cfg->workload->name;
	metrics.m.version = COWRUN_VERSION;
	metrics.m.exit_status = -1;
	metrics.m.running = 1;
	const char *every = getenv("COWRUN_METRICS_EVERY_S");
	metrics.every_s = every && parse_double(every, 0.01, 86400, &metrics.every_s) == 0
		? metrics.every_s : METRICS_EVERY_S;
}

int run_direct(const struct run_config *cfg)
{
	struct sidefiles files;

	start_run_record(cfg);

	/* Past a file size limit, let write() fail with EFBIG, so the task
	 * fails with a message naming the file instead of dying. */
	signal(SIGXFSZ, SIG_IGN);
	if (signals_install() != 0 || signals_install_hangup() != 0) {
		warnx_("cannot install signal handlers: %s", strerror(errno));
		return EXIT_USAGE;
	}
	workmsg_set_workload(cfg->workload->name);
	workmsg_set_verbosity(cfg->verbose);
	task_set_seed(cfg->seed);   /* before the setup: Python's hash seed */
	if (options_want_help(cfg->wargc, cfg->wargv)) {
		options_print_help(cfg->workload, stdout);
		return run_stdout_written();
	}
	if (run_check_report_commands(cfg) != 0)
		return EXIT_USAGE;
	if (cfg->check_args)
		return options_check(cfg->workload, cfg->wargc, cfg->wargv) == 0 &&
		       inputs_check_names(cfg->workload, cfg->not_inputs, cfg->nnot_inputs) == 0
		       ? 0 : EXIT_USAGE;
	if (run_check_side_files(cfg, &files) != 0 ||
	    sidefiles_lock(&files, cfg->resume ? cfg->workload->name : NULL) != 0)
		return EXIT_USAGE;
	/* The metrics say the run started, and a bad --metrics path is
	 * found before the setup. */
	if (metrics.path && metrics_write(metrics.path, &metrics.m) != 0) {
		struct batch none = { 0 };
		sidefiles_close(&files, &none, 0);
		return EXIT_USAGE;
	}
	return setup_and_run(cfg, &files);
}
