/*
 * progress.c - the --bar progress line.  See progress.h.
 */
#include "progress.h"
#include "os/util.h"

#include <stdio.h>
#include <unistd.h>

#define REDRAW_NS 200000000u  /* five times a second is smooth enough */
#define BAR_WIDTH 30

void progress_init(struct progress *p, int mode, size_t total)
{
	p->enabled = mode == 2 || (mode == 1 && isatty(STDERR_FILENO));
	p->total = total;
	p->started_ns = p->drawn_ns = p->ticked_ns = now_ns();
	p->drawn = 0;
}

void progress_set_tick(struct progress *p, void (*tick)(void *), void *ctx, uint64_t every_ns)
{
	p->tick = tick;
	p->tick_ctx = ctx;
	p->tick_ns = every_ns;
	p->ticked_ns = now_ns();
}

static void draw(struct progress *p, size_t done, size_t failed)
{
	char bar[BAR_WIDTH + 1];
	double elapsed = (double)(now_ns() - p->started_ns) / 1e9;
	double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
	size_t filled = p->total ? done * BAR_WIDTH / p->total : BAR_WIDTH;

	for (size_t i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	fprintf(stderr, "\r[%s] %zu/%zu done, %zu failed, %.1f tasks/s", bar, done, p->total,
		failed, rate);
	if (rate > 0 && done < p->total) {
		long left = (long)((double)(p->total - done) / rate + 0.5);
		fprintf(stderr, ", ETA %ld:%02ld:%02ld  ", left / 3600, left / 60 % 60, left % 60);
	} else {
		fprintf(stderr, "                 ");
	}
	p->drawn = 1;
	p->drawn_ns = now_ns();
}

void progress_update(struct progress *p, size_t done, size_t failed, int force)
{
	if (!p->enabled && p->tick == NULL)
		return;   /* after every task: nothing to look at the clock for */
	uint64_t now = now_ns();

	if (p->enabled && (force || now - p->drawn_ns >= REDRAW_NS))
		draw(p, done, failed);
	if (p->tick && now - p->ticked_ns >= p->tick_ns) {
		p->ticked_ns = now;
		p->tick(p->tick_ctx);
	}
}

void progress_finish(struct progress *p, size_t done, size_t failed)
{
	if (!p->enabled)
		return;
	draw(p, done, failed);
	fputc('\n', stderr);
}
