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
	/* Set: called from progress_update() at most every tick_ns (the
	 * metrics file of a long run).  The caller owns ctx. */
	void (*tick)(void *ctx);
	void *tick_ctx;
	uint64_t tick_ns, ticked_ns;
};

/* `mode`: 0 off, 1 on if stderr is a terminal, 2 always.  Keeps a tick
 * set before it. */
void progress_init(struct progress *p, int mode, size_t total);

/* Call tick(ctx) from progress_update() every `every_ns` at most. */
void progress_set_tick(struct progress *p, void (*tick)(void *), void *ctx, uint64_t every_ns);

/* Redraw if enough time has passed (or `force`); tick if one is due. */
void progress_update(struct progress *p, size_t done, size_t failed, int force);

/* Draw the final state and end the line. */
void progress_finish(struct progress *p, size_t done, size_t failed);

#endif
