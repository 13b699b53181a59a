/*
 * printer.c - the original story: nightly reports sent to a slow line
 * printer, one printer per worker.
 *
 * Setup (parent, once) generates a year of branch sales for --regions
 * regions, groups them by region and computes the company totals every
 * report compares against.  Each task is one region: the worker computes
 * the region's statement (branches, months against the company, largest
 * sales), lays it out in pages of --page-lines lines and prints them on its
 * own simulated line printer, which prints --lpm lines a minute: each line
 * reaches the paper (the report file, region-NN.txt) at the end of its
 * print cycle, on a fixed grid of absolute deadlines
 * (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)), so sleep overshoot
 * never accumulates and the printer is never faster than rated.  The paper
 * is continuous green-bar stock: every line carries the form's line number
 * and the band it falls on, pages end with a form feed.
 *
 * --lpm 0 takes the printer out of the worker: the statement is written at
 * once, the same bytes, for a real printer program behind --report-to
 * (tools/lineprinter.c, one per worker slot) to print at its own speed.
 *
 * A task spends almost all its time waiting for the printer, so workers
 * beyond the number of cores still pay: -j 32 on 2 cores is 32 printers.
 * The parent merges each region's totals in order and prints the company
 * summary, checked against the control totals of setup.
 */
#define _GNU_SOURCE
#include "cowrun.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MONTHS          12
#define DAYS            366     /* the year 2024 */
#define TEXT_WIDTH      124     /* a 132-column printer less the margin */
#define HEADER_LINES    4       /* title, region, rule, blank */
#define FOOTER_LINES    2       /* blank, continued / end of report */
#define BAND            3       /* lines in a green or white band */
#define NUMBUF          40

/* ---- options ------------------------------------------------------------ */

struct printer_config {
	long long regions, branches, sales, largest, page_lines, seed;
	double lpm;
};

static const struct printer_config printer_defaults = {
	.regions = 64,
	.branches = 6,
	.sales = 200000,
	.largest = 40,
	.page_lines = 66,
	.seed = 1,
	.lpm = 24000,
};

static const struct cowrun_option printer_options[] = {
	{ "regions", COWRUN_OPT_INT, offsetof(struct printer_config, regions),
	  1, 9999, "N", "regions: one statement (one task) each" },
	{ "branches", COWRUN_OPT_INT, offsetof(struct printer_config, branches),
	  1, 100, "N", "branches in every region" },
	{ "sales", COWRUN_OPT_INT, offsetof(struct printer_config, sales),
	  1, 100000000, "N", "sales to generate across the company" },
	{ "largest", COWRUN_OPT_INT, offsetof(struct printer_config, largest),
	  0, 10000, "N", "largest sales listed in each statement" },
	{ "page-lines", COWRUN_OPT_INT, offsetof(struct printer_config, page_lines),
	  HEADER_LINES + FOOTER_LINES + 1, 1000, "N", "lines on a printed form (66: 11 inches at 6 lpi)" },
	{ "lpm", COWRUN_OPT_DOUBLE, offsetof(struct printer_config, lpm),
	  0, 60000000, "N", "printer speed, lines per minute (an IBM 1403 did 600-1100); "
	  "0: none, written at once" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct printer_config, seed),
	  0, 4294967295.0, "N", "seed of the generated sales" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- the shared state ----------------------------------------------------- */

struct sale {
	uint32_t customer;
	uint16_t day;            /* 0 = 2024-01-01 */
	uint16_t branch;
	int64_t cents;
};

/* Company-wide totals from setup: the control totals and what every
 * statement compares against. */
struct totals {
	int64_t revenue, count;
	int64_t month[MONTHS];
};

/* One region's statement totals: the result record.  8-byte fields only. */
struct printer_result {
	int64_t region, count, revenue, pages, lines;
};

struct printer_acc {
	struct printer_result *result;
	unsigned char *merged;
	size_t nmerged;
};

/* The shared state: sale, region_off and region_revenue in the setup arena
 * (read-only once setup returns), acc, which merge() writes, on the heap. */
struct printer {
	struct printer_config cfg;
	size_t nregions, nbranches;
	struct sale *sale;      /* grouped by region */
	size_t *region_off;     /* region k: sale[off[k] .. off[k + 1]) */
	int64_t *region_revenue;
	struct totals company;
	struct printer_acc *acc;
};

static const char *const region_names[] = {
	"NORTH-EAST", "NORTH-WEST", "SOUTH-EAST", "SOUTH-WEST", "MIDLANDS",
	"COAST", "VALLEY", "HIGHLANDS", "LAKES", "PLAINS", "CAPITAL", "HARBOUR",
};
#define NREGION_NAMES (sizeof region_names / sizeof region_names[0])

static const char *const month_names[MONTHS] = {
	"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
};

static const uint16_t month_start[MONTHS + 1] = {
	0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366,
};

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t month_of(unsigned day)
{
	size_t m = 0;

	while (day >= month_start[m + 1])
		m++;
	return m;
}

/* "2024-03-05" for a day of 2024, into buf (11 bytes). */
static void format_date(char *buf, unsigned day)
{
	size_t m = month_of(day);

	snprintf(buf, 11, "2024-%02u-%02u", (unsigned)m + 1, (day - month_start[m] + 1) % 100);
}

/* "-1,234,567.89" from cents, into buf (NUMBUF bytes). */
static const char *fmt_money(char *buf, int64_t cents)
{
	char tmp[NUMBUF];
	uint64_t u = cents < 0 ? -(uint64_t)cents : (uint64_t)cents;
	int n = 0;

	tmp[n++] = (char)('0' + u % 10);
	tmp[n++] = (char)('0' + u / 10 % 10);
	tmp[n++] = '.';
	u /= 100;
	for (int digits = 0; digits == 0 || u > 0; digits++, u /= 10) {
		if (digits > 0 && digits % 3 == 0)
			tmp[n++] = ',';
		tmp[n++] = (char)('0' + u % 10);
	}
	if (cents < 0)
		tmp[n++] = '-';
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

/* part / whole as a percentage with 2 decimals, from integers. */
static const char *fmt_share(char *buf, int64_t part, int64_t whole)
{
	int64_t bp;

	if (whole <= 0) {
		snprintf(buf, NUMBUF, "-");
		return buf;
	}
	bp = (int64_t)(((__int128)part * 20000 + whole) / (2 * whole));
	snprintf(buf, NUMBUF, "%" PRId64 ".%02" PRId64 "%%", bp / 100, bp % 100);
	return buf;
}

/* ---- setup: generate and group the sales ----------------------------------- */

static void generate(struct printer *p, struct sale *raw, uint32_t *region)
{
	uint64_t x = (uint64_t)p->cfg.seed;

	for (size_t i = 0; i < (size_t)p->cfg.sales; i++) {
		uint64_t r = splitmix(&x), amount = splitmix(&x);
		/* Larger regions are busier: region k takes weight k % 5 + 1. */
		uint32_t k = (uint32_t)(r % p->nregions);
		if ((r >> 32) % 5 > k % 5)
			k = (uint32_t)((r >> 40) % p->nregions);
		region[i] = k;
		raw[i].customer = (uint32_t)((r >> 20) % 90000) + 10000;
		raw[i].day = (uint16_t)((r >> 8) % DAYS);
		raw[i].branch = (uint16_t)((r >> 48) % p->nbranches);
		/* Mostly small tickets, a few large orders. */
		raw[i].cents = (int64_t)(amount % 20000) + 199 +
			       ((amount >> 40) % 50 == 0 ? (int64_t)((amount >> 16) % 5000000) : 0);
	}
}

/* Counting sort by region, and the company's control totals. */
static void group(struct printer *p, const struct sale *raw, const uint32_t *region)
{
	size_t n = (size_t)p->cfg.sales;

	for (size_t i = 0; i < n; i++)
		p->region_off[region[i] + 1]++;
	for (size_t k = 0; k < p->nregions; k++)
		p->region_off[k + 1] += p->region_off[k];
	for (size_t i = 0, *next = p->region_off; i < n; i++)
		p->sale[next[region[i]]++] = raw[i];
	for (size_t k = p->nregions; k > 0; k--)
		p->region_off[k] = p->region_off[k - 1];
	p->region_off[0] = 0;
	for (size_t i = 0; i < n; i++) {
		p->company.revenue += raw[i].cents;
		p->company.count++;
		p->company.month[month_of(raw[i].day)] += raw[i].cents;
		p->region_revenue[region[i]] += raw[i].cents;
	}
}

/* The sales and their indexes live in the setup arena (the runner frees
 * it); the accumulator on the heap (none in a plan's state). */
static void printer_teardown(void *state)
{
	struct printer *p = state;

	if (p == NULL)
		return;
	if (p->acc) {
		free(p->acc->result);
		free(p->acc->merged);
		free(p->acc);
	}
	free(p);
}

static int printer_build(struct printer *p)
{
	size_t n = (size_t)p->cfg.sales;
	struct sale *raw = malloc(n * sizeof *raw);
	uint32_t *region = malloc(n * sizeof *region);
	int rc = -1;

	p->sale = cowrun_alloc(n * sizeof *p->sale);
	p->region_off = cowrun_alloc((p->nregions + 1) * sizeof *p->region_off);
	p->region_revenue = cowrun_alloc(p->nregions * sizeof *p->region_revenue);
	p->acc = calloc(1, sizeof *p->acc);
	if (!raw || !region || !p->sale || !p->region_off || !p->region_revenue || !p->acc ||
	    !(p->acc->result = calloc(p->nregions, sizeof *p->acc->result)) ||
	    !(p->acc->merged = calloc(p->nregions, 1))) {
		cowrun_error("out of memory for %zu sales", n);
		goto out;
	}
	generate(p, raw, region);
	group(p, raw, region);
	rc = 0;
out:
	free(raw);
	free(region);
	return rc;
}

/* A state holding the parsed options and nothing built: what setup and
 * plan share, so that a dry run refuses what the run refuses, in the same
 * words.  NULL after one line. */
static struct printer *new_state(int argc, char **argv)
{
	struct printer *p = calloc(1, sizeof *p);

	if (p == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	p->cfg = printer_defaults;
	if (cowrun_parse_options(argc, argv, printer_options, &p->cfg) != 0) {
		free(p);
		return NULL;
	}
	p->nregions = (size_t)p->cfg.regions;
	p->nbranches = (size_t)p->cfg.branches;
	return p;
}

static void *printer_setup(int argc, char **argv)
{
	struct printer *p = new_state(argc, argv);

	if (p != NULL && printer_build(p) != 0) {
		printer_teardown(p);
		return NULL;
	}
	return p;
}

/* --dry-run: one statement per region of --regions; no sale generated. */
static void *printer_plan(int argc, char **argv)
{
	return new_state(argc, argv);
}

static size_t printer_ntasks(const void *state)
{
	return ((const struct printer *)state)->nregions;
}

static void printer_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "region-%02zu.txt", k);
}

/* ==== worker side: the region's statement, and its printer ==== */

/* ---- the line printer ------------------------------------------------------------ */

/*
 * A line printer on continuous green-bar forms.  Its mechanism runs in
 * fixed print cycles of 60 / lpm seconds from the moment it is switched
 * on: a line handed over during a cycle is on the paper at the end of that
 * cycle, and the printer takes one line per cycle.  Deadlines are absolute
 * points on that grid, so a late wake-up delays one line, not every line
 * after it, and an idle printer does not catch up by printing faster.
 * With --lpm 0 there is no mechanism (cycle_ns 0): lines go straight into
 * the report's buffer, which the runner flushes when the task ends.
 */
struct line_printer {
	FILE *paper;
	struct timespec on;     /* switched on: cycle 0 starts */
	int64_t cycle_ns;
	int64_t next;           /* first cycle end the next line may take */
	long form_line;         /* 1-based line on the current form */
	long lines, pages;
	int failed;             /* errno of a failed write or flush, else 0 */
};

static int64_t ns_since(const struct timespec *t0, const struct timespec *t)
{
	return (int64_t)(t->tv_sec - t0->tv_sec) * 1000000000 + (t->tv_nsec - t0->tv_nsec);
}

static void lp_on(struct line_printer *lp, FILE *paper, double lpm)
{
	memset(lp, 0, sizeof *lp);
	lp->paper = paper;
	lp->cycle_ns = lpm > 0 ? (int64_t)(60e9 / lpm + 0.5) : 0;
	if (lpm > 0 && lp->cycle_ns < 1)
		lp->cycle_ns = 1;
	lp->next = 1;
	lp->form_line = 1;
	clock_gettime(CLOCK_MONOTONIC, &lp->on);
}

/* Sleep until the end of the print cycle this line gets. */
static void lp_wait_cycle(struct line_printer *lp)
{
	struct timespec now, due;
	int64_t end, at;

	if (lp->cycle_ns == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	end = ns_since(&lp->on, &now) / lp->cycle_ns + 1;
	if (end < lp->next)
		end = lp->next;
	lp->next = end + 1;
	at = end * lp->cycle_ns + lp->on.tv_nsec;
	due.tv_sec = lp->on.tv_sec + (time_t)(at / 1000000000);
	due.tv_nsec = (long)(at % 1000000000);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR)
		;
}

/* Put `text` on paper: the form's line number, the band (green "||" or
 * white), the text.  The line reaches the file when it is printed. */
static void lp_print(struct line_printer *lp, const char *text)
{
	int green = (lp->form_line - 1) / BAND % 2 == 0;

	lp_wait_cycle(lp);
	if (fprintf(lp->paper, "%02ld%s%s%s\n", lp->form_line, green ? " ||" : *text ? "   " : "",
		    *text ? " " : "", text) < 0 || (lp->cycle_ns && fflush(lp->paper) != 0))
		lp->failed = errno ? errno : EIO;
	lp->form_line++;
	lp->lines++;
}

/* Slew to the top of the next form: one cycle, and a form feed on paper. */
static void lp_form_feed(struct line_printer *lp)
{
	lp_wait_cycle(lp);
	if (fputc('\f', lp->paper) == EOF || (lp->cycle_ns && fflush(lp->paper) != 0))
		lp->failed = errno ? errno : EIO;
	lp->form_line = 1;
	lp->pages++;
}

/* ---- the statement's text, before it is paginated --------------------------------- */

struct body {
	char (*line)[TEXT_WIDTH + 1];
	size_t n, cap;
	int oom;
};

static void body_add(struct body *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void body_add(struct body *b, const char *fmt, ...)
{
	va_list ap;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 128;
		void *bigger = realloc(b->line, cap * sizeof *b->line);
		if (bigger == NULL) {
			b->oom = 1;
			return;
		}
		b->line = bigger;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->line[b->n++], sizeof b->line[0], fmt, ap);
	va_end(ap);
}

/* What a worker computes for its region from the shared sales. */
struct region_stats {
	const struct sale *sale;
	size_t n;
	int64_t revenue;
	int64_t month[MONTHS], month_count[MONTHS];
	int64_t *branch, *branch_count;  /* per branch */
	size_t *largest, nlargest;       /* indexes into sale, largest first */
};

static void stats_free(struct region_stats *st)
{
	free(st->branch);
	free(st->branch_count);
	free(st->largest);
}

/* Keep sale i among the largest (ties: earlier sale first). */
static void keep_largest(struct region_stats *st, size_t i, size_t want)
{
	size_t j = st->nlargest < want ? st->nlargest++ : want;

	while (j > 0 && st->sale[st->largest[j - 1]].cents < st->sale[i].cents) {
		if (j < want)
			st->largest[j] = st->largest[j - 1];
		j--;
	}
	if (j < want)
		st->largest[j] = i;
}

static int stats_compute(const struct printer *p, size_t k, struct region_stats *st)
{
	size_t want = (size_t)p->cfg.largest;

	memset(st, 0, sizeof *st);
	st->sale = p->sale + p->region_off[k];
	st->n = p->region_off[k + 1] - p->region_off[k];
	st->branch = calloc(p->nbranches, sizeof *st->branch);
	st->branch_count = calloc(p->nbranches, sizeof *st->branch_count);
	st->largest = malloc((want ? want : 1) * sizeof *st->largest);
	if (!st->branch || !st->branch_count || !st->largest)
		return -1;
	for (size_t i = 0; i < st->n; i++) {
		const struct sale *s = &st->sale[i];
		size_t m = month_of(s->day);
		st->revenue += s->cents;
		st->month[m] += s->cents;
		st->month_count[m]++;
		st->branch[s->branch] += s->cents;
		st->branch_count[s->branch]++;
		if (want > 0)
			keep_largest(st, i, want);
	}
	return 0;
}

/* The region's rank by revenue among all regions (1 = largest). */
static size_t region_rank(const struct printer *p, size_t k)
{
	size_t rank = 1;

	for (size_t j = 0; j < p->nregions; j++)
		if (p->region_revenue[j] > p->region_revenue[k] ||
		    (j < k && p->region_revenue[j] == p->region_revenue[k]))
			rank++;
	return rank;
}

static void body_summary(struct body *b, const struct printer *p, size_t k,
			 const struct region_stats *st)
{
	char a[NUMBUF], c[NUMBUF];

	body_add(b, "REGION SUMMARY");
	body_add(b, "  %-32s %20zu", "SALES", st->n);
	body_add(b, "  %-32s %20s", "REVENUE", fmt_money(a, st->revenue));
	body_add(b, "  %-32s %20s", "AVERAGE SALE",
		 fmt_money(a, st->n ? (st->revenue + (int64_t)st->n / 2) / (int64_t)st->n : 0));
	body_add(b, "  %-32s %20s", "SHARE OF COMPANY REVENUE",
		 fmt_share(c, st->revenue, p->company.revenue));
	body_add(b, "  %-32s %14zu OF %3zu", "RANK BY REVENUE", region_rank(p, k), p->nregions);
	body_add(b, "%s", "");
}

static void body_branches(struct body *b, const struct printer *p, const struct region_stats *st)
{
	char a[NUMBUF], c[NUMBUF], d[NUMBUF];

	body_add(b, "REVENUE BY BRANCH");
	body_add(b, "  %-10s %12s %20s %16s %10s", "BRANCH", "SALES", "REVENUE", "AVERAGE", "SHARE");
	for (size_t i = 0; i < p->nbranches; i++) {
		int64_t n = st->branch_count[i];
		body_add(b, "  %-10zu %12" PRId64 " %20s %16s %10s", i + 1, n,
			 fmt_money(a, st->branch[i]), fmt_money(c, n ? (st->branch[i] + n / 2) / n : 0),
			 fmt_share(d, st->branch[i], st->revenue));
	}
	body_add(b, "  %-10s %12zu %20s", "TOTAL", st->n, fmt_money(a, st->revenue));
	body_add(b, "%s", "");
}

/* Each month's revenue, its share of the region's year against the
 * company's share for that month (100 = the company's pattern). */
static void body_months(struct body *b, const struct printer *p, const struct region_stats *st)
{
	char a[NUMBUF], c[NUMBUF], bar[41];

	body_add(b, "REVENUE BY MONTH");
	body_add(b, "  %-5s %12s %20s %10s %7s  %s", "MONTH", "SALES", "REVENUE", "SHARE",
		 "INDEX", "REVENUE (* = 1/40 OF THE BEST MONTH)");
	int64_t best = 1;
	for (size_t m = 0; m < MONTHS; m++)
		best = st->month[m] > best ? st->month[m] : best;
	for (size_t m = 0; m < MONTHS; m++) {
		__int128 num = (__int128)st->month[m] * p->company.revenue * 100;
		__int128 den = (__int128)p->company.month[m] * (st->revenue ? st->revenue : 1);
		int64_t index = den > 0 ? (int64_t)((num + den / 2) / den) : 0;
		size_t stars = (size_t)(st->month[m] * 40 / best);
		memset(bar, '*', stars);
		bar[stars] = '\0';
		body_add(b, "  %-5s %12" PRId64 " %20s %10s %7" PRId64 "  %s", month_names[m],
			 st->month_count[m], fmt_money(a, st->month[m]),
			 fmt_share(c, st->month[m], st->revenue), index, bar);
	}
	body_add(b, "%s", "");
}

static void body_largest(struct body *b, const struct region_stats *st)
{
	char a[NUMBUF], date[11];

	if (st->nlargest == 0)
		return;
	body_add(b, "LARGEST SALES");
	body_add(b, "  %4s  %-10s %8s %10s %20s", "RANK", "DATE", "BRANCH", "CUSTOMER", "AMOUNT");
	for (size_t j = 0; j < st->nlargest; j++) {
		const struct sale *s = &st->sale[st->largest[j]];
		format_date(date, s->day);
		body_add(b, "  %4zu  %-10s %8u %10" PRIu32 " %20s", j + 1, date,
			 (unsigned)s->branch + 1, s->customer, fmt_money(a, s->cents));
	}
}

/* ---- pages ------------------------------------------------------------------------- */

static void print_page_header(struct line_printer *lp, size_t k, long page, long pages)
{
	char line[2 * TEXT_WIDTH], rule[TEXT_WIDTH + 1];

	snprintf(line, sizeof line, "%-40s%-60s PAGE %4ld OF %4ld", "ACME TRADING CO.",
		 "REGIONAL SALES STATEMENT", page, pages);
	lp_print(lp, line);
	snprintf(line, sizeof line, "REGION %02zu - %-76.76s PERIOD 2024-01-01 TO 2024-12-31", k,
		 region_names[k % NREGION_NAMES]);
	lp_print(lp, line);
	memset(rule, '-', TEXT_WIDTH);
	rule[TEXT_WIDTH] = '\0';
	lp_print(lp, rule);
	lp_print(lp, "");
}

/* Print the body in pages: each with its header, a full page of body
 * lines (the last one as many as are left), a footer and a form feed. */
static void print_pages(struct line_printer *lp, const struct printer *p, size_t k,
			const struct body *b)
{
	size_t per_page = (size_t)p->cfg.page_lines - HEADER_LINES - FOOTER_LINES;
	long pages = (long)((b->n + per_page - 1) / per_page);
	char footer[TEXT_WIDTH + 1];

	if (pages == 0)
		pages = 1;
	for (long page = 1; page <= pages && !lp->failed; page++) {
		size_t first = (size_t)(page - 1) * per_page;
		print_page_header(lp, k, page, pages);
		for (size_t i = first; i < b->n && i < first + per_page; i++)
			lp_print(lp, b->line[i]);
		lp_print(lp, "");
		if (page < pages)
			snprintf(footer, sizeof footer, "%*s CONTINUED ON PAGE %ld", 80, "", page + 1);
		else
			snprintf(footer, sizeof footer, "%*s *** END OF STATEMENT ***", 80, "");
		lp_print(lp, footer);
		lp_form_feed(lp);
	}
}

/* The statement's text, from the region's figures.  0, or -1 if memory ran out. */
static int compose(const struct printer *p, size_t k, const struct region_stats *st,
		   struct body *b)
{
	body_summary(b, p, k, st);
	body_branches(b, p, st);
	body_months(b, p, st);
	body_largest(b, st);
	return b->oom ? -1 : 0;
}

/* Worker: region k's statement, printed; its totals as the record. */
static int printer_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct printer *p = state;
	struct region_stats st;
	struct body b = { 0 };
	struct line_printer lp;
	struct printer_result r;
	FILE *paper;
	int rc = -1;

	if (stats_compute(p, k, &st) != 0 || compose(p, k, &st, &b) != 0) {
		cowrun_task_error(task, "out of memory");
		goto out;
	}
	if ((paper = cowrun_report(task)) == NULL)
		goto out;
	lp_on(&lp, paper, p->cfg.lpm);
	print_pages(&lp, p, k, &b);
	if (lp.failed) {
		char why[128];
		cowrun_task_error(task, "cannot print on the report file: %s",
				  strerror_r(lp.failed, why, sizeof why));
		goto out;
	}
	r = (struct printer_result){ (int64_t)k, (int64_t)st.n, st.revenue, lp.pages, lp.lines };
	rc = cowrun_emit(task, &r, sizeof r);
out:
	stats_free(&st);
	free(b.line);
	return rc;
}

/* ==== parent side ==== */

static int printer_merge(void *state, size_t k, const void *record, size_t len)
{
	struct printer *p = state;
	struct printer_result r;

	if (k >= p->nregions || len != sizeof r) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu", k, len, sizeof r);
		return -1;
	}
	memcpy(&r, record, sizeof r);
	/* Each task merges once (cowrun.h): the runner sees to it. */
	if (r.region != (int64_t)k || r.count < 0 || r.pages < 1 || r.lines < 1) {
		cowrun_error("task %zu (region %02zu): malformed result record", k, k);
		return -1;
	}
	p->acc->result[k] = r;
	p->acc->merged[k] = 1;
	p->acc->nmerged++;
	return 0;
}

/* "1 h 02 min 03 s" of printing for `lines` at lpm. */
static void fmt_duration(char *buf, size_t size, int64_t lines, double lpm)
{
	int64_t s = (int64_t)((double)lines * 60.0 / lpm + 0.5);

	snprintf(buf, size, "%" PRId64 " h %02" PRId64 " min %02" PRId64 " s",
		 s / 3600, s / 60 % 60, s % 60);
}

static void finish_totals(const struct printer *p, struct printer_result *sum)
{
	memset(sum, 0, sizeof *sum);
	for (size_t k = 0; k < p->nregions; k++) {
		if (!p->acc->merged[k])
			continue;
		sum->count += p->acc->result[k].count;
		sum->revenue += p->acc->result[k].revenue;
		sum->pages += p->acc->result[k].pages;
		sum->lines += p->acc->result[k].lines;
	}
}

/* Parent: the company summary; with every region in, the statements must
 * add up to setup's control totals. */
static int printer_finish(void *state, FILE *out)
{
	struct printer *p = state;
	struct printer_result sum;
	int all = p->acc->nmerged == p->nregions;
	char a[NUMBUF], d[64];

	finish_totals(p, &sum);
	if (p->cfg.lpm > 0)
		fmt_duration(d, sizeof d, sum.lines + sum.pages, p->cfg.lpm);
	fprintf(out, "Regional statements\n");
	fprintf(out, "  %-28s %zu of %zu\n", "Statements printed", p->acc->nmerged, p->nregions);
	fprintf(out, "  %-28s %" PRId64 " (%" PRId64 " lines, %" PRId64 " form feeds)\n",
		"Pages", sum.pages, sum.lines, sum.pages);
	if (p->cfg.lpm > 0)
		fprintf(out, "  %-28s %s at %.0f lines a minute, on one printer\n", "Printing time",
			d, p->cfg.lpm);
	else
		fprintf(out, "  %-28s none in the workers (--lpm 0: written at once)\n",
			"Printing time");
	fprintf(out, "  %-28s %" PRId64 "\n", "Sales", sum.count);
	fprintf(out, "  %-28s %s\n", "Revenue", fmt_money(a, sum.revenue));
	if (all && (sum.revenue != p->company.revenue || sum.count != p->company.count)) {
		cowrun_error("the statements do not add up to the control totals of %s in %" PRId64
			     " sales", fmt_money(a, p->company.revenue), p->company.count);
		return -1;
	}
	if (all)
		fprintf(out, "  %-28s agree with the sales ledger\n", "Control totals");
	if (ferror(out)) {
		cowrun_error("cannot write the summary");
		return -1;
	}
	return 0;
}

const struct cowrun_workload cowrun_workload_printer = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "printer",
	.summary = "regional statements printed on slow line printers: I/O-bound, -j above the cores pays",
	.description =
		"Setup generates a year of sales (--sales) for --regions regions of\n"
		"--branches branches and the company totals.  Each task is one region: its\n"
		"statement (summary, branches, months against the company, --largest sales)\n"
		"is laid out in pages of --page-lines lines and printed on a simulated line\n"
		"printer of --lpm lines a minute, one printer per worker: every line reaches\n"
		"region-NN.txt when the printer has printed it (form line numbers, green-bar\n"
		"bands marked '||', a form feed per page).  Tasks mostly wait on their\n"
		"printer, so -j well above the number of cores speeds the batch up.  The\n"
		"summary checks the statements against setup's control totals.\n"
		"--lpm 0 leaves the printer out of the worker: each statement is written at\n"
		"once, the same bytes, for a real printer behind --report-to, one per worker\n"
		"slot: --report-to 'cowrun-lineprinter --spool DIR --printer {%} --job {/}'.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = printer_options,
	.defaults = &printer_defaults,
	.setup = printer_setup,
	.ntasks = printer_ntasks,
	.task_name = printer_task_name,
	.run = printer_run,
	.merge = printer_merge,
	.finish = printer_finish,
	.teardown = printer_teardown,
	.plan = printer_plan,
};
