/*
 * batch.c - outcomes of tasks, merged (or saved) in task order; and the
 * serial executor, the plainest user of it.
 */
#include "batch.h"
#include "results.h"
#include "task.h"
#include "util.h"

#include <string.h>
#include <unistd.h>

int batch_init(struct batch *b)
{
	b->succeeded = b->failed = 0;
	b->merge_failed = 0;
	if (reorder_init(&b->reorder, b->ntasks) != 0)
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
	if (b->save) {
		if (results_put(b->save, failed ? WIRE_FAILED : WIRE_RESULT, k, bytes, length) != 0)
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

void batch_timeline(struct batch *b, size_t k, unsigned worker, long pid,
		    uint64_t start_ns, uint64_t end_ns, int ok)
{
	char name[COWRUN_NAME_MAX];

	if (b->timeline == NULL)
		return;
	b->workload->task_name(b->state, k, name, sizeof name);
	fprintf(b->timeline, "%zu,%s,%u,%ld,%.6f,%.6f,%s\n", k, name, worker, pid,
		(double)(int64_t)(start_ns - b->started_ns) / 1e9,
		(double)(int64_t)(end_ns - b->started_ns) / 1e9, ok ? "ok" : "failed");
}

int serial_run(struct batch *b)
{
	struct cowrun_task task;
	int rc = 0;

	task_init(&task, b->workload, b->outdir);
	for (size_t i = 0; i < batch_count(b) && rc == 0; i++) {
		size_t k = batch_task(b, i);
		uint64_t start = now_ns();
		int ok = task_execute(&task, b->state, k) == 0;
		batch_timeline(b, k, 0, (long)getpid(), start, now_ns(), ok);
		if (ok)
			rc = batch_result(b, k, task.record, task.record_len);
		else
			batch_failed(b, k, task.error);
	}
	task_free(&task);
	return rc;
}

void batch_free(struct batch *b)
{
	reorder_free(&b->reorder);
}
