/*
 * metrics.h - --metrics FILE: a run's figures in the Prometheus text
 * format, for the node exporter's textfile collector (the usual way a
 * nightly job reports to Prometheus).  Written whole under a temporary
 * name and renamed, at the end of the run and every METRICS_EVERY_S on a
 * long one, so the collector never reads half a file.  Samples carry no
 * time stamps (the collector refuses them): start and end times are
 * gauges.  The run id is a label of cowrun_run_info only: a label on every
 * metric would start new series every night.
 */
#ifndef COWRUN_METRICS_H
#define COWRUN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_EVERY_S 30

struct run_metrics {
	const char *run_id;
	const char *workload;
	const char *version;
	int running;                 /* 1 while the run goes on */
	double start_epoch, end_epoch;
	double setup_s;
	int counts_known;            /* 0: the process that ran the tasks died */
	size_t tasks, succeeded, failed, retries;
	size_t workers;
	int exit_status;             /* -1 while running */
	size_t setup_peak_rss_bytes;
	uint64_t worker_pss_max_bytes, worker_private_max_bytes;
};

/* Write `m` to `path` (temporary name beside it, then rename).  Returns 0,
 * or -1 after a message naming the file. */
int metrics_write(const char *path, const struct run_metrics *m);

/* A run id: the start time in UTC and 8 random hex digits,
 * "20261124T061500Z-1a2b3c4d", in out (at least 32 bytes). */
void metrics_run_id(char *out, size_t size, double epoch);

#endif
