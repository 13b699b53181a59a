/*
 * metrics.c - the --metrics file in the Prometheus text format.  See
 * metrics.h.
 */
#include "metrics.h"
#include "os/util.h"
#include "os/fileops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One gauge: its HELP and TYPE lines and one sample. */
static void gauge(FILE *f, const char *name, const char *help, const char *labels, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} ", name, help, name, name, labels);
	/* Counts and bytes as integers; seconds to the microsecond. */
	fprintf(f, v == (double)(long long)v ? "%.0f\n" : "%.6f\n", v);
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void label_value(char *out, size_t size, const char *in)
{
	size_t n = 0;

	for (; *in && n + 3 < size; in++) {
		if (*in == '\\' || *in == '"' || *in == '\n')
			out[n++] = '\\';
		out[n++] = *in == '\n' ? 'n' : *in;
	}
	out[n] = '\0';
}

static void write_body(FILE *f, const struct run_metrics *m)
{
	char wl[300], name[256];

	label_value(name, sizeof name, m->workload);
	snprintf(wl, sizeof wl, "workload=\"%s\"", name);
	fprintf(f, "# HELP cowrun_run_info The run: its id, workload, version and host (value 1).\n"
		"# TYPE cowrun_run_info gauge\n"
		"cowrun_run_info{%s,run_id=\"%s\",version=\"%s\",host=\"%s\"} 1\n",
		wl, m->run_id, m->version, host_tag());
	gauge(f, "cowrun_running", "1 while the run goes on, 0 once it has ended.", wl, m->running);
	gauge(f, "cowrun_start_time_seconds", "When the run started, in seconds since the epoch.",
	      wl, m->start_epoch);
	if (!m->running) {
		gauge(f, "cowrun_end_time_seconds", "When the run ended, in seconds since the epoch.",
		      wl, m->end_epoch);
		gauge(f, "cowrun_exit_status", "The run's exit status (0: every task succeeded).", wl,
		      m->exit_status);
	}
	gauge(f, "cowrun_duration_seconds", "Seconds from the start to the end (or to now).", wl,
	      (m->running ? epoch_seconds() : m->end_epoch) - m->start_epoch);
	gauge(f, "cowrun_setup_seconds", "Seconds the workload's setup took.", wl, m->setup_s);
	if (m->counts_known) {
		gauge(f, "cowrun_tasks", "Tasks this run executes.", wl, (double)m->tasks);
		gauge(f, "cowrun_tasks_succeeded", "Tasks that succeeded so far.", wl,
		      (double)m->succeeded);
		gauge(f, "cowrun_tasks_failed", "Tasks that failed (after their retries) so far.", wl,
		      (double)m->failed);
		gauge(f, "cowrun_task_retries", "Attempts beyond each task's first (--retries).", wl,
		      (double)m->retries);
	}
	if (m->counts_known)
		gauge(f, "cowrun_workers", "Workers (processes or threads) the task phase used.", wl,
		      (double)m->workers);
	gauge(f, "cowrun_setup_peak_rss_bytes", "Peak resident memory of the process that ran the setup.",
	      wl, (double)m->setup_peak_rss_bytes);
	gauge(f, "cowrun_worker_pss_max_bytes", "The largest worker's proportional set size (fork mode).",
	      wl, (double)m->worker_pss_max_bytes);
	gauge(f, "cowrun_worker_private_max_bytes",
	      "The most one worker copied or allocated (private dirty memory, fork mode).", wl,
	      (double)m->worker_private_max_bytes);
}

int metrics_write(const char *path, const struct run_metrics *m)
{
	char temp[PATH_MAX];
	int fd = create_temp_beside_at(AT_FDCWD, path, temp, sizeof temp, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (f == NULL) {
		warnx_("--metrics: cannot create '%s': %s", fd >= 0 ? temp : path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	write_body(f, m);
	if (commit_stream_at(AT_FDCWD, f, temp, path, COMMIT_FSYNC) != 0) {
		warnx_("--metrics: cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

void metrics_run_id(char *out, size_t size, double epoch)
{
	char tag[17], when[32];
	time_t t = (time_t)epoch;
	struct tm tm;

	random_tag(tag);
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
	snprintf(out, size, "%s-%.8s", when, tag);
}
