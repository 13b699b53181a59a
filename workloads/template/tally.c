/*
 * tally.c - a complete out-of-tree cowrun workload that reads an input
 * file, to copy and change: the shape of a nightly batch over the day's
 * data.
 *
 * Setup reads a CSV of transactions, "customer,amount" lines (a customer
 * id, an amount in cents), into the setup arena.  Each task is one range
 * of customer ids: it writes a report for its range and emits the range's
 * count and total; the parent sums them in task order and prints the day's
 * total.
 *
 * What it does so that --resume and --merge refuse a changed input:
 *
 *   1. --input is declared COWRUN_OPT_INPUT: the runner records the file's
 *      identity (size, content hash, path, inode, mtime) with the saved
 *      results and in the joblog's journal.  A --resume after the file was
 *      regenerated is refused, naming the file and what changed; so is a
 *      --merge of shards saved from two different files.
 *   2. --read-kb changes how the file is read, never a result: declared
 *      COWRUN_OPT_TUNING, a resume or a merge may change it.
 *   3. merge_context() and merge_setup(): what merge() and finish() need
 *      (here the transaction count) is saved with the results, so
 *      `cowrun --merge` of shards builds its state from them, without
 *      reading the input at all (it may be gone by then).
 *
 * Build:   cc -std=gnu11 -fPIC -shared $(pkg-config --cflags cowrun) -o libtally.so tally.c
 *          (or `make`, which builds this and primes.c)
 * Run:     cowrun -j 4 --workload ./libtally.so --input day.csv --ranges 8
 */
#include <cowrun.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- options ---- */

struct tally_config {
	const char *input;
	long long ranges;
	long long read_kb;
};

static const struct tally_config defaults = { NULL, 8, 64 };

static const struct cowrun_option options[] = {
	{ "input", COWRUN_OPT_INPUT, offsetof(struct tally_config, input), 0, 0,
	  "FILE", "the transactions: customer,amount lines (amount in cents)" },
	{ "ranges", COWRUN_OPT_INT, offsetof(struct tally_config, ranges), 1, 10000,
	  "N", "customer ids split into N ranges: one task and one report each" },
	{ "read-kb", COWRUN_OPT_INT | COWRUN_OPT_TUNING, offsetof(struct tally_config, read_kb),
	  4, 1 << 20, "KB", "read buffer size" },
	{ 0 },
};

/* ---- the state ---- */

#define MAX_CUSTOMER 1000000u

struct tally_state {
	uint64_t ranges;
	uint64_t ntx;
	uint32_t *customer;     /* ntx of them: shared, read-only (arena) */
	int64_t *amount;
	/* parent only: */
	uint64_t merged_tx;
	int64_t total;
	struct tally_context {  /* merge_context(): saved with the results */
		uint32_t magic, version;
		uint64_t transactions;
	} context;
};

#define CONTEXT_MAGIC 0x544c4c59u /* "TLLY" */

/* One "customer,amount" line.  Returns 0, or -1 if it is not one. */
static int parse_line(const char *line, uint32_t *customer, int64_t *amount)
{
	char *end;
	unsigned long c;
	long long a;

	errno = 0;
	c = strtoul(line, &end, 10);
	if (end == line || *end != ',' || c == 0 || c > MAX_CUSTOMER || errno)
		return -1;
	line = end + 1;
	a = strtoll(line, &end, 10);
	if (end == line || (*end != '\0' && *end != '\n') || errno)
		return -1;
	*customer = (uint32_t)c;
	*amount = a;
	return 0;
}

/* Read the file twice: count the lines, then fill the arena.  Returns 0,
 * or -1 after one cowrun_error() line naming the file. */
static int read_input(struct tally_state *s, const char *path, size_t bufsize)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, n = 0, lineno = 0;
	int rc = -1;

	if (f == NULL) {
		cowrun_error("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, bufsize);
	while (getline(&line, &cap, f) > 0)
		n++;
	s->customer = cowrun_alloc(n * sizeof *s->customer + 1);
	s->amount = cowrun_alloc(n * sizeof *s->amount + 1);
	if (s->customer == NULL || s->amount == NULL) {
		cowrun_error("out of memory for %zu transactions", n);
		goto out;
	}
	rewind(f);
	while (s->ntx < n && getline(&line, &cap, f) > 0) {
		lineno++;
		if (parse_line(line, &s->customer[s->ntx], &s->amount[s->ntx]) != 0) {
			cowrun_error("%s:%zu: expected customer,amount", path, lineno);
			goto out;
		}
		s->ntx++;
	}
	if (s->ntx != n || ferror(f)) {
		cowrun_error("cannot read '%s': it changed while it was read", path);
		goto out;
	}
	rc = 0;
out:
	free(line);
	fclose(f);
	return rc;
}

static struct tally_state *new_state(int argc, char **argv, struct tally_config *cfg)
{
	struct tally_state *s;

	*cfg = defaults;
	if (cowrun_parse_options(argc, argv, options, cfg) != 0)
		return NULL;
	if ((s = calloc(1, sizeof *s)) == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	s->ranges = (uint64_t)cfg->ranges;
	return s;
}

/* Parent, once: parse the options, read the input into the arena. */
static void *tally_setup(int argc, char **argv)
{
	struct tally_config cfg;
	struct tally_state *s = new_state(argc, argv, &cfg);

	if (s == NULL)
		return NULL;
	if (cfg.input == NULL) {
		cowrun_error("--input FILE is required");
		free(s);
		return NULL;
	}
	if (read_input(s, cfg.input, (size_t)cfg.read_kb << 10) != 0) {
		free(s);
		return NULL;
	}
	s->context = (struct tally_context){ CONTEXT_MAGIC, 1, s->ntx };
	return s;
}

/* Parent: what --merge needs besides the arguments. */
static const void *tally_merge_context(const void *state, size_t *len)
{
	const struct tally_state *s = state;

	*len = sizeof s->context;
	return &s->context;
}

/* Parent, --merge only: the state merge() and finish() need, from the
 * arguments and the saved context; the input is not read. */
static void *tally_merge_setup(int argc, char **argv, const void *context, size_t len)
{
	struct tally_config cfg;
	struct tally_state *s = new_state(argc, argv, &cfg);

	if (s == NULL)
		return NULL;
	if (len != sizeof s->context) {
		cowrun_error("saved results: unusable merge context (%zu bytes)", len);
		free(s);
		return NULL;
	}
	memcpy(&s->context, context, len);
	if (s->context.magic != CONTEXT_MAGIC || s->context.version != 1) {
		cowrun_error("saved results: unusable merge context (not tally's)");
		free(s);
		return NULL;
	}
	return s;
}

static size_t tally_ntasks(const void *state)
{
	return ((const struct tally_state *)state)->ranges;
}

static void tally_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "customers-%04zu.txt", k);
}

/* Customer c's range: fixed by the id and --ranges, never by -j. */
static uint64_t range_of(const struct tally_state *s, uint32_t c)
{
	return (uint64_t)(c - 1) * s->ranges / MAX_CUSTOMER;
}

/* Worker: range k's transactions, its report and record. */
static int tally_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct tally_state *s = state;
	struct { uint64_t count; int64_t total; } r = { 0, 0 };

	for (uint64_t i = 0; i < s->ntx; i++)
		if (range_of(s, s->customer[i]) == k) {
			r.count++;
			r.total += s->amount[i];
		}
	FILE *report = cowrun_report(task);
	if (report == NULL)
		return -1;
	fprintf(report, "customer range %zu of %" PRIu64 ": %" PRIu64 " transactions, %" PRId64
		" cents\n", k, s->ranges, r.count, r.total);
	return cowrun_emit(task, &r, sizeof r);
}

static int tally_merge(void *state, size_t k, const void *record, size_t len)
{
	struct tally_state *s = state;
	struct { uint64_t count; int64_t total; } r;

	if (len != sizeof r) {
		cowrun_error("task %zu: record of %zu bytes, expected %zu", k, len, sizeof r);
		return -1;
	}
	memcpy(&r, record, sizeof r);
	s->merged_tx += r.count;
	s->total += r.total;
	return 0;
}

static int tally_finish(void *state, FILE *out)
{
	const struct tally_state *s = state;

	fprintf(out, "%" PRIu64 " transactions (%" PRIu64 " merged), total %" PRId64 " cents\n",
		s->context.transactions, s->merged_tx, s->total);
	return 0;
}

static void tally_teardown(void *state)
{
	free(state); /* customer and amount are the arena's */
}

const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "tally",
	.summary = "total a day's transactions per customer range (reads --input)",
	.description = "An example out-of-tree workload that reads an input file: copy it to start your own.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = options,
	.defaults = &defaults,
	.setup = tally_setup,
	.ntasks = tally_ntasks,
	.task_name = tally_task_name,
	.run = tally_run,
	.merge = tally_merge,
	.finish = tally_finish,
	.teardown = tally_teardown,
	.merge_context = tally_merge_context,
	.merge_setup = tally_merge_setup,
};
