/*
 * serial.h - serial mode: the batch's tasks in this process, in order.
 */
#ifndef COWRUN_SERIAL_H
#define COWRUN_SERIAL_H

#include "batch.h"

/* Run the selected tasks in this process, in task order, each attempt
 * announced to the watchdog (a task that kills the process is named by
 * it).  Tasks --resume settled are skipped.  Returns 0, or -1 if the
 * runner ran out of memory. */
int serial_run(struct batch *b);

#endif
