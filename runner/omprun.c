/*
 * omprun.c - OpenMP mode.  See omprun.h.
 */
#include "omprun.h"
#include "task.h"
#include "util.h"

#include <omp.h>
#include <unistd.h>

int omp_run(struct batch *b, size_t threads)
{
	int rc = 0;
	long n = (long)batch_count(b);

	#pragma omp parallel num_threads((int)threads) shared(rc)
	{
		struct cowrun_task task;

		task_init(&task, b->workload, b->outdir);
		#pragma omp for schedule(dynamic)
		for (long i = 0; i < n; i++) {
			size_t k = batch_task(b, (size_t)i);
			uint64_t start = now_ns();
			int ok = task_execute(&task, b->state, k) == 0;
			uint64_t end = now_ns();
			/* One thread at a time merges, in task order. */
			#pragma omp critical(cowrun_merge)
			{
				batch_timeline(b, k, (unsigned)omp_get_thread_num(),
					       (long)getpid(), start, end, ok);
				if (!ok)
					batch_failed(b, k, task.error);
				else if (batch_result(b, k, task.record, task.record_len) != 0)
					rc = -1;
			}
		}
		task_free(&task);
	}
	return rc;
}
