/*
 * legacy.c - report code written the old way: why a legacy nightly job is
 * forked, not threaded.
 *
 * Setup (parent, once) generates each branch's ledger as text lines
 * "EPOCH;ACCOUNT;TYPE;AMOUNT;MEMO", and the control totals the generator
 * knows.  Each task is one branch: it posts every ledger line the way the
 * old code did, and writes branch-NN.txt.  That code is correct in one
 * process, and it is what decades-old report code looks like:
 *
 *   - one static record buffer, cut up in place by strtok() (whose own
 *     position is static too);
 *   - localtime(), whose struct tm is static, read a while after the call;
 *   - money() and month_label() return static buffers;
 *   - the branch being reported is a global accumulator, reset when a
 *     report starts.
 *
 * In a forked worker (or serially) every report has those to itself: the
 * answers are right and identical.  In threads (--mode omp --force) the
 * reports share them: lines are cut from another thread's record, months
 * come from another thread's timestamp, and one report's reset wipes
 * another's totals.  The summary checks every branch against the control
 * totals, so the damage is reported, not just printed.  The flag
 * COWRUN_NOT_THREAD_SAFE makes --mode omp refuse this workload without
 * --force.
 */
#define _GNU_SOURCE
#include "cowrun.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MONTHS          12
#define YEAR_START      1704067200LL    /* 2024-01-01 00:00:00 UTC */
#define YEAR_SECONDS    (366LL * 86400) /* 2024 is a leap year */
#define LINE_MAX_LEN    96              /* longest generated ledger line */

/* ---- options ------------------------------------------------------------ */

struct legacy_config {
	long long branches, entries, seed;
};

static const struct legacy_config legacy_defaults = { 16, 50000, 1 };

static const struct cowrun_option legacy_options[] = {
	{ "branches", COWRUN_OPT_INT, offsetof(struct legacy_config, branches),
	  1, 9999, "N", "branches: one ledger report (one task) each" },
	{ "entries", COWRUN_OPT_INT, offsetof(struct legacy_config, entries),
	  1, 10000000, "N", "ledger lines per branch" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct legacy_config, seed),
	  0, 4294967295.0, "N", "seed of the generated ledgers" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- the shared state ----------------------------------------------------- */

/* A branch's totals, in cents: the result record (8-byte fields only),
 * and the control totals setup computes from what it generated. */
struct branch_total {
	int64_t branch, entries, rejected;
	int64_t deposits, withdrawals, fees, interest;
	int64_t month[MONTHS];          /* net */
};

struct legacy_acc {
	struct branch_total *result;
	unsigned char *merged;
	size_t nmerged;
};

/* The shared state: ledger, branch_off and control in the setup arena
 * (read-only once setup returns), acc, which merge() writes, on the heap. */
struct legacy {
	struct legacy_config cfg;
	size_t nbranches;
	char *ledger;                   /* every branch's lines, each ending in '\n' */
	size_t *branch_off;             /* branch k: ledger[off[k] .. off[k + 1]) */
	struct branch_total *control;
	struct legacy_acc *acc;
};

static const char *const types[] = { "DEP", "WDL", "FEE", "INT" };
static const char *const memos[] = {
	"PAYROLL", "RENT", "ATM", "TRANSFER", "CARD", "CHEQUE", "UTILITIES", "INSURANCE",
};

/* ---- setup: the ledgers and their control totals ----------------------------- */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const uint16_t month_start[MONTHS + 1] = {
	0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366,
};

/* The month of a 2024 timestamp, in UTC (setup sets TZ to UTC). */
static size_t month_of(long long t)
{
	long long day = (t - YEAR_START) / 86400;
	size_t m = 0;

	while (day >= month_start[m + 1])
		m++;
	return m;
}

/* Six digits whose last is a check digit: the digit sum mod 10. */
static unsigned account_number(uint64_t r)
{
	unsigned n = (unsigned)(r % 100000), sum = 0;

	for (unsigned v = n; v > 0; v /= 10)
		sum += v % 10;
	return n * 10 + sum % 10;
}

/* Ledger line i of a branch with n lines, into buf; its effect on *c. */
static int ledger_line(char *buf, uint64_t *x, long long i, long long n,
		       struct branch_total *c)
{
	uint64_t r = splitmix(x), a = splitmix(x);
	long long t = YEAR_START + i * YEAR_SECONDS / n + (long long)(r % (uint64_t)(YEAR_SECONDS / n + 1));
	unsigned type = r >> 40 & 0xff;
	int64_t cents;

	type = type < 115 ? 0 : type < 230 ? 1 : type < 248 ? 2 : 3;
	cents = type < 2 ? (int64_t)(a % 500000) + 100 : type == 2 ? (int64_t)(a % 4900) + 100
							   : (int64_t)(a % 20000) + 1;
	if (t >= YEAR_START + YEAR_SECONDS)
		t = YEAR_START + YEAR_SECONDS - 1;
	c->entries++;
	*(type == 0 ? &c->deposits : type == 1 ? &c->withdrawals : type == 2 ? &c->fees
									: &c->interest) += cents;
	c->month[month_of(t)] += type == 0 || type == 3 ? cents : -cents;
	return sprintf(buf, "%lld;AC%06u;%s;%" PRId64 ".%02" PRId64 ";%s\n", t,
		       account_number(a >> 20), types[type], cents / 100, cents % 100,
		       memos[(a >> 50) % (sizeof memos / sizeof memos[0])]);
}

/* The ledgers are written on the heap, where their exact size is learnt,
 * then copied to the setup arena. */
static int generate(struct legacy *l)
{
	size_t n = (size_t)l->cfg.entries, cap = l->nbranches * n * LINE_MAX_LEN, used = 0;
	uint64_t x = (uint64_t)l->cfg.seed;
	char *text = malloc(cap + 1);

	if (text == NULL) {
		cowrun_error("out of memory for %zu ledger lines", l->nbranches * n);
		return -1;
	}
	for (size_t k = 0; k < l->nbranches; k++) {
		l->branch_off[k] = used;
		l->control[k].branch = (int64_t)k;
		for (size_t i = 0; i < n; i++)
			used += (size_t)ledger_line(text + used, &x, (long long)i,
						    l->cfg.entries, &l->control[k]);
	}
	l->branch_off[l->nbranches] = used;
	l->ledger = cowrun_memdup(text, used);
	free(text);
	if (l->ledger == NULL) {
		cowrun_error("out of memory for %zu bytes of ledger", used);
		return -1;
	}
	return 0;
}

/* The ledgers and control totals live in the setup arena (the runner frees
 * it); the accumulator on the heap (none in a plan's state). */
static void legacy_teardown(void *state)
{
	struct legacy *l = state;

	if (l == NULL)
		return;
	if (l->acc) {
		free(l->acc->result);
		free(l->acc->merged);
		free(l->acc);
	}
	free(l);
}

/* A state holding the parsed options and nothing built: what setup and
 * plan share, so that a dry run refuses what the run refuses, in the same
 * words.  NULL after one line. */
static struct legacy *new_state(int argc, char **argv)
{
	struct legacy *l = calloc(1, sizeof *l);

	if (l == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	l->cfg = legacy_defaults;
	if (cowrun_parse_options(argc, argv, legacy_options, &l->cfg) != 0) {
		free(l);
		return NULL;
	}
	l->nbranches = (size_t)l->cfg.branches;
	return l;
}

static void *legacy_setup(int argc, char **argv)
{
	struct legacy *l = new_state(argc, argv);

	if (l == NULL)
		return NULL;
	/* The reports print local months: pin the zone so they are the same
	 * on every machine.  A POSIX rule, so no zoneinfo file is needed. */
	setenv("TZ", "UTC0", 1);
	tzset();
	l->branch_off = cowrun_alloc((l->nbranches + 1) * sizeof *l->branch_off);
	l->control = cowrun_alloc(l->nbranches * sizeof *l->control);
	l->acc = calloc(1, sizeof *l->acc);
	if (!l->branch_off || !l->control || !l->acc ||
	    !(l->acc->result = calloc(l->nbranches, sizeof *l->acc->result)) ||
	    !(l->acc->merged = calloc(l->nbranches, 1))) {
		cowrun_error("out of memory for %zu branches", l->nbranches);
		goto fail;
	}
	if (generate(l) != 0)
		goto fail;
	return l;
fail:
	legacy_teardown(l);
	return NULL;
}

/* --dry-run: one report per branch of --branches; no ledger generated. */
static void *legacy_plan(int argc, char **argv)
{
	return new_state(argc, argv);
}

static size_t legacy_ntasks(const void *state)
{
	return ((const struct legacy *)state)->nbranches;
}

static void legacy_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "branch-%02zu.txt", k);
}

/* ==== worker side: the old code, on purpose ==== */

/*
 * Everything from here to legacy_run() is deliberately written the old
 * way and is NOT thread-safe: see the comment at the top of the file.
 */
static char record[512];                /* the line being posted; strtok cuts it */
static struct branch_total total;       /* the branch being reported */
static long long first_seen[MONTHS];    /* a timestamp of each month, for its label */

/* Money for printing, in a static buffer (one call per printf, then). */
static char *money(long long cents)
{
	static char buf[32];

	sprintf(buf, "%s%lld.%02lld", cents < 0 ? "-" : "", llabs(cents) / 100, llabs(cents) % 100);
	return buf;
}

/* "2024-03": the local month of a timestamp, in a static buffer. */
static char *month_label(long long when)
{
	static char buf[16];
	time_t t = (time_t)when;
	struct tm *tm = localtime(&t);

	if (tm == NULL || strftime(buf, sizeof buf, "%Y-%m", tm) == 0)
		strcpy(buf, "?");
	return buf;
}

/* The account's check digit, the way the old code checked it. */
static int account_ok(const char *acct)
{
	unsigned sum = 0;
	size_t len = strlen(acct);

	if (len != 8 || strncmp(acct, "AC", 2) != 0)
		return 0;
	for (size_t i = 2; i < 7; i++)
		sum += (unsigned)(acct[i] - '0');
	return acct[7] - '0' == (int)(sum % 10);
}

/* "1234.56" into cents. */
static long long parse_cents(const char *s)
{
	const char *dot = strchr(s, '.');
	long long cents = atoll(s) * 100;

	if (dot != NULL && dot[1] >= '0' && dot[1] <= '9' && dot[2] >= '0' && dot[2] <= '9')
		cents += (dot[1] - '0') * 10 + (dot[2] - '0');
	return cents;
}

/* Add the amount to the global total, by type and by local month. */
static void post_amount(const char *type, long long cents, int month)
{
	if (strcmp(type, "DEP") == 0)
		total.deposits += cents;
	else if (strcmp(type, "WDL") == 0)
		total.withdrawals += cents;
	else if (strcmp(type, "FEE") == 0)
		total.fees += cents;
	else if (strcmp(type, "INT") == 0)
		total.interest += cents;
	else {
		total.rejected++;
		return;
	}
	total.month[month] += type[0] == 'D' || type[0] == 'I' ? cents : -cents;
	total.entries++;
}

/* Post one ledger line (len bytes, no newline) into the global total. */
static void post(const char *line, size_t len)
{
	char *when, *acct, *type, *amount;
	struct tm *tm;
	time_t t;

	if (len >= sizeof record)
		len = sizeof record - 1;
	memcpy(record, line, len);
	record[len] = '\0';
	when = strtok(record, ";");
	acct = strtok(NULL, ";");
	type = strtok(NULL, ";");
	amount = strtok(NULL, ";");
	if (when == NULL || acct == NULL || type == NULL || amount == NULL) {
		total.rejected++;
		return;
	}
	t = (time_t)atoll(when);
	tm = localtime(&t);
	if (tm == NULL || !account_ok(acct)) {
		total.rejected++;
		return;
	}
	if (first_seen[tm->tm_mon] == 0)
		first_seen[tm->tm_mon] = t;
	post_amount(type, parse_cents(amount), tm->tm_mon);
}

static void write_report(FILE *f, size_t k)
{
	long long net = total.deposits + total.interest - total.withdrawals - total.fees;

	fprintf(f, "BRANCH %02zu LEDGER REPORT\n", k);
	fprintf(f, "========================\n\n");
	fprintf(f, "MONTH            NET\n");
	for (int m = 0; m < MONTHS; m++) {
		if (first_seen[m] == 0)
			continue;
		fprintf(f, "%-8s", month_label(first_seen[m]));
		fprintf(f, " %14s\n", money(total.month[m]));
	}
	fprintf(f, "\nDEPOSITS     %14s\n", money(total.deposits));
	fprintf(f, "WITHDRAWALS  %14s\n", money(total.withdrawals));
	fprintf(f, "FEES         %14s\n", money(total.fees));
	fprintf(f, "INTEREST     %14s\n", money(total.interest));
	fprintf(f, "NET          %14s\n\n", money(net));
	fprintf(f, "ENTRIES POSTED %" PRId64 ", REJECTED %" PRId64 "\n", total.entries,
		total.rejected);
}

/* Worker: branch k's report.  Correct in one process per report. */
static int legacy_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct legacy *l = state;
	const char *p = l->ledger + l->branch_off[k], *end = l->ledger + l->branch_off[k + 1];
	FILE *f = cowrun_report(task);

	if (f == NULL)
		return -1;
	memset(&total, 0, sizeof total);
	memset(first_seen, 0, sizeof first_seen);
	total.branch = (int64_t)k;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		post(p, len);
		p += len + 1;
	}
	write_report(f, k);
	if (ferror(f)) {
		cowrun_task_error(task, "cannot write the report");
		return -1;
	}
	return cowrun_emit(task, &total, sizeof total);
}

/* ==== parent side ==== */

/* Parent, in task order.  Only the size is checked: a wrong total is for
 * finish() to find against the control totals and say so. */
static int legacy_merge(void *state, size_t k, const void *record_bytes, size_t len)
{
	struct legacy *l = state;

	/* Each task merges once (cowrun.h): the runner sees to it. */
	if (k >= l->nbranches || len != sizeof(struct branch_total)) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu", k, len,
			     sizeof(struct branch_total));
		return -1;
	}
	memcpy(&l->acc->result[k], record_bytes, len);
	l->acc->merged[k] = 1;
	l->acc->nmerged++;
	return 0;
}

static int64_t net_of(const struct branch_total *t)
{
	return t->deposits + t->interest - t->withdrawals - t->fees;
}

static void format_cents(char *buf, size_t size, int64_t cents)
{
	int64_t u = cents < 0 ? -cents : cents;

	snprintf(buf, size, "%s%" PRId64 ".%02" PRId64, cents < 0 ? "-" : "", u / 100, u % 100);
}

/* One branch's line of the summary; 1 if it disagrees with its control. */
static int finish_branch(FILE *out, const struct legacy *l, size_t k, struct branch_total *sum)
{
	const struct branch_total *r = &l->acc->result[k], *c = &l->control[k];
	int bad = memcmp(r, c, sizeof *r) != 0;
	char a[32];

	format_cents(a, sizeof a, net_of(r));
	fprintf(out, "  %6zu %10" PRId64 " %9" PRId64 " %16s  %s\n", k, r->entries, r->rejected,
		a, bad ? "WRONG" : "ok");
	sum->entries += r->entries;
	sum->rejected += r->rejected;
	sum->deposits += r->deposits;
	sum->withdrawals += r->withdrawals;
	sum->fees += r->fees;
	sum->interest += r->interest;
	return bad;
}

static int legacy_finish(void *state, FILE *out)
{
	struct legacy *l = state;
	struct branch_total sum = { 0 };
	size_t wrong = 0, at = 0;
	char a[32], which[128] = "";

	fprintf(out, "Branch ledgers\n  %6s %10s %9s %16s  %s\n", "Branch", "Entries",
		"Rejected", "Net", "Control");
	for (size_t k = 0; k < l->nbranches; k++)
		if (l->acc->merged[k] && finish_branch(out, l, k, &sum)) {
			/* Named in the error: a failed finish() prints no summary. */
			if (at + 8 < sizeof which)
				at += (size_t)snprintf(which + at, sizeof which - at, "%s%zu",
						       wrong ? ", " : "", k);
			wrong++;
		}
	format_cents(a, sizeof a, net_of(&sum));
	fprintf(out, "  %6s %10" PRId64 " %9" PRId64 " %16s\n", "Total", sum.entries,
		sum.rejected, a);
	fprintf(out, "Branches reported: %zu of %zu; control totals: %s\n", l->acc->nmerged,
		l->nbranches, wrong ? "DISAGREE" : "agree");
	if (ferror(out)) {
		cowrun_error("cannot write the summary");
		return -1;
	}
	if (wrong) {
		cowrun_error("%zu of %zu branch reports disagree with the ledger's control totals"
			     " (branches %s%s)", wrong, l->acc->nmerged, which,
			     at + 8 < sizeof which ? "" : ", ...");
		return -1;
	}
	return 0;
}

const struct cowrun_workload cowrun_workload_legacy = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "legacy",
	.summary = "old-style ledger reports (static buffers, strtok, localtime): fork yes, threads no",
	.description =
		"Setup generates --branches ledgers of --entries lines\n"
		"'EPOCH;ACCOUNT;TYPE;AMOUNT;MEMO' and their control totals.  Each task posts\n"
		"one branch's ledger with code written the old way (a static record buffer\n"
		"cut by strtok, localtime, static result buffers, a global accumulator) and\n"
		"writes branch-NN.txt.  Right in fork and serial mode; not thread-safe, so\n"
		"--mode omp refuses it.  With --mode omp --force the threads trample each\n"
		"other's statics: the branches that disagree with the control totals are\n"
		"named, no summary is printed, and cowrun exits 254.",
	.flags = COWRUN_NOT_THREAD_SAFE | COWRUN_WRITES_REPORTS,
	.options = legacy_options,
	.defaults = &legacy_defaults,
	.setup = legacy_setup,
	.ntasks = legacy_ntasks,
	.task_name = legacy_task_name,
	.run = legacy_run,
	.merge = legacy_merge,
	.finish = legacy_finish,
	.teardown = legacy_teardown,
	.plan = legacy_plan,
};
