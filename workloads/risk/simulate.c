/*
 * simulate.c - one task of the risk workload, run in a worker: portfolio
 * k's Monte Carlo of one-day P&L through the shared factor (BLAS dgemm),
 * its VaR and expected shortfall and the positions that contribute most,
 * the report portfolio-NNNN.txt and the result record for the parent.
 * The shared state is only read; the task's memory is its own.
 */
#define _GNU_SOURCE
#include "risk.h"
#include "rng.h"

#include <cblas.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK           128     /* scenarios simulated per dgemm */
#define TOP_REPORT      10      /* contributors listed in a report */

/* ---- ranks ------------------------------------------------------------------ */

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

/* ---- the simulation and its measures -------------------------------------- */

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
	s->load = risk_doubles(mn);
	s->drift = risk_doubles(m);
	s->z = risk_doubles(n * BLOCK);
	s->x = risk_doubles(mS);
	s->pnl = risk_doubles(S);
	s->order = malloc(S * sizeof *s->order);
	s->ces = risk_doubles(m);
	s->rank = malloc(m * sizeof *s->rank);
	s->v = risk_doubles(n);
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
	qsort_r(s->rank, s->m, sizeof *s->rank, risk_cmp_largest, s->ces);
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

static void report_header(FILE *f, const struct risk *r, const struct portfolio *pf,
			  size_t k, const struct measures *ms)
{
	char line[96], src[512], a[NUMBUF];
	int len = snprintf(line, sizeof line, "PORTFOLIO RISK REPORT - %s", pf->name);

	risk_describe_source(r, src, sizeof src);
	fprintf(f, "%s\n%.*s\n", line, len, "=============================="
		"==============================================================");
	fprintf(f, "Returns:      %s\n", src);
	fprintf(f, "Risk model:   sample covariance, %.2f%% shrinkage towards its diagonal;\n"
		"              Cholesky factor from LAPACK (dpotrf)\n", 100.0 * r->cfg.shrinkage);
	fprintf(f, "Simulation:   %s one-day scenarios, random stream %zu of seed %lld\n\n",
		risk_fmt_amount(a, (double)r->cfg.scenarios), k + 1, r->cfg.seed);
	fprintf(f, "Positions:    %zu (%zu long, %zu short)\n", pf->count, ms->longs, ms->shorts);
	fprintf(f, "Gross value:  %s\n", risk_fmt_amount(a, ms->gross));
	fprintf(f, "Net value:    %s\n\n", risk_fmt_amount(a, ms->net));
}

static void report_row(FILE *f, const char *what, double v, double gross)
{
	char a[NUMBUF], b[NUMBUF];

	fprintf(f, "  %-32s %16s %10s\n", what, risk_fmt_amount(a, v), risk_fmt_pct(b, v, gross));
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
		fprintf(f, " %14s", risk_fmt_amount(a, s->pnl[s->order[rank_of(s->S, pct[i])]]));
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
			risk_fmt_amount(a, p->value), c, risk_fmt_amount(b, s->ces[i]),
			risk_fmt_pct(d, s->ces[i], ms->es99));
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
int risk_run(const void *state, size_t k, struct cowrun_task *task)
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
