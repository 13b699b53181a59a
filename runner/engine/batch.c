/*
 * batch.c - outcomes of tasks, merged (or saved) in task order; and the
 * serial executor, the plainest user of it.
 */
#include "batch.h"
#include "os/signals.h"
#include "task.h"
#include "os/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RETRY_PAUSE_SLICE_NS 50000000u   /* batch_retry_pause() looks at signals this often */

int batch_init(struct batch *b)
{
	b->succeeded = b->failed = 0;
	b->merge_failed = 0;
	task_new_temp_tag();
	b->attempts = calloc(b->ntasks ? b->ntasks : 1, sizeof *b->attempts);
	if (b->attempts == NULL || reorder_init(&b->reorder, b->ntasks) != 0)
		return -1;
	if (b->selected) {
		/* Exclude every task between two selected ones. */
		size_t k = 0;
		for (size_t i = 0; i <= b->nselected; i++) {
			size_t until = i < b->nselected ? b->selected[i] : b->ntasks;
			for (; k < until; k++)
				reorder_exclude(&b->reorder, k);
			k = until + 1;
		}
	}
	return 0;
}

/* The outcome of task k, now in order: merge it, or save it. */
static void take_in_order(struct batch *b, size_t k, int failed,
			  const void *bytes, size_t length)
{
	if (b->save.put) {
		if (b->save.put(b->save.ctx, failed ? WIRE_FAILED : WIRE_RESULT, k, bytes, length) != 0)
			b->merge_failed = 1;
	} else if (!failed && b->workload->merge(b->state, k, bytes, length) != 0) {
		b->merge_failed = 1;
	}
}

/* Take every outcome that is now next in task order. */
static void drain_in_order(struct batch *b)
{
	size_t k, length;
	int failed;
	const void *bytes;

	while (reorder_next(&b->reorder, &k, &failed, &bytes, &length))
		take_in_order(b, k, failed, bytes, length);
}

int batch_result(struct batch *b, size_t k, const void *record, size_t length)
{
	if (reorder_state(&b->reorder, k) != REORDER_WAITING)
		return 0;
	b->succeeded++;
	drain_in_order(b); /* move past excluded tasks first */
	if (k == b->reorder.next) {
		/* The common case: in order, so take it without copying. */
		take_in_order(b, k, 0, record, length);
		reorder_skip_next(&b->reorder);
	} else if (reorder_put(&b->reorder, k, record, length) != 0) {
		warnx_("out of memory holding the result of task %zu (%zu bytes)", k, length);
		return -1;
	}
	drain_in_order(b);
	return 0;
}

void batch_failed(struct batch *b, size_t k, const char *why)
{
	char name[COWRUN_NAME_MAX];

	if (reorder_fail(&b->reorder, k, why, strlen(why)) != 0)
		return;
	b->failed++;
	b->workload->task_name(b->state, k, name, sizeof name);
	warnx_("%s: task %zu (%s) failed: %s", b->workload->name, k, name, why);
	drain_in_order(b);
}

int batch_pending(const struct batch *b, size_t k)
{
	return reorder_state(&b->reorder, k) == REORDER_WAITING;
}

int batch_complete(const struct batch *b)
{
	return reorder_complete(&b->reorder);
}

/* A --timeline row for attempt `a`.  The last column is the slot as {%}
 * numbers it (1 to -j), so a row can be matched to a command's {%}. */
static void write_timeline(struct batch *b, const struct attempt *a, const char *name)
{
	fprintf(b->timeline, "%zu,%s,%u,%ld,%.6f,%.6f,%s,%u\n", a->task, name, a->worker, a->pid,
		(double)(int64_t)(a->start_ns - b->started_ns) / 1e9,
		(double)(int64_t)(a->end_ns - b->started_ns) / 1e9,
		a->exitval == 0 && a->signal == 0 ? "ok" : "failed", a->worker + 1);
}

/* Every attempt goes to the joblog and the timeline. */
static void log_attempt(struct batch *b, const struct attempt *a)
{
	char name[COWRUN_NAME_MAX];

	if (b->joblog == NULL && b->timeline == NULL)
		return;
	b->workload->task_name(b->state, a->task, name, sizeof name);
	joblog_write(b->joblog, a, b->workload->name, name);
	if (b->timeline)
		write_timeline(b, a, name);
}

/* An attempt that counts against --retries, logged. */
static void record_attempt(struct batch *b, const struct attempt *a)
{
	b->attempts[a->task]++;
	log_attempt(b, a);
}

/* After a task is resolved: the progress line, and --halt. */
static void after_resolution(struct batch *b)
{
	progress_update(&b->progress, b->succeeded + b->failed, b->failed, 0);
	if (b->halting || !halt_reached(&b->halt, b->failed, b->succeeded, batch_count(b)))
		return;
	b->halting = b->halt.when;
	warnx_("%s: --halt %s: %zu failed, %zu succeeded; %s", b->workload->name,
	       b->halt.when == HALT_NOW ? "now" : "soon", b->failed, b->succeeded,
	       b->halt.when == HALT_NOW ? "killing running tasks" : "letting running tasks finish");
}

int batch_attempt_ok(struct batch *b, const struct attempt *a, const void *record,
		     size_t length)
{
	record_attempt(b, a);
	if (b->journal.put)
		b->journal.put(b->journal.ctx, WIRE_RESULT, a->task, record, length);
	int rc = batch_result(b, a->task, record, length);
	after_resolution(b);
	return rc;
}

int batch_attempt_failed(struct batch *b, const struct attempt *a, const char *why)
{
	record_attempt(b, a);
	if (b->attempts[a->task] <= b->retries && !batch_stopping(b)) {
		char name[COWRUN_NAME_MAX];
		b->workload->task_name(b->state, a->task, name, sizeof name);
		warnx_("%s: task %zu (%s) attempt %u failed: %s; retrying", b->workload->name,
		       a->task, name, b->attempts[a->task], why);
		return 1;
	}
	if (b->journal.put)
		b->journal.put(b->journal.ctx, WIRE_FAILED, a->task, why, strlen(why));
	batch_failed(b, a->task, why);
	after_resolution(b);
	return 0;
}

uint64_t batch_retry_delay_ns(const struct batch *b, size_t k)
{
	uint64_t delay = b->retry_delay_ns, cap = 10 * b->retry_delay_ns;

	for (unsigned i = 1; i < b->attempts[k] && delay < cap; i++)
		delay *= 2;
	return delay < cap ? delay : cap;
}

int batch_retry_pause(struct batch *b, size_t k)
{
	uint64_t due = now_ns() + batch_retry_delay_ns(b, k), now;

	/* In slices, so that Ctrl-C is not kept waiting (signals_count()
	 * may be read from any thread; batch_stopping() may not). */
	while (signals_count() == 0 && (now = now_ns()) < due) {
		uint64_t left = due - now < RETRY_PAUSE_SLICE_NS ? due - now : RETRY_PAUSE_SLICE_NS;
		struct timespec ts = { 0, (long)left };
		nanosleep(&ts, NULL);
	}
	return signals_count() == 0 ? 0 : -1;
}

void batch_attempt_requeued(struct batch *b, const struct attempt *a, const char *why)
{
	char name[COWRUN_NAME_MAX];

	log_attempt(b, a);
	b->workload->task_name(b->state, a->task, name, sizeof name);
	warnx_("%s: task %zu (%s) %s; it runs again", b->workload->name, a->task, name, why);
}

int batch_stopping(struct batch *b)
{
	if (b->halting == HALT_NEVER && signals_count() == 0)
		return 0;
	if (!b->stopped) {
		b->stopped = 1;
		b->done_at_stop = b->succeeded + b->failed;
		b->failed_at_stop = b->failed;
	}
	return 1;
}

int batch_killing(const struct batch *b)
{
	return b->halting == HALT_NOW || signals_count() > 1;
}

void batch_free(struct batch *b)
{
	if (b->outdir_open && !b->outdir_by_fd)
		close(b->outdir_fd);
	b->outdir_open = 0;
	free(b->attempts);
	b->attempts = NULL;
	reorder_free(&b->reorder);
}
