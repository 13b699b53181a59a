/*
 * report.c - the worker side: one store's figures and its report.  Reads the state only.
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ==== worker side: run() and the store report.  Reads the state only. ==== */

struct tally {
	int64_t revenue, units, tx;
};

/* One store's figures, computed into scratch memory of the task's own. */
struct stats {
	const struct txn *txn;
	size_t n;
	struct tally all, weekday[7], category[NCATEGORIES];
	struct tally *day, *month, *product;
	int64_t discount, discounted_tx, trading_days;
	int64_t first, last, best, worst; /* calendar indexes, -1: no sales */
	uint32_t *basket;                 /* units per sale, sorted */
	int64_t *ticket;                  /* revenue per sale, sorted */
};

static void tally_add(struct tally *t, int64_t revenue, int64_t units, int64_t tx)
{
	t->revenue += revenue;
	t->units += units;
	t->tx += tx;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void stats_free(struct stats *st)
{
	free(st->day);
	free(st->month);
	free(st->product);
	free(st->basket);
	free(st->ticket);
}

/* Pass over the store's sales: per day, per product, per sale. */
static void stats_scan(const struct sales *s, struct stats *st)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct txn *t = &st->txn[i];
		const struct product *p = &s->product[t->product];
		int64_t revenue = (int64_t)t->qty * t->price;

		tally_add(&st->day[t->day], revenue, t->qty, 1);
		tally_add(&st->product[t->product], revenue, t->qty, 1);
		if (p->category != NO_CATEGORY)
			tally_add(&st->category[p->category], revenue, t->qty, 1);
		if (t->price < p->list_price) {
			st->discount += (int64_t)(p->list_price - t->price) * t->qty;
			st->discounted_tx++;
		}
		st->basket[i] = t->qty;
		st->ticket[i] = revenue;
	}
}

/* Fold the days into months, weekdays and the store total; find the
 * trading period and the best and worst days (ties: the earlier day). */
static void stats_days(const struct sales *s, struct stats *st)
{
	st->first = st->last = st->best = st->worst = -1;
	for (size_t d = 0; d < s->ndays; d++) {
		const struct tally *t = &st->day[d];
		tally_add(&st->month[s->day[d].month], t->revenue, t->units, t->tx);
		tally_add(&st->weekday[s->day[d].weekday], t->revenue, t->units, t->tx);
		tally_add(&st->all, t->revenue, t->units, t->tx);
		if (t->tx == 0)
			continue;
		st->trading_days++;
		if (st->first < 0)
			st->first = (int64_t)d;
		st->last = (int64_t)d;
		if (st->best < 0 || t->revenue > st->day[st->best].revenue)
			st->best = (int64_t)d;
		if (st->worst < 0 || t->revenue < st->day[st->worst].revenue)
			st->worst = (int64_t)d;
	}
}

static int stats_compute(const struct sales *s, size_t k, struct stats *st)
{
	memset(st, 0, sizeof *st);
	st->txn = s->txn + s->store_off[k];
	st->n = s->store_off[k + 1] - s->store_off[k];
	st->day = calloc(s->ndays, sizeof *st->day);
	st->month = calloc(s->nmonths, sizeof *st->month);
	st->product = calloc(s->nproducts, sizeof *st->product);
	st->basket = malloc((st->n ? st->n : 1) * sizeof *st->basket);
	st->ticket = malloc((st->n ? st->n : 1) * sizeof *st->ticket);
	if (!st->day || !st->month || !st->product || !st->basket || !st->ticket)
		return -1;
	stats_scan(s, st);
	stats_days(s, st);
	qsort(st->basket, st->n, sizeof *st->basket, cmp_u32);
	qsort(st->ticket, st->n, sizeof *st->ticket, cmp_i64);
	return 0;
}

/* Nearest-rank percentile p of n sorted values (n > 0). */
static size_t rank_of(size_t n, unsigned p)
{
	return (n * p + 99) / 100 - 1;
}

static void report_header(FILE *f, const struct sales *s, uint32_t id)
{
	char line[96];
	int len = snprintf(line, sizeof line,
			   "NIGHTLY SALES REPORT - STORE %04" PRIu32, id);

	fprintf(f, "%s\n%.*s\n", line, len, "==============================="
		"==============================================================");
	fprintf(f, "Period covered:  %s to %s (%zu day%s)\n", s->day[0].date,
		s->day[s->ndays - 1].date, s->ndays, plural((int64_t)s->ndays));
	if (s->cfg.input)
		fprintf(f, "Source:          %s\n\n", s->cfg.input);
	else
		fprintf(f, "Source:          generated data, seed %lld\n\n", s->cfg.seed);
}

static void report_summary(FILE *f, const struct sales *s, const struct stats *st)
{
	char a[NUMBUF], b[NUMBUF];
	const struct tally *t = &st->all;

	fprintf(f, "Summary\n");
	fprintf(f, "  %-31s %16s\n", "Transactions", fmt_count(a, t->tx));
	fprintf(f, "  %-31s %16s\n", "Units sold", fmt_count(a, t->units));
	fprintf(f, "  %-31s %16s\n", "Revenue", fmt_money(a, t->revenue));
	fprintf(f, "  %-31s %16s\n", "Average transaction", fmt_avg_money(a, t->revenue, t->tx));
	fprintf(f, "  %-31s %16s\n", "Average units per transaction", fmt_ratio(a, t->units, t->tx));
	fprintf(f, "  %-31s %16s\n", "Average revenue per trading day",
		fmt_avg_money(a, t->revenue, st->trading_days));
	fprintf(f, "  %-31s %16s (%s of transactions)\n", "Sold below list price",
		fmt_count(a, st->discounted_tx), fmt_share(b, st->discounted_tx, t->tx));
	fprintf(f, "  %-31s %16s\n", "Discount given", fmt_money(a, st->discount));
	snprintf(a, sizeof a, "%" PRId64 " of %zu", st->trading_days, s->ndays);
	fprintf(f, "  %-31s %16s", "Trading days", a);
	if (st->first >= 0)
		fprintf(f, " (first sale %s, last sale %s)", s->day[st->first].date,
			s->day[st->last].date);
	fprintf(f, "\n\n");
}

static void report_months(FILE *f, const struct sales *s, const struct stats *st)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	const struct tally *all = &st->all;

	fprintf(f, "Revenue and units by month\n");
	fprintf(f, "  %-8s %14s %12s %18s %8s\n", "Month", "Transactions",
		"Units", "Revenue", "Share");
	for (size_t m = 0; m < s->nmonths; m++) {
		const struct tally *t = &st->month[m];
		fprintf(f, "  %-8s %14s %12s %18s %8s\n", s->month[m], fmt_count(a, t->tx),
			fmt_count(b, t->units), fmt_money(c, t->revenue),
			fmt_share(d, t->revenue, all->revenue));
	}
	fprintf(f, "  %-8s %14s %12s %18s %8s\n\n", "Total", fmt_count(a, all->tx),
		fmt_count(b, all->units), fmt_money(c, all->revenue),
		fmt_share(d, all->revenue, all->revenue));
}

/* The store's best sellers: revenue descending, then catalogue order
 * (product id).  top[] has room for TOP_PRODUCTS; returns how many. */
static size_t top_products(const struct sales *s, const struct stats *st,
			   uint32_t *top)
{
	size_t n = 0;

	for (uint32_t p = 0; p < s->nproducts; p++) {
		int64_t rev = st->product[p].revenue;
		size_t i;
		if (st->product[p].tx == 0)
			continue;
		i = n < TOP_PRODUCTS ? n++ : TOP_PRODUCTS;
		/* Insertion from the end; equal revenue keeps the lower index
		 * first because p only grows. */
		while (i > 0 && st->product[top[i - 1]].revenue < rev) {
			if (i < TOP_PRODUCTS)
				top[i] = top[i - 1];
			i--;
		}
		if (i < TOP_PRODUCTS)
			top[i] = p;
	}
	return n;
}

static void report_products(FILE *f, const struct sales *s, const struct stats *st)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF], label[160];
	uint32_t top[TOP_PRODUCTS];
	size_t n = top_products(s, st, top);

	fprintf(f, "Top %d products by revenue\n", TOP_PRODUCTS);
	fprintf(f, "  %4s %10s %16s %10s %10s  %s\n", "Rank", "Units", "Revenue",
		"Avg price", "List", "Product");
	for (size_t i = 0; i < n; i++) {
		const struct tally *t = &st->product[top[i]];
		const struct product *p = &s->product[top[i]];
		fprintf(f, "  %4zu %10s %16s %10s %10s  %s", i + 1, fmt_count(a, t->units),
			fmt_money(b, t->revenue), fmt_avg_money(c, t->revenue, t->units),
			fmt_money(d, p->list_price), product_label(s, top[i], label, sizeof label));
		if (p->category != NO_CATEGORY)
			fprintf(f, " (%s)", categories[p->category].name);
		fprintf(f, "\n");
	}
	if (n == 0)
		fprintf(f, "  (no sales)\n");
	fprintf(f, "\n");
}

static void report_percentiles(FILE *f, const struct stats *st)
{
	static const unsigned pct[] = { 50, 90, 99, 100 };
	char a[NUMBUF];

	fprintf(f, "Per transaction         %14s %14s %14s %14s\n", "p50", "p90", "p99", "max");
	fprintf(f, "  %-21s", "Units (basket size)");
	for (size_t i = 0; i < 4; i++)
		fprintf(f, " %14s", st->n ? fmt_count(a, st->basket[rank_of(st->n, pct[i])]) : "-");
	fprintf(f, "\n  %-21s", "Revenue");
	for (size_t i = 0; i < 4; i++)
		fprintf(f, " %14s", st->n ? fmt_money(a, st->ticket[rank_of(st->n, pct[i])]) : "-");
	fprintf(f, "\n\n");
}

static void report_day(FILE *f, const struct sales *s, const struct stats *st,
		       const char *what, int64_t d)
{
	char a[NUMBUF], b[NUMBUF];

	if (d < 0) {
		fprintf(f, "%-10s -\n", what);
		return;
	}
	fprintf(f, "%-10s %s %s %14s in %s transaction%s\n", what, s->day[d].date,
		weekday_name[s->day[d].weekday], fmt_money(a, st->day[d].revenue),
		fmt_count(b, st->day[d].tx), plural(st->day[d].tx));
}

static void report_weekdays(FILE *f, const struct sales *s, const struct stats *st)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF], e[NUMBUF];
	int64_t days[7] = { 0 };

	for (size_t i = 0; i < s->ndays; i++)
		days[s->day[i].weekday]++;
	fprintf(f, "\nWeekday profile\n");
	fprintf(f, "  %-7s %5s %14s %12s %18s %14s %7s\n", "Weekday", "Days",
		"Transactions", "Units", "Revenue", "Avg per day", "Share");
	for (int w = 0; w < 7; w++) {
		const struct tally *t = &st->weekday[w];
		fprintf(f, "  %-7s %5" PRId64 " %14s %12s %18s %14s %7s\n", weekday_name[w],
			days[w], fmt_count(a, t->tx), fmt_count(b, t->units),
			fmt_money(c, t->revenue), fmt_avg_money(d, t->revenue, days[w]),
			fmt_share(e, t->revenue, st->all.revenue));
	}
}

static void report_categories(FILE *f, const struct sales *s, const struct stats *st)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];

	if (!s->has_categories)
		return;
	fprintf(f, "\nCategory mix\n");
	fprintf(f, "  %-14s %14s %12s %18s %7s\n", "Category", "Transactions",
		"Units", "Revenue", "Share");
	for (size_t i = 0; i < NCATEGORIES; i++) {
		const struct tally *t = &st->category[i];
		fprintf(f, "  %-14s %14s %12s %18s %7s\n", categories[i].name,
			fmt_count(a, t->tx), fmt_count(b, t->units),
			fmt_money(c, t->revenue), fmt_share(d, t->revenue, st->all.revenue));
	}
}

static void report_write(FILE *f, const struct sales *s, size_t k,
			 const struct stats *st)
{
	report_header(f, s, s->store_id[k]);
	report_summary(f, s, st);
	report_months(f, s, st);
	report_products(f, s, st);
	report_percentiles(f, st);
	report_day(f, s, st, "Best day:", st->best);
	report_day(f, s, st, "Worst day:", st->worst);
	report_weekdays(f, s, st);
	report_categories(f, s, st);
}

/* Worker: store k's report, then its totals as the result record.  Its
 * scratch memory is its own and freed here; the state is only read. */
int sales_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct sales *s = state;
	struct stats st;
	struct sales_result r;
	FILE *f;
	int rc = -1;

	if (stats_compute(s, k, &st) != 0) {
		cowrun_task_error(task, "out of memory");
		goto out;
	}
	f = cowrun_report(task);
	if (f == NULL)
		goto out;
	report_write(f, s, k, &st);
	if (ferror(f)) {
		cowrun_task_error(task, "cannot write the report");
		goto out;
	}
	r = (struct sales_result){ s->store_id[k], st.all.revenue, st.all.units,
		st.all.tx, st.discount, st.trading_days, st.best,
		st.best >= 0 ? st.day[st.best].revenue : 0 };
	if (cowrun_emit(task, &r, sizeof r) != 0) {
		cowrun_task_error(task, "out of memory");
		goto out;
	}
	rc = 0;
out:
	stats_free(&st);
	return rc;
}

/* ==== parent side: merge() and the company summary ==== */
