/*
 * serial.c - serial mode: the selected tasks one after another in this
 * process, the reference every other mode is checked against.  Each task
 * is announced to the watchdog (watchdog.h), which runs above the batch and
 * names a task that ends the process.
 */
#include "serial.h"
#include "task.h"
#include "watchdog.h"
#include "os/util.h"

#include <stdio.h>
#include <unistd.h>

int serial_run(struct batch *b)
{
	struct cowrun_task task;
	int rc = 0;

	task_init(&task, b->workload, batch_outdir_label(b), batch_outdir_fd(b), &b->route);
	for (size_t i = 0; i < batch_count(b) && rc == 0 && !batch_stopping(b); i++) {
		struct attempt a = { .task = batch_task(b, i), .pid = (long)getpid() };
		if (!batch_pending(b, a.task))
			continue; /* resolved already: loaded by --resume */
		do {
			a.start_ns = now_ns();
			watchdog_enter(0, a.task);
			a.exitval = task_execute(&task, b->state, a.task) == 0 ? 0 : 1;
			fflush(stdout); /* run()'s prints: to stderr (taskout.h) */
			watchdog_leave(0);
			a.end_ns = now_ns();
			a.received = a.exitval ? 0 : task.record_len;
		} while (a.exitval && batch_attempt_failed(b, &a, task.error) &&
			 batch_retry_pause(b, a.task) == 0);
		if (a.exitval == 0)
			rc = batch_attempt_ok(b, &a, task.record, task.record_len);
	}
	task_free(&task);
	return rc;
}
