/*
 * summary.c - the parent side of the risk workload: merge() checks and keeps
 * each portfolio's result record, in task order; finish() nets the merged
 * portfolios into the book, computes its parametric VaR and Euler
 * contributions and prints the summary.
 */
#define _GNU_SOURCE
#include "risk.h"

#include <cblas.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_BOOK        10      /* portfolios and assets listed in the summary */

/* ---- merge ----------------------------------------------------------------- */

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
int risk_merge(void *state, size_t k, const void *record, size_t len)
{
	struct risk *r = state;
	struct risk_result res;

	if (k >= r->npf || len != sizeof res) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu", k, len, sizeof res);
		return -1;
	}
	memcpy(&res, record, sizeof res);
	/* Each task merges once (cowrun.h): the runner sees to it. */
	if (!result_valid(r, k, &res)) {
		cowrun_error("task %zu (%s): malformed result record", k, r->pf[k].name);
		return -1;
	}
	r->acc->result[k] = res;
	r->acc->merged[k] = 1;
	r->acc->nmerged++;
	return 0;
}

/* ---- the book and the summary -------------------------------------------- */

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
	b->w = risk_doubles(n);
	b->v = risk_doubles(n);
	b->contrib = risk_doubles(n);
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
	qsort_r(b->rank, b->nheld, sizeof *b->rank, risk_cmp_largest, b->contrib);
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

	risk_describe_source(r, src, sizeof src);
	fprintf(out, "Portfolio risk summary\n");
	fprintf(out, "  %-28s %s\n", "Returns", src);
	fprintf(out, "  %-28s %s per portfolio, one-day horizon\n", "Scenarios",
		risk_fmt_amount(a, (double)r->cfg.scenarios));
	fprintf(out, "  %-28s %zu of %zu\n", "Portfolios reported", r->acc->nmerged, r->npf);
	fprintf(out, "  %-28s %16s\n", "Positions", risk_fmt_amount(a, (double)sum->positions));
	fprintf(out, "  %-28s %16s\n", "Gross value", risk_fmt_amount(a, sum->gross));
	fprintf(out, "  %-28s %16s\n", "Net value", risk_fmt_amount(a, sum->net));
	fprintf(out, "  %-28s %16s  each portfolio alone, simulated\n", "Sum of VaR 99%",
		risk_fmt_amount(a, sum->var99));
	fprintf(out, "  %-28s %16s\n", "Sum of ES 99%", risk_fmt_amount(a, sum->es99));
	fprintf(out, "  %-28s %16s  each portfolio alone\n", "Sum of parametric VaR 99%",
		risk_fmt_amount(a, sum->pvol));
	fprintf(out, "  %-28s %16s  parametric, positions netted across portfolios\n",
		"Book VaR 99%", risk_fmt_amount(a, b->var99));
	fprintf(out, "  %-28s %16s  of the sum of parametric VaRs\n", "Diversification benefit",
		risk_fmt_pct(a, sum->pvol - b->var99, sum->pvol));
}

/* The merged portfolios with the largest ES 99%. */
static void finish_portfolios(FILE *out, const struct risk *r)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	double *es = risk_doubles(r->npf);
	size_t *idx = malloc(r->npf * sizeof *idx), n = 0;

	for (size_t k = 0; es && idx && k < r->npf; k++) {
		es[k] = r->acc->result[k].es99;
		if (r->acc->merged[k])
			idx[n++] = k;
	}
	if (es && idx)
		qsort_r(idx, n, sizeof *idx, risk_cmp_largest, es);
	fprintf(out, "\nPortfolios with the largest ES 99%%\n");
	fprintf(out, "  %4s  %-24s %16s %14s %14s %9s\n", "Rank", "Portfolio", "Gross",
		"VaR 99%", "ES 99%", "ES/gross");
	for (size_t j = 0; j < n && j < TOP_BOOK; j++) {
		const struct risk_result *x = &r->acc->result[idx[j]];
		fprintf(out, "  %4zu  %-24s %16s %14s %14s %9s\n", j + 1, r->pf[idx[j]].name,
			risk_fmt_amount(a, x->gross), risk_fmt_amount(b, x->var99),
			risk_fmt_amount(c, x->es99), risk_fmt_pct(d, x->es99, x->gross));
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
			risk_fmt_amount(a, b->w[i]), c, risk_fmt_amount(d, b->contrib[i]),
			risk_fmt_pct(e, b->contrib[i], b->var99));
	}
}

/* Parent: the book-wide summary from the merged records, on out. */
int risk_finish(void *state, FILE *out)
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
