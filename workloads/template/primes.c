/*
 * primes.c - a complete out-of-tree cowrun workload, to copy and change.
 *
 * It counts the primes below --limit in --ranges fixed ranges.  The shared
 * setup is a table of the small primes (up to the square root of the
 * limit), built once in the parent; each task sieves one range with it,
 * writes a report file for that range and emits the range's count; the
 * parent sums the counts in task order and prints the total.
 *
 * Build:   make                 (needs cowrun installed: pkg-config cowrun)
 * Run:     cowrun -j 4 --workload ./libprimes.so --limit 100000000
 */
#include <cowrun.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- options: a config struct and a table describing its fields ---- */

struct primes_config {
	long long limit;
	long long ranges;
};

static const struct primes_config defaults = { 10000000, 40 };

static const struct cowrun_option options[] = {
	{ "limit", COWRUN_OPT_INT, offsetof(struct primes_config, limit), 100, 1e12,
	  "N", "count the primes below N" },
	{ "ranges", COWRUN_OPT_INT, offsetof(struct primes_config, ranges), 1, 100000,
	  "N", "split [0, limit) into N ranges: one task and one report each" },
	{ 0 },
};

/* ---- the state: shared part in the setup arena, parent part on the heap ---- */

struct primes_state {
	uint64_t limit, ranges;
	uint32_t *small;        /* primes up to sqrt(limit): shared, read-only */
	size_t nsmall;
	uint64_t total;         /* parent only: written by merge() */
};

/* Primes up to n by a plain sieve, into the setup arena. */
static int build_small_primes(struct primes_state *s, uint64_t n)
{
	unsigned char *composite = calloc(n + 1, 1); /* scratch: heap */

	if (composite == NULL)
		return -1;
	s->small = cowrun_alloc((n + 1) * sizeof *s->small);
	if (s->small == NULL) {
		free(composite);
		return -1;
	}
	for (uint64_t i = 2; i <= n; i++) {
		if (composite[i])
			continue;
		s->small[s->nsmall++] = (uint32_t)i;
		for (uint64_t j = i * i; j <= n; j += i)
			composite[j] = 1;
	}
	free(composite);
	return 0;
}

/* Parent, once: parse the options, build the shared table. */
static void *primes_setup(int argc, char **argv)
{
	struct primes_config cfg = defaults;
	struct primes_state *s;

	if (cowrun_parse_options(argc, argv, options, &cfg) != 0)
		return NULL;
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	s->limit = (uint64_t)cfg.limit;
	s->ranges = (uint64_t)cfg.ranges;
	uint64_t root = 1;
	while ((root + 1) * (root + 1) <= s->limit)
		root++;
	if (build_small_primes(s, root) != 0) {
		cowrun_error("out of memory for the primes up to %llu", (unsigned long long)root);
		free(s);
		return NULL;
	}
	return s;
}

static size_t primes_ntasks(const void *state)
{
	return ((const struct primes_state *)state)->ranges;
}

/* A stable name that is also the report's file name. */
static void primes_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "range-%05zu.txt", k);
}

/* Worker: sieve range k with the shared small primes.  Reads the state,
 * never writes it; its own scratch memory is malloc'd and freed. */
static int primes_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct primes_state *s = state;
	uint64_t lo = k * s->limit / s->ranges, hi = (k + 1) * s->limit / s->ranges;
	unsigned char *composite = calloc(hi - lo + 1, 1);
	uint64_t count = 0;

	if (composite == NULL) {
		cowrun_task_error(task, "out of memory for a range of %llu", (unsigned long long)(hi - lo));
		return -1;
	}
	for (size_t i = 0; i < s->nsmall; i++) {
		uint64_t p = s->small[i], first = (lo + p - 1) / p * p;
		for (uint64_t j = first < p * p ? p * p : first; j < hi; j += p)
			composite[j - lo] = 1;
	}
	for (uint64_t n = lo < 2 ? 2 : lo; n < hi; n++)
		count += !composite[n - lo];
	free(composite);
	FILE *report = cowrun_report(task); /* OUTDIR/range-NNNNN.txt, atomically */
	if (report == NULL)
		return -1;
	fprintf(report, "primes in [%llu, %llu): %llu\n", (unsigned long long)lo,
		(unsigned long long)hi, (unsigned long long)count);
	return cowrun_emit(task, &count, sizeof count); /* what merge() gets */
}

/* Parent, in task order: fold one range's count in. */
static int primes_merge(void *state, size_t k, const void *record, size_t len)
{
	struct primes_state *s = state;
	uint64_t count;

	if (len != sizeof count) {
		cowrun_error("task %zu: record of %zu bytes, expected %zu", k, len, sizeof count);
		return -1;
	}
	memcpy(&count, record, sizeof count);
	s->total += count;
	return 0;
}

static int primes_finish(void *state, FILE *out)
{
	const struct primes_state *s = state;

	fprintf(out, "primes below %llu: %llu\n", (unsigned long long)s->limit,
		(unsigned long long)s->total);
	return 0;
}

static void primes_teardown(void *state)
{
	free(state); /* s->small is the arena's: never free() it */
}

/* The one symbol cowrun looks for. */
const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "primes",
	.summary = "count primes in fixed ranges with a shared table of small primes",
	.description = "An example out-of-tree workload: copy it to start your own.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = options,
	.defaults = &defaults,
	.setup = primes_setup,
	.ntasks = primes_ntasks,
	.task_name = primes_task_name,
	.run = primes_run,
	.merge = primes_merge,
	.finish = primes_finish,
	.teardown = primes_teardown,
};
