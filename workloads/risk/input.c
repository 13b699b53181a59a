/*
 * input.c - the risk workload's input files, read in setup: the returns CSV
 * (--input: one column per asset, one row per day) and the holdings CSV
 * (--holdings: one row per position), with the line reader they share and
 * the sorted index of asset names that the holdings are looked up in.
 */
#define _GNU_SOURCE
#include "risk.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int risk_index_names(struct risk *r)
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
 * day, 64-byte aligned (see risk_doubles()).  Grows by doubling. */
static int grow_days(double **d, size_t *cap, size_t days, size_t n)
{
	size_t more = *cap ? *cap * 2 : 256;
	double *bigger;

	if (days < *cap)
		return 0;
	if (more > SIZE_MAX / sizeof(double) / 2 / n || (bigger = risk_doubles(more * n)) == NULL)
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
int risk_load_returns(struct risk *r, double **data)
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

int risk_load_holdings(struct risk *r)
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
