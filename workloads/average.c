/*
 * average.c - the task of "An odd use for fork()": fill a large array of
 * doubles with predictable data once, then average it in fixed slices.
 *
 * The fill is a[i] = (i mod 1000) / 4, so every value and every partial sum
 * up to 2^51 is exact in a double, and the average has a closed form that
 * finish() checks the merged result against.  Setup fills the array in
 * fixed blocks on the run's setup threads (cowrun_parallel): a value depends
 * only on its index, so the array is the same at every thread count.
 */
#include "cowrun.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct average_config {
	long long size;
	long long chunks;
};

/* Doubles filled per cowrun_parallel() block: 2 MiB, one huge page.  Fixed,
 * never derived from the thread count. */
#define FILL_BLOCK ((size_t)1 << 18)

static const struct average_config average_defaults = { 55256000, 64 };

static const struct cowrun_option average_options[] = {
	{ "size", COWRUN_OPT_INT, offsetof(struct average_config, size), 1, 4e9,
	  "N", "number of doubles to fill and average" },
	{ "chunks", COWRUN_OPT_INT, offsetof(struct average_config, chunks), 1, 1e6,
	  "N", "fixed slices the array is cut into: one task each" },
	{ 0 },
};

struct average_state {
	size_t size, chunks;
	double *values;      /* shared, in the setup arena */
	double total;        /* parent only: merged sum */
	unsigned long long count;
};

/* The slice's result record. */
struct average_record {
	double sum;
	unsigned long long count;
};

static double fill_value(size_t i)
{
	return (double)(i % 1000) / 4.0;
}

/* Sum of fill_value(i) for i < n, from the closed form. */
static double closed_form_sum(size_t n)
{
	size_t cycles = n / 1000, rest = n % 1000;

	return ((double)cycles * 499500.0 + (double)rest * ((double)rest - 1.0) / 2.0) / 4.0;
}

/* Setup thread: fill block `block` of the array (the last may be short). */
static int fill_block(void *ctx, size_t block, unsigned thread)
{
	struct average_state *s = ctx;
	size_t lo = block * FILL_BLOCK;
	size_t hi = s->size - lo < FILL_BLOCK ? s->size : lo + FILL_BLOCK;

	(void)thread;
	for (size_t i = lo; i < hi; i++)
		s->values[i] = fill_value(i);
	return 0;
}

/* The options and the checks the table cannot make, shared by setup and
 * plan so that a dry run refuses what the run refuses, in the same words.
 * Returns 0, or -1 after one line. */
static int parse_config(int argc, char **argv, struct average_config *cfg)
{
	*cfg = average_defaults;
	if (cowrun_parse_options(argc, argv, average_options, cfg) != 0)
		return -1;
	if (cfg->chunks > cfg->size) {
		cowrun_error("--chunks %lld is more than --size %lld: a slice would be empty",
			     cfg->chunks, cfg->size);
		return -1;
	}
	return 0;
}

/* The state without its array: all ntasks() and task_name() need. */
static struct average_state *new_state(const struct average_config *cfg)
{
	struct average_state *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	s->size = (size_t)cfg->size;
	s->chunks = (size_t)cfg->chunks;
	return s;
}

static void *average_setup(int argc, char **argv)
{
	struct average_config cfg;
	struct average_state *s;

	if (parse_config(argc, argv, &cfg) != 0)
		return NULL;
	s = new_state(&cfg);
	/* The array is the shared state: in the setup arena. */
	if (s == NULL || (s->values = cowrun_alloc((size_t)cfg.size * sizeof(double))) == NULL) {
		cowrun_error("cannot allocate %lld doubles", cfg.size);
		free(s);
		return NULL;
	}
	cowrun_parallel((s->size + FILL_BLOCK - 1) / FILL_BLOCK, fill_block, s);
	return s;
}

/* --dry-run: the slices follow from --chunks alone; nothing is filled. */
static void *average_plan(int argc, char **argv)
{
	struct average_config cfg;
	struct average_state *s;

	if (parse_config(argc, argv, &cfg) != 0)
		return NULL;
	if ((s = new_state(&cfg)) == NULL)
		cowrun_error("out of memory");
	return s;
}

static size_t average_ntasks(const void *state)
{
	return ((const struct average_state *)state)->chunks;
}

static void average_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "chunk-%04zu", k);
}

static int average_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct average_state *s = state;
	size_t lo = k * s->size / s->chunks, hi = (k + 1) * s->size / s->chunks;
	struct average_record r = { 0.0, hi - lo };

	for (size_t i = lo; i < hi; i++)
		r.sum += s->values[i];
	return cowrun_emit(task, &r, sizeof r);
}

static int average_merge(void *state, size_t k, const void *record, size_t len)
{
	struct average_state *s = state;
	struct average_record r;

	if (len != sizeof r) {
		cowrun_error("task %zu: record of %zu bytes, expected %zu", k, len, sizeof r);
		return -1;
	}
	memcpy(&r, record, sizeof r);
	s->total += r.sum;
	s->count += r.count;
	return 0;
}

static int average_finish(void *state, FILE *out)
{
	struct average_state *s = state;
	double expected = closed_form_sum(s->size) / (double)s->size;

	if (s->count == 0) {
		fprintf(out, "count 0: no slice succeeded, no average\n");
		return 0;
	}
	double average = s->total / (double)s->count;
	double rel = average > expected ? (average - expected) / expected
					: (expected - average) / expected;
	fprintf(out, "count %llu\naverage %.15g\n", s->count, average);
	if (s->count == s->size)
		fprintf(out, "expected %.15g (closed form), relative error %.1e: %s\n",
			expected, rel, rel <= 1e-12 ? "ok" : "MISMATCH");
	return s->count == s->size && rel > 1e-12 ? -1 : 0;
}

static void average_teardown(void *state)
{
	struct average_state *s = state;

	free(s); /* the values belong to the setup arena; a plan has none */
}

const struct cowrun_workload cowrun_workload_average = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "average",
	.summary = "average a large array of doubles in fixed slices (the fork() article's toy)",
	.description =
		"Setup fills --size doubles with a[i] = (i mod 1000) / 4.  Each task sums one\n"
		"of --chunks fixed slices; the summary prints the count and the average and\n"
		"checks it against the closed form to 1e-12 relative.  No report files.",
	.options = average_options,
	.defaults = &average_defaults,
	.setup = average_setup,
	.ntasks = average_ntasks,
	.task_name = average_task_name,
	.run = average_run,
	.merge = average_merge,
	.finish = average_finish,
	.teardown = average_teardown,
	.plan = average_plan,
};
