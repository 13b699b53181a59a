/*
 * batch.c - outcomes of tasks, merged in task order; and the serial
 * executor, the plainest user of it.
 */
#include "batch.h"
#include "task.h"
#include "util.h"

int batch_init(struct batch *b)
{
	b->succeeded = b->failed = 0;
	b->merge_failed = 0;
	return reorder_init(&b->reorder, b->ntasks);
}

static void merge_one(struct batch *b, size_t k, const void *record, size_t length)
{
	if (b->workload->merge(b->state, k, record, length) != 0)
		b->merge_failed = 1;
}

/* Merge every outcome that is now next in task order. */
static void drain_in_order(struct batch *b)
{
	size_t k, length;
	int failed;
	const void *record;

	while (reorder_next(&b->reorder, &k, &failed, &record, &length))
		if (!failed)
			merge_one(b, k, record, length);
}

int batch_result(struct batch *b, size_t k, const void *record, size_t length)
{
	if (reorder_state(&b->reorder, k) != REORDER_WAITING)
		return 0;
	b->succeeded++;
	if (k == b->reorder.next) {
		/* The common case: in order, so merge without copying. */
		merge_one(b, k, record, length);
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

	if (reorder_fail(&b->reorder, k) != 0)
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

int serial_run(struct batch *b)
{
	struct cowrun_task task;
	int rc = 0;

	task_init(&task, b->workload, b->outdir);
	for (size_t k = 0; k < b->ntasks && rc == 0; k++) {
		if (task_execute(&task, b->state, k) == 0)
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
