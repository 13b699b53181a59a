/*
 * generate.c - the risk workload's generated data, made in setup when no
 * file is given: daily returns from a factor model (the assets' parameters
 * from random stream 0 of --seed, each fixed block of DAY_BLOCK days from
 * its own stream, on the setup threads) and portfolios of distinct assets
 * in a few styles (stream 2^63).
 */
#define _GNU_SOURCE
#include "risk.h"
#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NFACTORS        8       /* market + sectors of the generator */
#define DAY_BLOCK       32      /* days generated per cowrun_parallel() block */
#define DAY_STREAM      (UINT64_C(1) << 62) /* block b of days: stream 2^62 + b */

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

/* What the day blocks share: read-only but for each block's own rows of d. */
struct gen_days {
	const struct risk *r;
	const struct gen_asset *ga;
	double *d;
};

/* Setup thread: days [block * DAY_BLOCK, +DAY_BLOCK) from the block's own
 * stream, so they are the same whichever thread makes them. */
static int gen_day_block(void *ctx, size_t block, unsigned thread)
{
	const struct gen_days *gd = ctx;
	const struct risk *r = gd->r;
	size_t t0 = block * DAY_BLOCK;
	size_t t1 = r->ndays - t0 < DAY_BLOCK ? r->ndays : t0 + DAY_BLOCK;
	struct rng g;

	(void)thread;
	rng_seed(&g, (uint64_t)r->cfg.seed, DAY_STREAM + block);
	for (size_t t = t0; t < t1; t++)
		gen_day(&g, gd->ga, r->n, gd->d + t * r->n);
	return 0;
}

int risk_generate_returns(struct risk *r, double **data)
{
	struct gen_asset *ga;
	struct rng g;
	double *d;

	r->n = (size_t)r->cfg.assets;
	r->ndays = (size_t)r->cfg.days;
	r->asset = cowrun_alloc(r->n * sizeof *r->asset);
	ga = malloc(r->n * sizeof *ga);
	d = r->n * r->ndays / r->ndays == r->n ? risk_doubles(r->n * r->ndays) : NULL;
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
	cowrun_parallel((r->ndays + DAY_BLOCK - 1) / DAY_BLOCK, gen_day_block,
			&(struct gen_days){ r, ga, d });
	free(ga);
	*data = d;
	return 0;
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

int risk_generate_portfolios(struct risk *r)
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
