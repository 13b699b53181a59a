/*
 * omprun.c - OpenMP mode.  See omprun.h.
 */
#include "omprun.h"
#include "task.h"
#include "os/util.h"
#include "watchdog.h"

#include <omp.h>
#include <unistd.h>

/* Run task k until it succeeds or runs out of attempts (a retry here is on
 * the same thread, after --retry-delay: threads cannot be forked fresh).  Returns 0, or -1 if
 * the runner ran out of memory. */
static int run_with_retries(struct batch *b, struct cowrun_task *task, size_t k)
{
	struct attempt a = { .task = k, .worker = (unsigned)omp_get_thread_num(),
			     .pid = (long)getpid() };
	int retry, rc = 0;

	do {
		a.start_ns = now_ns();
		watchdog_enter(a.worker, k);
		a.exitval = task_execute(task, b->state, k) == 0 ? 0 : 1;
		fflush(stdout); /* run()'s prints: to stderr (taskout.h) */
		watchdog_leave(a.worker);
		a.end_ns = now_ns();
		a.received = a.exitval ? 0 : task->record_len;
		/* One thread at a time merges, in task order. */
		#pragma omp critical(cowrun_merge)
		{
			retry = 0;
			if (a.exitval)
				retry = batch_attempt_failed(b, &a, task->error);
			else
				rc = batch_attempt_ok(b, &a, task->record, task->record_len);
		}
	} while (retry && batch_retry_pause(b, k) == 0);
	return rc;
}

int omp_run(struct batch *b, size_t threads)
{
	int rc = 0;
	long n = (long)batch_count(b);

	#pragma omp parallel num_threads((int)threads) shared(rc)
	{
		struct cowrun_task task;

		task_init(&task, b->workload, batch_outdir_label(b), batch_outdir_fd(b),
			  &b->route);
		task.slot = (unsigned long)omp_get_thread_num() + 1;   /* {%} */
		#pragma omp for schedule(dynamic)
		for (long i = 0; i < n; i++) {
			size_t k = batch_task(b, (size_t)i);
			int stop;
			#pragma omp critical(cowrun_merge)
			stop = batch_stopping(b) || !batch_pending(b, k);
			/* An OpenMP loop cannot break: the rest are skipped. */
			if (!stop && run_with_retries(b, &task, k) != 0) {
				#pragma omp atomic write
				rc = -1;
			}
		}
		task_free(&task);
	}
	return rc;
}
