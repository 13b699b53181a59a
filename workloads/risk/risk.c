/*
 * risk.c - the nightly portfolio risk workload: heavy math on shared data.
 *
 * Setup (parent, once) reads daily asset returns from a CSV or generates
 * them from a factor model, estimates the mean and the covariance matrix
 * (BLAS dsyrk), shrinks it towards its diagonal and factors it with LAPACK
 * (LAPACKE_dpotrf): Sigma = L L'.  The portfolios come from a holdings CSV or
 * are generated.  Each task is one portfolio: a Monte Carlo of one-day P&L
 * through the shared factor (scenario returns L z, BLAS dgemm), its 95% and
 * 99% value-at-risk and 97.5% and 99% expected shortfall, and the positions
 * that contribute most to the 99% shortfall; the worker writes
 * portfolio-NNNN.txt and emits the figures.  The parent merges them in task
 * order and prints the book: the sum of standalone risks against the
 * diversified book VaR, and the book's largest risk contributors.
 *
 * risk is a bundled workload: built as risk.so (the Makefile's
 * BUNDLED_WORKLOADS), so only a run of risk loads LAPACK and OpenBLAS, not
 * every cowrun.  BLAS runs on one thread: see pin_blas_threads().  Every random number of task k comes from a stream
 * seeded from (--seed, k), and every sum runs in a fixed order, so the
 * output is byte-identical in every mode and at every -j.
 */
#define _GNU_SOURCE
#include "cowrun.h"

#include <cblas.h>
#include <lapacke.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ASSETS      10000   /* the factor alone is 800 MB there */
#define NAME_MAX_LEN    31      /* bytes in an asset or portfolio name */
#define NFACTORS        8       /* market + sectors of the generator */
#define BLOCK           128     /* scenarios simulated per dgemm */
#define TOP_REPORT      10      /* contributors listed in a report */
#define TOP_RECORD      5       /* contributors carried to the parent */
#define TOP_BOOK        10
#define Z99             2.3263478740408408 /* standard normal 99% quantile */
#define NUMBUF          40

/* ---- options ------------------------------------------------------------ */

struct risk_config {
	const char *input;      /* returns CSV, or NULL to generate */
	const char *holdings;   /* holdings CSV, or NULL to generate */
	long long assets, days, portfolios, positions, scenarios, seed;
	double shrinkage;
};

static const struct risk_config risk_defaults = {
	.input = NULL,
	.holdings = NULL,
	.assets = 2000,
	.days = 5040,
	.portfolios = 64,
	.positions = 100,
	.scenarios = 4000,
	.seed = 1,
	.shrinkage = 0.05,
};

static const struct cowrun_option risk_options[] = {
	{ "input", COWRUN_OPT_STRING, offsetof(struct risk_config, input),
	  0, 0, "FILE", "read daily returns from this CSV instead of generating them" },
	{ "holdings", COWRUN_OPT_STRING, offsetof(struct risk_config, holdings),
	  0, 0, "FILE", "read the portfolios from this CSV instead of generating them" },
	{ "assets", COWRUN_OPT_INT, offsetof(struct risk_config, assets),
	  2, MAX_ASSETS, "N", "assets to generate" },
	{ "days", COWRUN_OPT_INT, offsetof(struct risk_config, days),
	  2, 100000, "N", "days of returns to generate" },
	{ "portfolios", COWRUN_OPT_INT, offsetof(struct risk_config, portfolios),
	  1, 100000, "N", "portfolios to generate (one task each)" },
	{ "positions", COWRUN_OPT_INT, offsetof(struct risk_config, positions),
	  1, MAX_ASSETS, "N", "average positions in a generated portfolio" },
	{ "scenarios", COWRUN_OPT_INT, offsetof(struct risk_config, scenarios),
	  100, 10000000, "N", "Monte Carlo scenarios per portfolio" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct risk_config, seed),
	  0, 4294967295.0, "N", "seed of the generated data and of the simulation" },
	{ "shrinkage", COWRUN_OPT_DOUBLE, offsetof(struct risk_config, shrinkage),
	  0, 1, "X", "weight of the diagonal in the shrunk covariance" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- the shared state ----------------------------------------------------- */

struct position {
	size_t asset;
	double value;           /* market value; negative: short */
};

struct portfolio {
	char name[NAME_MAX_LEN + 1];
	size_t first, count;    /* its positions: pos[first .. first + count) */
};

/* One portfolio's figures: the result record.  Only 8-byte fields, so the
 * layout has no padding; native byte order. */
struct risk_result {
	int64_t portfolio, positions;
	double gross, net, pmean, pvol, mean, sd, var95, var99, es975, es99;
	int64_t top_asset[TOP_RECORD];  /* -1 past the last position */
	double top_es[TOP_RECORD];      /* contribution to ES 99% */
};
_Static_assert(sizeof(struct risk_result) == 8 * (12 + 2 * TOP_RECORD), "record layout");

/* What merge() collects: its own allocation, written only by the parent. */
struct risk_acc {
	struct risk_result *result;
	unsigned char *merged;
	size_t nmerged;
};

/* The shared state.  asset, mu, vol, chol, pf and pos are in the setup
 * arena (read-only once setup returns); by_name and acc on the heap. */
struct risk {
	struct risk_config cfg;
	size_t n, ndays;
	char (*asset)[NAME_MAX_LEN + 1];
	size_t *by_name;        /* asset indexes sorted by name: setup only */
	char first_date[NAME_MAX_LEN + 1], last_date[NAME_MAX_LEN + 1];
	double *mu;             /* mean daily return per asset */
	double *vol;            /* daily volatility per asset (shrinkage keeps it) */
	double *chol;           /* n x n column-major: lower L, strict upper zero */
	struct portfolio *pf;
	size_t npf;
	struct position *pos;
	size_t npos;
	struct risk_acc *acc;   /* written by merge(): never in the arena */
};

/* ---- random numbers: xoshiro256**, seeded with splitmix64 ------------------- */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Stream `stream` of seed `seed`: the generator uses stream 0, task k the
 * stream k + 1, so a task's numbers never depend on which worker runs it. */
static void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* n standard normals into z (Marsaglia's polar method, both values used). */
static void rng_normals(struct rng *r, double *z, size_t n)
{
	size_t i = 0;

	while (i < n) {
		double u = 2.0 * rng_uniform(r) - 1.0, v = 2.0 * rng_uniform(r) - 1.0;
		double q = u * u + v * v;
		if (q >= 1.0 || q == 0.0)
			continue;
		double f = sqrt(-2.0 * log(q) / q);
		z[i++] = u * f;
		if (i < n)
			z[i++] = v * f;
	}
}

/* ---- small helpers ---------------------------------------------------------- */

/* Memory for doubles, 64-byte aligned so every run hands BLAS the same
 * alignment (its kernels then take the same path).  Freed with free(). */
static double *doubles(size_t n)
{
	size_t bytes = (n ? n : 1) * sizeof(double);

	if (n > SIZE_MAX / sizeof(double) / 2)
		return NULL;
	return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* "-1,234,567" from v rounded to a whole unit, into buf (NUMBUF bytes). */
static const char *fmt_amount(char *buf, double v)
{
	char tmp[NUMBUF];
	long long r = llround(v);
	unsigned long long u = r < 0 ? -(unsigned long long)r : (unsigned long long)r;
	int n = 0, digits = 0;

	if (!isfinite(v) || fabs(v) > 9e18)
		return strcpy(buf, "-");
	do {
		if (digits > 0 && digits % 3 == 0)
			tmp[n++] = ',';
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
		digits++;
	} while (u > 0);
	if (r < 0)
		tmp[n++] = '-';
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

/* "12.34%" of part in whole, into buf. */
static const char *fmt_pct(char *buf, double part, double whole)
{
	if (whole == 0.0)
		return strcpy(buf, "-");
	snprintf(buf, NUMBUF, "%.2f%%", 100.0 * part / whole);
	return buf;
}

/* Nearest-rank index of percentile p (0 < p < 100) among n sorted values. */
static size_t rank_of(size_t n, double p)
{
	size_t r = (size_t)ceil((double)n * p / 100.0);

	return r > 0 ? r - 1 : 0;
}

/* Scenarios in the tail beyond confidence level `level` (0.99): ceil. */
static size_t tail_count(size_t n, double level)
{
	size_t t = (size_t)ceil((double)n * (1.0 - level) - 1e-9);

	return t > 0 ? t : 1;
}

/* ---- asset names ------------------------------------------------------------ */

static int name_ok(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && len <= NAME_MAX_LEN && strchr(s, '"') == NULL;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct risk *r = ctx;

	return strcmp(r->asset[*(const size_t *)a], r->asset[*(const size_t *)b]);
}

/* The index of asset `name`, or -1. */
static long find_asset(const struct risk *r, const char *name)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->asset[r->by_name[mid]], name);
		if (c == 0)
			return (long)r->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Sort the name index; two assets of one name are an error. */
static int index_names(struct risk *r)
{
	r->by_name = malloc(r->n * sizeof *r->by_name);
	if (r->by_name == NULL) {
		cowrun_error("out of memory for %zu asset names", r->n);
		return -1;
	}
	for (size_t i = 0; i < r->n; i++)
		r->by_name[i] = i;
	qsort_r(r->by_name, r->n, sizeof *r->by_name, cmp_name, r);
	for (size_t i = 1; i < r->n; i++) {
		if (strcmp(r->asset[r->by_name[i - 1]], r->asset[r->by_name[i]]) == 0) {
			cowrun_error("%s:1: asset '%s' has two columns", r->cfg.input,
				     r->asset[r->by_name[i]]);
			return -1;
		}
	}
	return 0;
}

/* ---- reading CSVs ------------------------------------------------------------ */

struct csv {
	FILE *f;
	const char *path;
	char *buf;
	size_t cap, line;
};

static int csv_open(struct csv *c, const char *path)
{
	memset(c, 0, sizeof *c);
	c->path = path;
	c->f = fopen(path, "re");
	if (c->f == NULL) {
		cowrun_error("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void csv_close(struct csv *c)
{
	if (c->f)
		fclose(c->f);
	free(c->buf);
}

/* The next non-blank line into c->buf, without "\n" or "\r\n" (and
 * without a UTF-8 byte order mark on line 1).  Returns 1, 0 at end of
 * file, or -1 after a message. */
static int csv_next(struct csv *c)
{
	ssize_t len;

	do {
		len = getline(&c->buf, &c->cap, c->f);
		if (len < 0) {
			if (!ferror(c->f))
				return 0;
			cowrun_error("cannot read '%s': %s", c->path, strerror(errno));
			return -1;
		}
		if (strlen(c->buf) != (size_t)len) {
			cowrun_error("%s:%zu: NUL byte in line", c->path, c->line + 1);
			return -1;
		}
		if (c->line++ == 0 && strncmp(c->buf, "\xEF\xBB\xBF", 3) == 0)
			memmove(c->buf, c->buf + 3, (size_t)(len -= 3) + 1);
		while (len > 0 && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
			c->buf[--len] = '\0';
	} while (len == 0);
	return 1;
}

static int csv_bad(const struct csv *c, const char *what, const char *value,
		   const char *why)
{
	cowrun_error("%s:%zu: bad %s '%.40s' (%s)", c->path, c->line, what, value, why);
	return -1;
}

/* Room for `need` elements of `size` bytes in *p (capacity *cap), doubling.
 * Returns 0, or -1 with *p unchanged. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 4 / size)
			return -1;
		n *= 2;
	}
	q = realloc(*p, n * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* The returns matrix as it is read: one day after the other, n returns a
 * day, 64-byte aligned (see doubles()).  Grows by doubling. */
static int grow_days(double **d, size_t *cap, size_t days, size_t n)
{
	size_t more = *cap ? *cap * 2 : 256;
	double *bigger;

	if (days < *cap)
		return 0;
	if (more > SIZE_MAX / sizeof(double) / 2 / n || (bigger = doubles(more * n)) == NULL)
		return -1;
	if (*d)
		memcpy(bigger, *d, days * n * sizeof(double));
	free(*d);
	*d = bigger;
	*cap = more;
	return 0;
}

/* ---- the returns CSV ------------------------------------------------------------ */

/* Header "date,ASSET,ASSET...": sets n and the asset names. */
static int returns_header(struct risk *r, struct csv *c)
{
	int got = csv_next(c);
	char *cur = c->buf, *field;

	if (got <= 0) {
		if (got == 0)
			cowrun_error("%s: empty file (expected a header 'date,ASSET,...')", c->path);
		return -1;
	}
	field = strsep(&cur, ",");
	if (strcmp(field, "date") != 0 || cur == NULL)
		return csv_bad(c, "header", c->buf, "expected 'date,ASSET,...': one column per asset");
	r->n = 1;
	for (const char *s = cur; (s = strchr(s, ',')) != NULL; s++)
		r->n++;
	if (r->n > MAX_ASSETS) {
		cowrun_error("%s:1: %zu assets: at most %d", c->path, r->n, MAX_ASSETS);
		return -1;
	}
	if ((r->asset = cowrun_alloc(r->n * sizeof *r->asset)) == NULL) {
		cowrun_error("%s:1: out of memory", c->path);
		return -1;
	}
	for (size_t a = 0; a < r->n; a++) {
		field = strsep(&cur, ",");
		if (!name_ok(field))
			return csv_bad(c, "asset name", field, "1 to 31 characters, no quotes");
		strcpy(r->asset[a], field);
	}
	return 0;
}

/* A daily return: a decimal fraction above -1 (a loss of everything) and
 * at most 100 (+10,000%). */
static int parse_return(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v <= -1.0 || v > 100.0)
		return -1;
	*out = v;
	return 0;
}

/* One row "DATE,RETURN,..." into row[0 .. n). */
static int returns_row(struct risk *r, struct csv *c, double *row)
{
	char *cur = c->buf, *date = strsep(&cur, ",");

	if (!name_ok(date))
		return csv_bad(c, "date", date, "1 to 31 characters, no quotes");
	for (size_t a = 0; a < r->n; a++) {
		char *field = strsep(&cur, ",");
		if (field == NULL) {
			cowrun_error("%s:%zu: %zu returns, expected %zu (one per asset)",
				     c->path, c->line, a, r->n);
			return -1;
		}
		if (parse_return(field, &row[a]) != 0) {
			cowrun_error("%s:%zu: bad return '%.40s' for %s (a decimal fraction above -1, e.g. -0.0123)",
				     c->path, c->line, field, r->asset[a]);
			return -1;
		}
	}
	if (cur != NULL) {
		cowrun_error("%s:%zu: more than %zu returns (one per asset)", c->path, c->line, r->n);
		return -1;
	}
	if (r->ndays == 0)
		strcpy(r->first_date, date);
	strcpy(r->last_date, date);
	return 0;
}

/* Read --input into *data: day t's returns at (*data)[t * n ...]. */
static int load_returns(struct risk *r, double **data)
{
	struct csv c;
	double *d = NULL;
	size_t cap = 0;
	int got, rc = -1;

	if (csv_open(&c, r->cfg.input) != 0)
		return -1;
	if (returns_header(r, &c) != 0)
		goto out;
	while ((got = csv_next(&c)) > 0) {
		if (grow_days(&d, &cap, r->ndays, r->n) != 0) {
			cowrun_error("%s:%zu: out of memory", c.path, c.line);
			goto out;
		}
		if (returns_row(r, &c, d + r->ndays * r->n) != 0)
			goto out;
		r->ndays++;
	}
	if (got == 0 && r->ndays < 2)
		cowrun_error("%s: %zu day%s of returns: a covariance needs at least 2",
			     c.path, r->ndays, r->ndays == 1 ? "" : "s");
	else if (got == 0)
		rc = 0;
out:
	csv_close(&c);
	if (rc == 0)
		*data = d;
	else
		free(d);
	return rc;
}

/* ---- generated returns: a factor model ------------------------------------------ */

struct gen_asset {
	double drift, beta_market, beta_sector, idio;
	size_t sector;
};

static void gen_asset_params(struct rng *g, struct gen_asset *a)
{
	a->sector = (size_t)(rng_next(g) % (NFACTORS - 1));
	a->beta_market = 0.5 + rng_uniform(g);          /* 0.5 .. 1.5 */
	a->beta_sector = 0.3 + 0.7 * rng_uniform(g);    /* 0.3 .. 1.0 */
	a->idio = 0.008 + 0.017 * rng_uniform(g);       /* 0.8% .. 2.5% a day */
	a->drift = 0.0004 * (rng_uniform(g) - 0.3);
}

/* One day: a market factor (1% a day), one sector factor per asset (0.6%)
 * and the asset's own shock. */
static void gen_day(struct rng *g, const struct gen_asset *ga, size_t n, double *out)
{
	double f[NFACTORS];

	rng_normals(g, f, NFACTORS);
	rng_normals(g, out, n);
	for (size_t a = 0; a < n; a++) {
		const struct gen_asset *p = &ga[a];
		out[a] = p->drift + p->beta_market * 0.010 * f[0] +
			 p->beta_sector * 0.006 * f[1 + p->sector] + p->idio * out[a];
	}
}

static int generate_returns(struct risk *r, double **data)
{
	struct gen_asset *ga;
	struct rng g;
	double *d;

	r->n = (size_t)r->cfg.assets;
	r->ndays = (size_t)r->cfg.days;
	r->asset = cowrun_alloc(r->n * sizeof *r->asset);
	ga = malloc(r->n * sizeof *ga);
	d = r->n * r->ndays / r->ndays == r->n ? doubles(r->n * r->ndays) : NULL;
	if (r->asset == NULL || ga == NULL || d == NULL) {
		cowrun_error("out of memory for %zu assets x %zu days", r->n, r->ndays);
		free(ga);
		free(d);
		return -1;
	}
	rng_seed(&g, (uint64_t)r->cfg.seed, 0);
	for (size_t a = 0; a < r->n; a++) {
		snprintf(r->asset[a], sizeof r->asset[a], "A%04zu", a + 1);
		gen_asset_params(&g, &ga[a]);
	}
	for (size_t t = 0; t < r->ndays; t++)
		gen_day(&g, ga, r->n, d + t * r->n);
	free(ga);
	*data = d;
	return 0;
}

/* ---- the risk model: covariance and its Cholesky factor ------------------------- */

/* mu = the mean return of each asset; then d holds deviations from it.
 * Fixed loop order: the same sums in every run. */
static void demean(double *d, size_t n, size_t days, double *mu)
{
	memset(mu, 0, n * sizeof *mu);
	for (size_t t = 0; t < days; t++)
		for (size_t a = 0; a < n; a++)
			mu[a] += d[t * n + a];
	for (size_t a = 0; a < n; a++)
		mu[a] /= (double)days;
	for (size_t t = 0; t < days; t++)
		for (size_t a = 0; a < n; a++)
			d[t * n + a] -= mu[a];
}

/* Every asset's returns must vary: a constant one has no variance, and its
 * demeaned sum is rounding noise, not zero.  Checked exactly, on the data. */
static int check_varies(const struct risk *r, const double *d)
{
	for (size_t a = 0; a < r->n; a++) {
		size_t t = 1;
		while (t < r->ndays && d[t * r->n + a] == d[a])
			t++;
		if (t == r->ndays) {
			cowrun_error("%s: asset %s has the same return every day: no risk model can use it",
				     r->cfg.input ? r->cfg.input : "generated data", r->asset[a]);
			return -1;
		}
	}
	return 0;
}

/* Shrink the covariance (lower triangle) towards its diagonal, keeping
 * the variances: with fewer days than assets the sample covariance is
 * singular, and a shrunk one is positive definite. */
static int shrink(struct risk *r)
{
	size_t n = r->n;
	double keep = 1.0 - r->cfg.shrinkage;

	for (size_t c = 0; c < n; c++) {
		double var = r->chol[c + c * n];
		if (!(var > 0.0)) {
			cowrun_error("asset %s: its returns never vary: no risk model can use it",
				     r->asset[c]);
			return -1;
		}
		r->vol[c] = sqrt(var);
		for (size_t row = c + 1; row < n; row++)
			r->chol[row + c * n] *= keep;
	}
	return 0;
}

/* Sigma = L L' with LAPACK; then zero the strict upper triangle, which
 * dpotrf leaves as it was, so L can go to dgemm as a full matrix. */
static int factor(struct risk *r)
{
	size_t n = r->n;
	lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, r->chol,
					 (lapack_int)n);

	if (info > 0) {
		cowrun_error("the covariance matrix is not positive definite (at asset %s, column %d): "
			     "give more days than assets, or a --shrinkage above 0",
			     r->asset[info - 1], (int)info);
		return -1;
	}
	if (info < 0) {
		cowrun_error("LAPACKE_dpotrf refused argument %d", (int)-info);
		return -1;
	}
	for (size_t c = 1; c < n; c++)
		memset(r->chol + c * n, 0, c * sizeof *r->chol);
	return 0;
}

/* From the returns d (consumed: left demeaned) to mu, vol and the factor. */
static int estimate(struct risk *r, double *d)
{
	size_t n = r->n;

	r->mu = cowrun_alloc_aligned(n * sizeof *r->mu, 64);
	r->vol = cowrun_alloc_aligned(n * sizeof *r->vol, 64);
	r->chol = cowrun_alloc_aligned(n * n * sizeof *r->chol, 64);
	if (r->mu == NULL || r->vol == NULL || r->chol == NULL) {
		cowrun_error("out of memory for the covariance of %zu assets", n);
		return -1;
	}
	if (check_varies(r, d) != 0)
		return -1;
	demean(d, n, r->ndays, r->mu);
	cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (blasint)n, (blasint)r->ndays,
		    1.0 / (double)(r->ndays - 1), d, (blasint)n, 0.0, r->chol, (blasint)n);
	if (shrink(r) != 0)
		return -1;
	return factor(r);
}

/* ---- portfolios ------------------------------------------------------------------- */

static const struct style {
	const char *name;
	double short_share;     /* of its positions */
} styles[] = {
	{ "Global Equity", 0.0 }, { "Long/Short", 0.35 }, { "Value", 0.0 },
	{ "Growth", 0.05 }, { "Market Neutral", 0.5 }, { "Income", 0.0 },
	{ "Small Cap", 0.1 }, { "Macro", 0.25 },
};
#define NSTYLES (sizeof styles / sizeof styles[0])

/* Positions of generated portfolio p: distinct assets drawn with a partial
 * Fisher-Yates shuffle of perm (kept a permutation between portfolios). */
static void gen_portfolio(struct risk *r, struct rng *g, size_t p, size_t *perm)
{
	const struct style *st = &styles[p % NSTYLES];
	struct portfolio *pf = &r->pf[p];

	snprintf(pf->name, sizeof pf->name, "%.16s %04u", st->name, (unsigned)p);
	for (size_t j = 0; j < pf->count; j++) {
		size_t pick = j + (size_t)(rng_next(g) % (r->n - j)), a = perm[pick];
		double value = 1000.0 * round(100.0 * exp(3.0 * rng_uniform(g)));
		perm[pick] = perm[j];
		perm[j] = a;
		r->pos[pf->first + j] = (struct position){ a,
			rng_uniform(g) < st->short_share ? -value : value };
	}
}

static int generate_portfolios(struct risk *r)
{
	size_t avg = (size_t)r->cfg.positions < r->n ? (size_t)r->cfg.positions : r->n;
	size_t *perm = malloc(r->n * sizeof *perm);
	struct rng g;

	r->npf = (size_t)r->cfg.portfolios;
	r->pf = cowrun_alloc(r->npf * sizeof *r->pf);
	rng_seed(&g, (uint64_t)r->cfg.seed, UINT64_C(1) << 63);
	for (size_t p = 0; r->pf && p < r->npf; p++) {
		size_t m = avg / 2 + (size_t)(rng_next(&g) % (avg + 1));
		r->pf[p].count = m < 1 ? 1 : m > r->n ? r->n : m;
		r->pf[p].first = r->npos;
		r->npos += r->pf[p].count;
	}
	r->pos = r->pf ? cowrun_alloc(r->npos * sizeof *r->pos) : NULL;
	if (perm == NULL || r->pos == NULL) {
		cowrun_error("out of memory for %zu portfolios", r->npf);
		free(perm);
		return -1;
	}
	for (size_t i = 0; i < r->n; i++)
		perm[i] = i;
	for (size_t p = 0; p < r->npf; p++)
		gen_portfolio(r, &g, p, perm);
	free(perm);
	return 0;
}

/* ---- the holdings CSV -------------------------------------------------------------- */

#define HOLDINGS_HEADER "portfolio,asset,value"

/* A holdings file being read: the portfolios and positions grow on the
 * heap (r->npf and r->npos count them) and go to the setup arena once
 * complete. */
struct holdings {
	struct csv c;
	struct portfolio *pf;
	struct position *pos;
	size_t pf_cap, pos_cap;
	size_t *stamp;          /* per asset: 1 + the last portfolio holding it */
};

/* Start portfolio `name` at this row; it must not have appeared before. */
static int holdings_new_portfolio(struct risk *r, struct holdings *h, const char *name)
{
	for (size_t p = 0; p < r->npf; p++)
		if (strcmp(h->pf[p].name, name) == 0)
			return csv_bad(&h->c, "portfolio", name,
				       "seen before: a portfolio's rows must be together");
	if (grow((void **)&h->pf, &h->pf_cap, r->npf + 1, sizeof *h->pf) != 0) {
		cowrun_error("%s:%zu: out of memory", h->c.path, h->c.line);
		return -1;
	}
	strcpy(h->pf[r->npf].name, name);
	h->pf[r->npf].first = r->npos;
	h->pf[r->npf].count = 0;
	r->npf++;
	return 0;
}

static int holdings_value(const struct csv *c, const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(*out) ||
	    *out == 0.0 || fabs(*out) > 1e15)
		return csv_bad(c, "value", s, "a non-zero amount, negative for a short position");
	return 0;
}

/* One row "PORTFOLIO,ASSET,VALUE". */
static int holdings_row(struct risk *r, struct holdings *h)
{
	char *cur = h->c.buf, *f[3];
	double value;
	long a;

	for (int i = 0; i < 3; i++)
		f[i] = strsep(&cur, ",");
	if (f[2] == NULL || cur != NULL) {
		cowrun_error("%s:%zu: expected 3 fields (%s)", h->c.path, h->c.line, HOLDINGS_HEADER);
		return -1;
	}
	if (!name_ok(f[0]))
		return csv_bad(&h->c, "portfolio", f[0], "1 to 31 characters, no quotes");
	if ((a = find_asset(r, f[1])) < 0)
		return csv_bad(&h->c, "asset", f[1], r->cfg.input ? "not a column of the returns"
							  : "not a generated asset name");
	if (holdings_value(&h->c, f[2], &value) != 0)
		return -1;
	if ((r->npf == 0 || strcmp(h->pf[r->npf - 1].name, f[0]) != 0) &&
	    holdings_new_portfolio(r, h, f[0]) != 0)
		return -1;
	if (h->stamp[a] == r->npf)
		return csv_bad(&h->c, "asset", f[1], "held twice by this portfolio");
	h->stamp[a] = r->npf;
	if (grow((void **)&h->pos, &h->pos_cap, r->npos + 1, sizeof *h->pos) != 0) {
		cowrun_error("%s:%zu: out of memory", h->c.path, h->c.line);
		return -1;
	}
	h->pos[r->npos++] = (struct position){ (size_t)a, value };
	h->pf[r->npf - 1].count++;
	return 0;
}

static int load_holdings(struct risk *r)
{
	struct holdings h = { .pf_cap = 0 };
	int got, rc = -1;

	if (csv_open(&h.c, r->cfg.holdings) != 0)
		return -1;
	if ((h.stamp = calloc(r->n, sizeof *h.stamp)) == NULL) {
		cowrun_error("out of memory");
		goto out;
	}
	if ((got = csv_next(&h.c)) <= 0 || strcmp(h.c.buf, HOLDINGS_HEADER) != 0) {
		if (got == 0)
			cowrun_error("%s: empty file (expected the header '%s')", h.c.path, HOLDINGS_HEADER);
		else if (got > 0)
			csv_bad(&h.c, "header", h.c.buf, "expected '" HOLDINGS_HEADER "'");
		goto out;
	}
	while ((got = csv_next(&h.c)) > 0)
		if (holdings_row(r, &h) != 0)
			goto out;
	if (got < 0)
		goto out;
	if (r->npf == 0)
		cowrun_error("%s: no positions", h.c.path);
	else if ((r->pf = cowrun_memdup(h.pf, r->npf * sizeof *h.pf)) == NULL ||
		 (r->pos = cowrun_memdup(h.pos, r->npos * sizeof *h.pos)) == NULL)
		cowrun_error("out of memory for %zu positions", r->npos);
	else
		rc = 0;
out:
	free(h.pf);
	free(h.pos);
	free(h.stamp);
	csv_close(&h.c);
	return rc;
}

/* ---- setup ------------------------------------------------------------------------ */

/*
 * BLAS on one thread, for the whole run, set before the first BLAS call.
 *
 * - Debian's OpenBLAS (libopenblas0-pthread) starts its thread pool when
 *   the library is loaded and reads OPENBLAS_NUM_THREADS only then: a
 *   setenv() here is too late.  cowrun sets it to 1 before it loads this
 *   object (unless the user set it), so no pool thread exists when the
 *   runner forks; openblas_set_num_threads(1) covers a user's other value.
 * - Threaded BLAS and fork(): the child has only the forking thread.
 *   OpenBLAS's atfork handler shuts the pool down before fork() and each
 *   worker starts a new pool at its first threaded call, so -j N workers
 *   would run N x CPUs BLAS threads on CPUs cores: oversubscribed, and
 *   OpenBLAS threads spin while they wait.  OpenMP mode is the same: N
 *   threads, each fanning out.  One task per core, each on one BLAS
 *   thread, keeps every core busy with no BLAS synchronisation at all.
 * - A product split across threads may sum in another order.  One thread
 *   everywhere, setup included, runs the same code path in every mode, so
 *   the digits are the same.
 *
 * Which kernels OpenBLAS runs is chosen when it loads, too: Debian's 0.3.21
 * does not know CPUs newer than itself (e.g. family 6 model 207) and falls
 * back to its Prescott (SSE3) kernels.  OPENBLAS_CORETYPE=Haswell or
 * SkylakeX, set before cowrun starts, selects AVX2 or AVX-512 ones (measured
 * here: tasks 1.4x faster).  Every mode and -j agree under either choice;
 * across choices the rounding may differ in the last bits (the printed
 * figures, in whole units, were the same here with all three kernels).
 */
static void pin_blas_threads(void)
{
	openblas_set_num_threads(1);
}

/* The asset names, risk model and portfolios live in the setup arena (the
 * runner frees it); the name index and the accumulator on the heap. */
static void risk_teardown(void *state)
{
	struct risk *r = state;

	if (r == NULL)
		return;
	if (r->acc) {
		free(r->acc->result);
		free(r->acc->merged);
		free(r->acc);
	}
	free(r->by_name);
	free(r);
}

/* Returns, risk model, then portfolios and the parent's accumulator. */
static int risk_build(struct risk *r)
{
	double *d = NULL;
	int rc = -1;

	if ((r->cfg.input ? load_returns(r, &d) : generate_returns(r, &d)) != 0)
		goto out;
	if (index_names(r) != 0 || estimate(r, d) != 0)
		goto out;
	free(d);
	d = NULL;
	if ((r->cfg.holdings ? load_holdings(r) : generate_portfolios(r)) != 0)
		goto out;
	r->acc = calloc(1, sizeof *r->acc);
	if (r->acc == NULL || (r->acc->result = calloc(r->npf, sizeof *r->acc->result)) == NULL ||
	    (r->acc->merged = calloc(r->npf, 1)) == NULL) {
		cowrun_error("out of memory for %zu results", r->npf);
		goto out;
	}
	rc = 0;
out:
	free(r->by_name); /* it served the holdings file only */
	r->by_name = NULL;
	free(d);
	return rc;
}

static void *risk_setup(int argc, char **argv)
{
	struct risk *r = calloc(1, sizeof *r);

	if (r == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	r->cfg = risk_defaults;
	if (cowrun_parse_options(argc, argv, risk_options, &r->cfg) != 0)
		goto fail;
	pin_blas_threads();
	if (risk_build(r) != 0)
		goto fail;
	return r;
fail:
	risk_teardown(r);
	return NULL;
}

static size_t risk_ntasks(const void *state)
{
	return ((const struct risk *)state)->npf;
}

static void risk_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "portfolio-%04zu.txt", k);
}

/* ==== worker side: one portfolio's Monte Carlo ==== */

/* One task's working memory: its own, freed by sim_free(). */
struct sim {
	size_t m, n, S;
	double *load;     /* m x n, column-major: value_i * L[asset_i, :] */
	double *drift;    /* m: value_i * mu[asset_i] */
	double *z;        /* n x BLOCK standard normals */
	double *x;        /* m x S: each position's P&L in each scenario */
	double *pnl;      /* S: the portfolio's P&L */
	size_t *order;    /* scenarios, worst P&L first */
	double *ces;      /* m: contribution to ES 99% */
	size_t *rank;     /* positions, largest contribution first */
	double *v;        /* n: load' 1, the portfolio's exposure to each shock */
};

struct measures {
	double gross, net, pmean, pvol, mean, sd, var95, var99, es975, es99;
	size_t longs, shorts;
};

static void sim_free(struct sim *s)
{
	free(s->load);
	free(s->drift);
	free(s->z);
	free(s->x);
	free(s->pnl);
	free(s->order);
	free(s->ces);
	free(s->rank);
	free(s->v);
}

static int sim_alloc(struct sim *s, size_t m, size_t n, size_t S)
{
	size_t mn, mS;

	memset(s, 0, sizeof *s);
	s->m = m;
	s->n = n;
	s->S = S;
	if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(m, S, &mS))
		return -1;
	s->load = doubles(mn);
	s->drift = doubles(m);
	s->z = doubles(n * BLOCK);
	s->x = doubles(mS);
	s->pnl = doubles(S);
	s->order = malloc(S * sizeof *s->order);
	s->ces = doubles(m);
	s->rank = malloc(m * sizeof *s->rank);
	s->v = doubles(n);
	return s->load && s->drift && s->z && s->x && s->pnl && s->order &&
	       s->ces && s->rank && s->v ? 0 : -1;
}

/* The rows of L this portfolio holds, each scaled by its position. */
static void sim_load(const struct risk *r, const struct portfolio *pf, struct sim *s)
{
	const struct position *pos = r->pos + pf->first;

	for (size_t j = 0; j < s->n; j++) {
		const double *col = r->chol + j * s->n;
		for (size_t i = 0; i < s->m; i++)
			s->load[i + j * s->m] = pos[i].value * col[pos[i].asset];
	}
	for (size_t i = 0; i < s->m; i++)
		s->drift[i] = pos[i].value * r->mu[pos[i].asset];
}

/* Scenario returns L z for the held assets, BLOCK scenarios per dgemm,
 * from task k's own random stream; then each scenario's total. */
static void sim_run(const struct risk *r, size_t k, struct sim *s)
{
	struct rng g;
	size_t m = s->m;

	rng_seed(&g, (uint64_t)r->cfg.seed, (uint64_t)k + 1);
	for (size_t s0 = 0; s0 < s->S; s0 += BLOCK) {
		size_t b = s->S - s0 < BLOCK ? s->S - s0 : BLOCK;
		rng_normals(&g, s->z, s->n * b);
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)b,
			    (blasint)s->n, 1.0, s->load, (blasint)m, s->z, (blasint)s->n,
			    0.0, s->x + s0 * m, (blasint)m);
	}
	for (size_t sc = 0; sc < s->S; sc++) {
		double *col = s->x + sc * m, total = 0.0;
		for (size_t i = 0; i < m; i++) {
			col[i] += s->drift[i];
			total += col[i];
		}
		s->pnl[sc] = total;
	}
}

static int cmp_worst(const void *a, const void *b, void *ctx)
{
	const double *pnl = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (pnl[i] != pnl[j])
		return pnl[i] < pnl[j] ? -1 : 1;
	return (i > j) - (i < j);
}

static int cmp_largest(const void *a, const void *b, void *ctx)
{
	const double *v = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (v[i] != v[j])
		return v[i] > v[j] ? -1 : 1;
	return (i > j) - (i < j);
}

/* VaR at `level`: the worst loss inside the tail; ES: the tail's mean loss. */
static void tail_risk(const struct sim *s, double level, double *var, double *es)
{
	size_t t = tail_count(s->S, level);
	double sum = 0.0;

	for (size_t j = 0; j < t; j++)
		sum += s->pnl[s->order[j]];
	*var = -s->pnl[s->order[t - 1]];
	*es = -sum / (double)t;
}

/* Each position's share of ES 99%: its mean loss in the tail scenarios.
 * They add up to the ES. */
static void contributions(struct sim *s)
{
	size_t t = tail_count(s->S, 0.99);

	memset(s->ces, 0, s->m * sizeof *s->ces);
	for (size_t j = 0; j < t; j++) {
		const double *col = s->x + s->order[j] * s->m;
		for (size_t i = 0; i < s->m; i++)
			s->ces[i] -= col[i];
	}
	for (size_t i = 0; i < s->m; i++) {
		s->ces[i] /= (double)t;
		s->rank[i] = i;
	}
	qsort_r(s->rank, s->m, sizeof *s->rank, cmp_largest, s->ces);
}

/* The parametric (normal) view: volatility sqrt(w' Sigma w) = |L' w|. */
static void parametric(const struct sim *s, struct measures *ms)
{
	for (size_t j = 0; j < s->n; j++) {
		double sum = 0.0;
		for (size_t i = 0; i < s->m; i++)
			sum += s->load[i + j * s->m];
		s->v[j] = sum;
	}
	ms->pvol = cblas_dnrm2((blasint)s->n, s->v, 1);
	ms->pmean = 0.0;
	for (size_t i = 0; i < s->m; i++)
		ms->pmean += s->drift[i];
}

/* Gross and net value, long and short counts. */
static void book_values(const struct risk *r, const struct portfolio *pf,
			struct measures *ms)
{
	memset(ms, 0, sizeof *ms);
	for (size_t i = 0; i < pf->count; i++) {
		double v = r->pos[pf->first + i].value;
		ms->gross += fabs(v);
		ms->net += v;
		*(v < 0 ? &ms->shorts : &ms->longs) += 1;
	}
}

static void measure(const struct risk *r, const struct portfolio *pf, struct sim *s,
		    struct measures *ms)
{
	double sq = 0.0, unused;

	book_values(r, pf, ms);
	for (size_t sc = 0; sc < s->S; sc++) {
		ms->mean += s->pnl[sc];
		s->order[sc] = sc;
	}
	ms->mean /= (double)s->S;
	for (size_t sc = 0; sc < s->S; sc++)
		sq += (s->pnl[sc] - ms->mean) * (s->pnl[sc] - ms->mean);
	ms->sd = sqrt(sq / (double)(s->S - 1));
	qsort_r(s->order, s->S, sizeof *s->order, cmp_worst, s->pnl);
	tail_risk(s, 0.95, &ms->var95, &unused);
	tail_risk(s, 0.975, &unused, &ms->es975);
	tail_risk(s, 0.99, &ms->var99, &ms->es99);
	contributions(s);
	parametric(s, ms);
}

/* ---- the report --------------------------------------------------------------- */

/* Where the returns came from, in one line. */
static void describe_source(const struct risk *r, char *buf, size_t size)
{
	char a[NUMBUF], d[NUMBUF];

	fmt_amount(a, (double)r->n);
	fmt_amount(d, (double)r->ndays);
	if (r->cfg.input)
		snprintf(buf, size, "%s: %s assets, %s days, %s to %s", r->cfg.input, a, d,
			 r->first_date, r->last_date);
	else
		snprintf(buf, size, "generated by a factor model, seed %lld: %s assets, %s days",
			 r->cfg.seed, a, d);
}

static void report_header(FILE *f, const struct risk *r, const struct portfolio *pf,
			  size_t k, const struct measures *ms)
{
	char line[96], src[512], a[NUMBUF];
	int len = snprintf(line, sizeof line, "PORTFOLIO RISK REPORT - %s", pf->name);

	describe_source(r, src, sizeof src);
	fprintf(f, "%s\n%.*s\n", line, len, "=============================="
		"==============================================================");
	fprintf(f, "Returns:      %s\n", src);
	fprintf(f, "Risk model:   sample covariance, %.2f%% shrinkage towards its diagonal;\n"
		"              Cholesky factor from LAPACK (dpotrf)\n", 100.0 * r->cfg.shrinkage);
	fprintf(f, "Simulation:   %s one-day scenarios, random stream %zu of seed %lld\n\n",
		fmt_amount(a, (double)r->cfg.scenarios), k + 1, r->cfg.seed);
	fprintf(f, "Positions:    %zu (%zu long, %zu short)\n", pf->count, ms->longs, ms->shorts);
	fprintf(f, "Gross value:  %s\n", fmt_amount(a, ms->gross));
	fprintf(f, "Net value:    %s\n\n", fmt_amount(a, ms->net));
}

static void report_row(FILE *f, const char *what, double v, double gross)
{
	char a[NUMBUF], b[NUMBUF];

	fprintf(f, "  %-32s %16s %10s\n", what, fmt_amount(a, v), fmt_pct(b, v, gross));
}

static void report_measures(FILE *f, const struct measures *ms)
{
	fprintf(f, "%-34s %16s %10s\n", "One-day risk", "Amount", "% gross");
	report_row(f, "Expected P&L (model)", ms->pmean, ms->gross);
	report_row(f, "Volatility (parametric)", ms->pvol, ms->gross);
	report_row(f, "VaR 99% (parametric)", Z99 * ms->pvol - ms->pmean, ms->gross);
	report_row(f, "Mean P&L (simulated)", ms->mean, ms->gross);
	report_row(f, "Standard deviation (simulated)", ms->sd, ms->gross);
	report_row(f, "VaR 95%", ms->var95, ms->gross);
	report_row(f, "VaR 99%", ms->var99, ms->gross);
	report_row(f, "Expected shortfall 97.5%", ms->es975, ms->gross);
	report_row(f, "Expected shortfall 99%", ms->es99, ms->gross);
}

static void report_percentiles(FILE *f, const struct sim *s)
{
	static const double pct[] = { 1, 5, 25, 50, 75, 95, 99 };
	char a[NUMBUF];

	fprintf(f, "\nSimulated one-day P&L, percentiles\n ");
	for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
		fprintf(f, " %13.0f%%", pct[i]);
	fprintf(f, "\n ");
	for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
		fprintf(f, " %14s", fmt_amount(a, s->pnl[s->order[rank_of(s->S, pct[i])]]));
	fprintf(f, "\n");
}

static void report_contributors(FILE *f, const struct risk *r, const struct portfolio *pf,
				const struct sim *s, const struct measures *ms)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	size_t n = s->m < TOP_REPORT ? s->m : TOP_REPORT;

	fprintf(f, "\nLargest contributors to expected shortfall 99%%\n");
	fprintf(f, "  %4s  %-12s %16s %10s %14s %9s\n", "Rank", "Asset", "Position",
		"Daily vol", "Contribution", "Share");
	for (size_t j = 0; j < n; j++) {
		size_t i = s->rank[j];
		const struct position *p = &r->pos[pf->first + i];
		snprintf(c, sizeof c, "%.2f%%", 100.0 * r->vol[p->asset]);
		fprintf(f, "  %4zu  %-12s %16s %10s %14s %9s\n", j + 1, r->asset[p->asset],
			fmt_amount(a, p->value), c, fmt_amount(b, s->ces[i]),
			fmt_pct(d, s->ces[i], ms->es99));
	}
}

static void report_write(FILE *f, const struct risk *r, const struct portfolio *pf,
			 size_t k, const struct sim *s, const struct measures *ms)
{
	report_header(f, r, pf, k, ms);
	report_measures(f, ms);
	report_percentiles(f, s);
	report_contributors(f, r, pf, s, ms);
}

static void make_result(const struct risk *r, const struct portfolio *pf, size_t k,
			const struct sim *s, const struct measures *ms,
			struct risk_result *res)
{
	*res = (struct risk_result){ (int64_t)k, (int64_t)pf->count, ms->gross, ms->net,
		ms->pmean, ms->pvol, ms->mean, ms->sd, ms->var95, ms->var99,
		ms->es975, ms->es99, { 0 }, { 0 } };
	for (size_t j = 0; j < TOP_RECORD; j++) {
		res->top_asset[j] = j < s->m ? (int64_t)r->pos[pf->first + s->rank[j]].asset : -1;
		res->top_es[j] = j < s->m ? s->ces[s->rank[j]] : 0.0;
	}
}

/* Worker: portfolio k's simulation, report and result record.  Its memory
 * is its own and freed here; the state is only read. */
static int risk_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct risk *r = state;
	const struct portfolio *pf = &r->pf[k];
	struct sim s;
	struct measures ms;
	struct risk_result res;
	FILE *f;
	int rc = -1;

	if (sim_alloc(&s, pf->count, r->n, (size_t)r->cfg.scenarios) != 0) {
		cowrun_task_error(task, "out of memory for %zu positions x %lld scenarios",
				  pf->count, r->cfg.scenarios);
		goto out;
	}
	sim_load(r, pf, &s);
	sim_run(r, k, &s);
	measure(r, pf, &s, &ms);
	if ((f = cowrun_report(task)) == NULL)
		goto out;
	report_write(f, r, pf, k, &s, &ms);
	if (ferror(f)) {
		cowrun_task_error(task, "cannot write the report");
		goto out;
	}
	make_result(r, pf, k, &s, &ms, &res);
	if (cowrun_emit(task, &res, sizeof res) != 0)
		goto out;
	rc = 0;
out:
	sim_free(&s);
	return rc;
}

/* ==== parent side: merge() and the book ==== */

static int result_valid(const struct risk *r, size_t k, const struct risk_result *res)
{
	const double v[] = { res->gross, res->net, res->pmean, res->pvol, res->mean, res->sd,
			     res->var95, res->var99, res->es975, res->es99 };

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (!isfinite(v[i]))
			return 0;
	for (size_t j = 0; j < TOP_RECORD; j++)
		if (res->top_asset[j] < -1 || res->top_asset[j] >= (int64_t)r->n)
			return 0;
	return res->portfolio == (int64_t)k && res->positions == (int64_t)r->pf[k].count;
}

/* Parent, in task order: check portfolio k's record and keep it. */
static int risk_merge(void *state, size_t k, const void *record, size_t len)
{
	struct risk *r = state;
	struct risk_result res;

	if (k >= r->npf || len != sizeof res) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu", k, len, sizeof res);
		return -1;
	}
	memcpy(&res, record, sizeof res);
	if (!result_valid(r, k, &res) || r->acc->merged[k]) {
		cowrun_error("task %zu (%s): %s", k, r->pf[k].name,
			     r->acc->merged[k] ? "result merged twice" : "malformed result record");
		return -1;
	}
	r->acc->result[k] = res;
	r->acc->merged[k] = 1;
	r->acc->nmerged++;
	return 0;
}

/* The book: the merged portfolios' positions netted per asset, its
 * parametric VaR and each asset's Euler contribution to it. */
struct book {
	double *w;          /* net position per asset */
	double *v;          /* L' w */
	double *contrib;    /* per asset, adds up to var99 */
	size_t *rank;       /* held assets, largest contribution first */
	size_t nheld;
	double vol, mean, var99;
};

static void book_free(struct book *b)
{
	free(b->w);
	free(b->v);
	free(b->contrib);
	free(b->rank);
}

static void book_positions(const struct risk *r, struct book *b)
{
	memset(b->w, 0, r->n * sizeof *b->w);
	for (size_t p = 0; p < r->npf; p++) {
		if (!r->acc->merged[p])
			continue;
		for (size_t i = 0; i < r->pf[p].count; i++)
			b->w[r->pos[r->pf[p].first + i].asset] += r->pos[r->pf[p].first + i].value;
	}
}

/* vol = |L' w|; Sigma w = L (L' w); contribution a = w_a d(VaR)/d(w_a). */
static int book_compute(const struct risk *r, struct book *b)
{
	size_t n = r->n;

	memset(b, 0, sizeof *b);
	b->w = doubles(n);
	b->v = doubles(n);
	b->contrib = doubles(n);
	b->rank = malloc(n * sizeof *b->rank);
	if (!b->w || !b->v || !b->contrib || !b->rank) {
		cowrun_error("out of memory for the book of %zu assets", n);
		return -1;
	}
	book_positions(r, b);
	memcpy(b->v, b->w, n * sizeof *b->v);
	cblas_dtrmv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, (blasint)n, r->chol,
		    (blasint)n, b->v, 1);
	b->vol = cblas_dnrm2((blasint)n, b->v, 1);
	memcpy(b->contrib, b->v, n * sizeof *b->v);
	cblas_dtrmv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (blasint)n, r->chol,
		    (blasint)n, b->contrib, 1);
	for (size_t a = 0; a < n; a++) {
		b->mean += b->w[a] * r->mu[a];
		b->contrib[a] = b->w[a] * ((b->vol > 0 ? Z99 * b->contrib[a] / b->vol : 0) - r->mu[a]);
		if (b->w[a] != 0.0)
			b->rank[b->nheld++] = a;
	}
	b->var99 = Z99 * b->vol - b->mean;
	qsort_r(b->rank, b->nheld, sizeof *b->rank, cmp_largest, b->contrib);
	return 0;
}

/* Totals of the merged records; sum.pvol holds the sum of parametric VaRs. */
static void finish_totals(const struct risk *r, struct risk_result *sum)
{
	memset(sum, 0, sizeof *sum);
	for (size_t k = 0; k < r->npf; k++) {
		const struct risk_result *x = &r->acc->result[k];
		if (!r->acc->merged[k])
			continue;
		sum->positions += x->positions;
		sum->gross += x->gross;
		sum->net += x->net;
		sum->pvol += Z99 * x->pvol - x->pmean;
		sum->var99 += x->var99;
		sum->es99 += x->es99;
	}
}

static void finish_head(FILE *out, const struct risk *r, const struct risk_result *sum,
			const struct book *b)
{
	char a[NUMBUF], src[512];

	describe_source(r, src, sizeof src);
	fprintf(out, "Portfolio risk summary\n");
	fprintf(out, "  %-28s %s\n", "Returns", src);
	fprintf(out, "  %-28s %s per portfolio, one-day horizon\n", "Scenarios",
		fmt_amount(a, (double)r->cfg.scenarios));
	fprintf(out, "  %-28s %zu of %zu\n", "Portfolios reported", r->acc->nmerged, r->npf);
	fprintf(out, "  %-28s %16s\n", "Positions", fmt_amount(a, (double)sum->positions));
	fprintf(out, "  %-28s %16s\n", "Gross value", fmt_amount(a, sum->gross));
	fprintf(out, "  %-28s %16s\n", "Net value", fmt_amount(a, sum->net));
	fprintf(out, "  %-28s %16s  each portfolio alone, simulated\n", "Sum of VaR 99%",
		fmt_amount(a, sum->var99));
	fprintf(out, "  %-28s %16s\n", "Sum of ES 99%", fmt_amount(a, sum->es99));
	fprintf(out, "  %-28s %16s  each portfolio alone\n", "Sum of parametric VaR 99%",
		fmt_amount(a, sum->pvol));
	fprintf(out, "  %-28s %16s  parametric, positions netted across portfolios\n",
		"Book VaR 99%", fmt_amount(a, b->var99));
	fprintf(out, "  %-28s %16s  of the sum of parametric VaRs\n", "Diversification benefit",
		fmt_pct(a, sum->pvol - b->var99, sum->pvol));
}

/* The merged portfolios with the largest ES 99%. */
static void finish_portfolios(FILE *out, const struct risk *r)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	double *es = doubles(r->npf);
	size_t *idx = malloc(r->npf * sizeof *idx), n = 0;

	for (size_t k = 0; es && idx && k < r->npf; k++) {
		es[k] = r->acc->result[k].es99;
		if (r->acc->merged[k])
			idx[n++] = k;
	}
	if (es && idx)
		qsort_r(idx, n, sizeof *idx, cmp_largest, es);
	fprintf(out, "\nPortfolios with the largest ES 99%%\n");
	fprintf(out, "  %4s  %-24s %16s %14s %14s %9s\n", "Rank", "Portfolio", "Gross",
		"VaR 99%", "ES 99%", "ES/gross");
	for (size_t j = 0; j < n && j < TOP_BOOK; j++) {
		const struct risk_result *x = &r->acc->result[idx[j]];
		fprintf(out, "  %4zu  %-24s %16s %14s %14s %9s\n", j + 1, r->pf[idx[j]].name,
			fmt_amount(a, x->gross), fmt_amount(b, x->var99),
			fmt_amount(c, x->es99), fmt_pct(d, x->es99, x->gross));
	}
	free(es);
	free(idx);
}

static void finish_assets(FILE *out, const struct risk *r, const struct book *b)
{
	char a[NUMBUF], c[NUMBUF], d[NUMBUF], e[NUMBUF];

	fprintf(out, "\nLargest contributors to book VaR 99%% (Euler allocation)\n");
	fprintf(out, "  %4s  %-12s %16s %10s %14s %9s\n", "Rank", "Asset", "Net position",
		"Daily vol", "Contribution", "Share");
	for (size_t j = 0; j < b->nheld && j < TOP_BOOK; j++) {
		size_t i = b->rank[j];
		snprintf(c, sizeof c, "%.2f%%", 100.0 * r->vol[i]);
		fprintf(out, "  %4zu  %-12s %16s %10s %14s %9s\n", j + 1, r->asset[i],
			fmt_amount(a, b->w[i]), c, fmt_amount(d, b->contrib[i]),
			fmt_pct(e, b->contrib[i], b->var99));
	}
}

/* Parent: the book-wide summary from the merged records, on out. */
static int risk_finish(void *state, FILE *out)
{
	struct risk *r = state;
	struct risk_result sum;
	struct book b;
	int rc = -1;

	if (book_compute(r, &b) != 0)
		goto out;
	finish_totals(r, &sum);
	finish_head(out, r, &sum, &b);
	finish_portfolios(out, r);
	finish_assets(out, r, &b);
	if (ferror(out)) {
		cowrun_error("cannot write the summary");
		goto out;
	}
	rc = 0;
out:
	book_free(&b);
	return rc;
}

const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "risk",
	.summary = "nightly portfolio risk: Monte Carlo VaR and ES per portfolio (LAPACK)",
	.description =
		"Setup reads daily returns (--input) or generates them from a factor model,\n"
		"estimates the covariance matrix, shrinks it towards its diagonal\n"
		"(--shrinkage) and factors it with LAPACK: Sigma = L L'.  Each task is one\n"
		"portfolio: --scenarios one-day Monte Carlo scenarios through L (BLAS dgemm),\n"
		"VaR 95% and 99%, ES 97.5% and 99%, the positions contributing most to ES 99%,\n"
		"written to portfolio-NNNN.txt.  The summary compares the sum of the\n"
		"portfolios' risks with the diversified book VaR and lists the book's largest\n"
		"contributors.  BLAS runs on one thread: the workers are the parallelism.\n"
		"\n"
		"--input CSV: a header 'date,ASSET,ASSET,...' (asset names of 1-31\n"
		"characters), then one row per day: a date label, then each asset's return\n"
		"that day as a decimal fraction above -1 (0.0123 is +1.23%).  At least 2 rows;\n"
		"--assets and --days are then ignored.\n"
		"--holdings CSV: header 'portfolio,asset,value', one row per position: a\n"
		"portfolio name (1-31 characters; its rows together), an asset (a column of\n"
		"the returns, or A0001... when generated) and a non-zero market value,\n"
		"negative for a short; --portfolios and --positions are then ignored.\n"
		"Without --holdings, portfolios are generated from --seed.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = risk_options,
	.defaults = &risk_defaults,
	.setup = risk_setup,
	.ntasks = risk_ntasks,
	.task_name = risk_task_name,
	.run = risk_run,
	.merge = risk_merge,
	.finish = risk_finish,
	.teardown = risk_teardown,
};
