/*
 * progress.h - --bar: one line on stderr, redrawn at most a few times a
 * second: done/total, failures, tasks per second and time left.
 */
#ifndef COWRUN_PROGRESS_H
#define COWRUN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

struct progress {
	int enabled;
	size_t total;
	uint64_t started_ns, drawn_ns;
	int drawn;
};

/* `mode`: 0 off, 1 on if stderr is a terminal, 2 always. */
void progress_init(struct progress *p, int mode, size_t total);

/* Redraw if enough time has passed (or `force`). */
void progress_update(struct progress *p, size_t done, size_t failed, int force);

/* Draw the final state and end the line. */
void progress_finish(struct progress *p, size_t done, size_t failed);

#endif
