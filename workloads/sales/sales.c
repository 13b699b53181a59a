/*
 * sales.c - the nightly sales-report workload.
 *
 * Setup (parent, once) reads a CSV of transactions (csv_*.c) or generates a
 * deterministic synthetic data set (generate.c), on the setup threads,
 * straight into the read-only indexes every report needs: the transactions
 * grouped by store (one array plus offsets), the product catalogue and the
 * calendar.  `--merge` skips all that: merge_setup() builds the stores and
 * the calendar from the context saved with the results (context.c).  Each task
 * is one store: the worker writes that store manager's report
 * (store-NNNN.txt) and emits the store's totals; the parent merges them in
 * task order and prints the company summary.
 *
 * Money is int64 cents throughout and every printed ratio comes from integer
 * arithmetic, so all output is byte-identical at any -j and in every mode.
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct sales_config sales_defaults = {
	.input = NULL,
	.start_date = "2025-01-01",
	.rows = 40000000,
	.stores = 64,
	.products = 2000,
	.days = 365,
	.seed = 1,
};

static const struct cowrun_option sales_options[] = {
	{ "input", COWRUN_OPT_INPUT, offsetof(struct sales_config, input),
	  0, 0, "FILE", "read this CSV instead of generating data" },
	{ "rows", COWRUN_OPT_INT, offsetof(struct sales_config, rows),
	  1, 100000000, "N", "transactions to generate" },
	{ "stores", COWRUN_OPT_INT, offsetof(struct sales_config, stores),
	  1, 9999, "N", "stores to generate (one report each)" },
	{ "products", COWRUN_OPT_INT, offsetof(struct sales_config, products),
	  1, 1000000, "N", "products in the generated catalogue" },
	{ "days", COWRUN_OPT_INT, offsetof(struct sales_config, days),
	  1, 3660, "N", "days of generated sales" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct sales_config, seed),
	  0, 4294967295.0, "N", "seed of the generated data" },
	{ "start-date", COWRUN_OPT_STRING, offsetof(struct sales_config, start_date),
	  0, 0, "YYYY-MM-DD", "first day of the generated data" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- setup and teardown (parent) ---------------------------------------- */

/* Frees everything setup, merge_setup or plan built (NULL or half-built
 * is fine). */
static void sales_teardown(void *state)
{
	struct sales *s = state;

	if (s == NULL)
		return;
	index_free_tables(s);
	free(s->context);
	if (s->acc) {
		free(s->acc->result);
		free(s->acc->merged);
		free(s->acc);
	}
	free(s);
}

/* An empty state holding the parsed options, or NULL after one line. */
static struct sales *new_state(int argc, char **argv)
{
	struct sales_config cfg = sales_defaults;
	struct sales *s;

	if (cowrun_parse_options(argc, argv, sales_options, &cfg) != 0)
		return NULL;
	if ((s = calloc(1, sizeof *s)) == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	s->cfg = cfg;
	return s;
}

/* Parent, once: parse the options, read or generate the sales straight
 * into their indexes (on the setup threads), then the merge accumulator
 * and the merge context.  Returns the state (freed by sales_teardown), or
 * NULL after one line on stderr saying what failed; nothing is left
 * allocated then (but the arena, which the runner frees). */
static void *sales_setup(int argc, char **argv)
{
	struct sales *s = new_state(argc, argv);

	if (s == NULL)
		return NULL;
	if ((s->cfg.input ? csv_load(s->cfg.input, s) : generate_load(&s->cfg, s)) != 0)
		goto fail;
	if (index_acc(s) != 0 || context_build(s) != 0) {
		cowrun_error("out of memory indexing %zu transactions", s->ntxn);
		goto fail;
	}
	return s;
fail:
	sales_teardown(s);
	return NULL;
}

/* Parent, --merge only: the state merge() and finish() need, from the
 * arguments and the saved context; no row is read or generated.  Returns
 * NULL after one line on stderr. */
static void *sales_merge_setup(int argc, char **argv, const void *context, size_t len)
{
	struct sales *s = new_state(argc, argv);

	if (s == NULL)
		return NULL;
	if (context_load(s, context, len) != 0)
		goto fail;
	if (index_acc(s) != 0) {
		cowrun_error("out of memory building the merge state");
		goto fail;
	}
	return s;
fail:
	sales_teardown(s);
	return NULL;
}

/* --dry-run: on generated data the stores are 1..--stores, checked as
 * the setup checks them (the same functions), and nothing generated; with
 * --input they are the file's, known after reading it: NULL, no message. */
static void *sales_plan(int argc, char **argv)
{
	struct sales *s = new_state(argc, argv);
	uint32_t first;

	if (s == NULL || s->cfg.input)
		goto fail;
	if (generate_period(&s->cfg, &first) != 0)
		goto fail;
	if (generate_store_ids(&s->cfg, s) != 0) {
		cowrun_error("out of memory for %lld stores", s->cfg.stores);
		goto fail;
	}
	return s;
fail:
	sales_teardown(s);
	return NULL;
}

static size_t sales_ntasks(const void *state)
{
	const struct sales *s = state;

	return s->nstores;
}

static void sales_task_name(const void *state, size_t k, char *buf, size_t size)
{
	const struct sales *s = state;

	snprintf(buf, size, "store-%04" PRIu32 ".txt", s->store_id[k]);
}



static int result_valid(const struct sales *s, size_t k, const struct sales_result *r)
{
	return r->store_id == s->store_id[k] && r->revenue >= 0 && r->units >= 0 &&
	       r->transactions >= 0 && r->discount >= 0 && r->trading_days >= 0 &&
	       r->trading_days <= (int64_t)s->ndays && r->best_day >= -1 &&
	       r->best_day < (int64_t)s->ndays && r->best_day_revenue >= 0;
}

/* Parent, in task order: check store k's record and keep it in the
 * accumulator (the only memory merge writes). */
static int sales_merge(void *state, size_t k, const void *record, size_t len)
{
	struct sales *s = state;
	struct sales_result r;

	if (k >= s->nstores || len != sizeof r) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu",
			     k, len, sizeof r);
		return -1;
	}
	memcpy(&r, record, sizeof r);
	/* Each task merges once (cowrun.h): the runner sees to it. */
	if (!result_valid(s, k, &r)) {
		cowrun_error("task %zu (store %04" PRIu32 "): malformed result record", k,
			     s->store_id[k]);
		return -1;
	}
	s->acc->result[k] = r;
	s->acc->merged[k] = 1;
	s->acc->nmerged++;
	return 0;
}

/* The biggest stores: revenue descending, ties in task (store id) order. */
static size_t top_stores(const struct sales_acc *acc, size_t nstores, size_t *top)
{
	size_t n = 0;

	for (size_t k = 0; k < nstores; k++) {
		int64_t rev = acc->result[k].revenue;
		size_t i;
		if (!acc->merged[k])
			continue;
		i = n < TOP_STORES ? n++ : TOP_STORES;
		while (i > 0 && acc->result[top[i - 1]].revenue < rev) {
			if (i < TOP_STORES)
				top[i] = top[i - 1];
			i--;
		}
		if (i < TOP_STORES)
			top[i] = k;
	}
	return n;
}

static void finish_top(FILE *out, const struct sales *s, const struct sales_result *sum)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	size_t top[TOP_STORES];
	size_t n = top_stores(s->acc, s->nstores, top);

	fprintf(out, "\nTop %d stores by revenue\n", TOP_STORES);
	fprintf(out, "  %4s %6s %18s %7s %14s  %s\n", "Rank", "Store",
		"Revenue", "Share", "Transactions", "Best day");
	for (size_t i = 0; i < n; i++) {
		const struct sales_result *r = &s->acc->result[top[i]];
		fprintf(out, "  %4zu   %04" PRId64 " %18s %7s %14s  ", i + 1, r->store_id,
			fmt_money(a, r->revenue), fmt_share(b, r->revenue, sum->revenue),
			fmt_count(c, r->transactions));
		if (r->best_day >= 0)
			fprintf(out, "%s %s\n", s->day[r->best_day].date,
				fmt_money(d, r->best_day_revenue));
		else
			fprintf(out, "-\n");
	}
}

static void finish_totals(const struct sales *s, struct sales_result *sum)
{
	memset(sum, 0, sizeof *sum);
	for (size_t k = 0; k < s->nstores; k++) {
		const struct sales_result *r = &s->acc->result[k];
		if (!s->acc->merged[k])
			continue;
		sum->revenue += r->revenue;
		sum->units += r->units;
		sum->transactions += r->transactions;
		sum->discount += r->discount;
	}
}

/* Parent: the company summary from the merged records, on out. */
static int sales_finish(void *state, FILE *out)
{
	struct sales *s = state;
	struct sales_result sum;
	char a[NUMBUF];
	int64_t nm = (int64_t)s->acc->nmerged;

	finish_totals(s, &sum);
	fprintf(out, "Sales summary\n");
	if (s->cfg.input)
		fprintf(out, "  %-24s %s\n", "Source", s->cfg.input);
	else
		fprintf(out, "  %-24s generated data, seed %lld\n", "Source", s->cfg.seed);
	fprintf(out, "  %-24s %s to %s (%zu day%s)\n", "Period", s->day[0].date,
		s->day[s->ndays - 1].date, s->ndays, plural((int64_t)s->ndays));
	fprintf(out, "  %-24s %zu of %zu\n", "Stores reported", s->acc->nmerged, s->nstores);
	fprintf(out, "  %-24s %18s\n", "Transactions", fmt_count(a, sum.transactions));
	fprintf(out, "  %-24s %18s\n", "Units sold", fmt_count(a, sum.units));
	fprintf(out, "  %-24s %18s\n", "Revenue", fmt_money(a, sum.revenue));
	fprintf(out, "  %-24s %18s\n", "Average per store", fmt_avg_money(a, sum.revenue, nm));
	fprintf(out, "  %-24s %18s\n", "Average transaction",
		fmt_avg_money(a, sum.revenue, sum.transactions));
	fprintf(out, "  %-24s %18s\n", "Discount given", fmt_money(a, sum.discount));
	finish_top(out, s, &sum);
	if (ferror(out)) {
		cowrun_error("cannot write the summary");
		return -1;
	}
	return 0;
}

const struct cowrun_workload cowrun_workload_sales = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "sales",
	.summary = "nightly sales reports: one report per store, company summary",
	.description =
		"Reads a CSV of sales (header " CSV_HEADER ";\n"
		"money with at most 2 decimals) or generates a deterministic data set\n"
		"from --seed, indexes it once, then writes one report per store\n"
		"(store-NNNN.txt: months, top products, basket percentiles, best and\n"
		"worst day, weekdays) and prints the company summary.  With --input\n"
		"the generator options are ignored.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = sales_options,
	.defaults = &sales_defaults,
	.setup = sales_setup,
	.ntasks = sales_ntasks,
	.task_name = sales_task_name,
	.run = sales_run,
	.merge = sales_merge,
	.finish = sales_finish,
	.teardown = sales_teardown,
	.merge_context = sales_merge_context,
	.merge_setup = sales_merge_setup,
	.plan = sales_plan,
};
