/*
 * generate.c - the deterministic synthetic data set (--seed).
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const adjectives[] = {
	"Fresh", "Organic", "Classic", "Family", "Value", "Premium", "Farm", "Daily",
};

/* ---- generator: a deterministic synthetic data set from --seed ------------ */

struct promo {
	uint32_t product, first, last; /* product index, calendar days */
	uint32_t price;                /* cents */
};

struct gen {
	uint64_t rng;
	uint32_t *store_cdf;   /* cumulative store weights */
	uint32_t *store_open;  /* first trading day of each store */
	uint32_t *pop_cdf;     /* cumulative weights by popularity rank */
	uint32_t *pop_product; /* product index of each rank */
	struct promo promo[MAX_PROMOS];
	size_t npromos;
};

/* splitmix64: tiny, fast, and the same sequence everywhere, unlike rand(). */
static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix64(*s);
}

/* Uniform in [0, n) for n < 2^32 (multiply-shift; the bias is < 2^-32). */
static uint32_t rng_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rng_next(s) >> 32) * n) >> 32);
}

/* Index of the cdf bucket a uniform draw falls into: the first entry
 * above it.  Written so the compiler emits a conditional move: a branchy
 * binary search mispredicts on random draws and was a quarter of setup. */
static uint32_t cdf_pick(uint64_t *rng, const uint32_t *cdf, size_t n)
{
	uint32_t x = rng_below(rng, cdf[n - 1]);
	size_t lo = 0, len = n;

	while (len > 1) {
		size_t half = len / 2;
		lo += cdf[lo + half - 1] <= x ? half : 0;
		len -= half;
	}
	return (uint32_t)lo;
}

/* Product i: a random category, a name from it, a price ending in 9. */
static int gen_product_entry(struct gen *g, struct raw *raw, uint32_t i)
{
	uint32_t cat = rng_below(&g->rng, NCATEGORIES);
	const struct category *c = &categories[cat];
	const char *adj = adjectives[rng_below(&g->rng,
				sizeof adjectives / sizeof adjectives[0])];
	char name[64];

	snprintf(name, sizeof name, "%s %s", adj, c->noun[rng_below(&g->rng, 6)]);
	if (raw_add_product(raw, i + 1, name, strlen(name)) < 0)
		return -1;
	raw->product[i].category = cat;
	raw->product[i].list_price = (c->min_price +
		rng_below(&g->rng, c->max_price - c->min_price + 1)) / 10 * 10 + 9;
	return 0;
}

/* The catalogue; popularity is a Zipf-like 1/(rank+3) over a random
 * permutation, in integers so the data do not depend on libm. */
static int gen_catalogue(struct gen *g, const struct sales_config *cfg,
			 struct raw *raw)
{
	uint32_t n = (uint32_t)cfg->products, sum = 0;

	g->pop_cdf = malloc(n * sizeof *g->pop_cdf);
	g->pop_product = malloc(n * sizeof *g->pop_product);
	if (g->pop_cdf == NULL || g->pop_product == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		if (gen_product_entry(g, raw, i) != 0)
			return -1;
		g->pop_product[i] = i;
		sum += 1000000 / (i + 3);
		g->pop_cdf[i] = sum;
	}
	for (uint32_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
		uint32_t j = rng_below(&g->rng, i + 1), t = g->pop_product[i];
		g->pop_product[i] = g->pop_product[j];
		g->pop_product[j] = t;
	}
	return 0;
}

/* Stores 1..N of differing sizes (one in eight a flagship three times
 * bigger); one in ten opens during the first half of the period.  Store 1
 * is open from day 0, so a draw always finds an open store. */
static int gen_stores(struct gen *g, const struct sales_config *cfg,
		      struct raw *raw)
{
	uint32_t n = (uint32_t)cfg->stores, sum = 0;

	g->store_cdf = malloc(n * sizeof *g->store_cdf);
	g->store_open = malloc(n * sizeof *g->store_open);
	if (g->store_cdf == NULL || g->store_open == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t w = 40 + rng_below(&g->rng, 160);
		if (rng_below(&g->rng, 8) == 0)
			w *= 3;
		sum += w;
		g->store_cdf[i] = sum;
		g->store_open[i] = 0;
		if (i > 0 && rng_below(&g->rng, 10) == 0)
			g->store_open[i] = rng_below(&g->rng, (uint32_t)cfg->days / 2 + 1);
		if (raw_add_store(raw, i + 1) < 0)
			return -1;
	}
	return 0;
}

/* A few promotions of popular products: 7-21 days at 15-40% off. */
static void gen_promos(struct gen *g, const struct sales_config *cfg,
		       const struct raw *raw)
{
	uint32_t days = (uint32_t)cfg->days, top = (uint32_t)cfg->products;

	g->npromos = 1 + days / 45;
	if (g->npromos > MAX_PROMOS)
		g->npromos = MAX_PROMOS;
	if (top > 40)
		top = 40;
	for (size_t i = 0; i < g->npromos; i++) {
		struct promo *p = &g->promo[i];
		uint32_t off = 15 + rng_below(&g->rng, 26);
		p->product = g->pop_product[rng_below(&g->rng, top)];
		p->first = rng_below(&g->rng, days);
		p->last = p->first + 6 + rng_below(&g->rng, 15);
		p->price = raw->product[p->product].list_price * (100 - off) / 100;
		if (p->price == 0)
			p->price = 1;
	}
}

/* The promotion running for product on day d, if any. */
static const struct promo *gen_promo_on(const struct gen *g, uint32_t product,
					uint32_t d)
{
	for (size_t i = 0; i < g->npromos; i++)
		if (g->promo[i].product == product &&
		    d >= g->promo[i].first && d <= g->promo[i].last)
			return &g->promo[i];
	return NULL;
}

/* A product for a sale on day d: by popularity, but a running promotion
 * draws one sale in twenty to itself. */
static uint32_t gen_product(struct gen *g, uint32_t d, size_t nproducts)
{
	for (size_t i = 0; i < g->npromos; i++)
		if (d >= g->promo[i].first && d <= g->promo[i].last &&
		    rng_below(&g->rng, 20) == 0)
			return g->promo[i].product;
	return g->pop_product[cdf_pick(&g->rng, g->pop_cdf, nproducts)];
}

/* Units in one sale: mostly 1-3, now and then a case of 6, 12 or 24. */
static uint32_t gen_qty(struct gen *g)
{
	static const uint32_t qty[] = { 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
					3, 3, 4, 5, 6, 2, 1, 1, 12, 1, 24, 1 };
	uint32_t i = rng_below(&g->rng, sizeof qty / sizeof qty[0]);

	/* The big packs are rare: keep one draw in twelve of them. */
	if (qty[i] >= 12 && rng_below(&g->rng, 12) != 0)
		return 1;
	return qty[i];
}

static void gen_row(struct gen *g, struct raw *raw, uint32_t d, size_t nstores)
{
	struct txn *t = &raw->txn[raw->n];
	uint32_t store;
	const struct promo *p;

	do
		store = cdf_pick(&g->rng, g->store_cdf, nstores);
	while (g->store_open[store] > d);
	t->day = raw->first_day + d;
	t->product = gen_product(g, d, raw->nproducts);
	p = gen_promo_on(g, t->product, d);
	/* One draw per statement: C leaves the order of operands unspecified,
	 * and the data must not depend on the compiler's choice. */
	t->qty = gen_qty(g);
	if (p && rng_below(&g->rng, 3) == 0)
		t->qty++; /* a promotion sells an extra unit now and then */
	t->price = p ? p->price : raw->product[t->product].list_price;
	raw->store[raw->n++] = store;
}

/* Relative sales volume of a day: busy weekends, a December peak. */
static uint64_t day_weight(uint32_t daynum)
{
	static const uint64_t wday[7] = { 90, 85, 90, 100, 125, 150, 110 };
	static const uint64_t month[12] = { 85, 85, 95, 95, 100, 100,
					    105, 105, 95, 100, 115, 140 };
	int64_t z = (int64_t)daynum + day_zero();
	int y;
	unsigned m, d;

	civil_from_days(z, &y, &m, &d);
	return wday[((z % 7) + 10) % 7] * month[m - 1];
}

/* Sales in date order, each day's count its share of --rows by weight
 * (cumulative rounding, so the counts add up to exactly --rows). */
static void gen_rows(struct gen *g, const struct sales_config *cfg, struct raw *raw)
{
	uint64_t total = 0, cum = 0, rows = (uint64_t)cfg->rows;

	for (uint32_t d = 0; d < cfg->days; d++)
		total += day_weight(raw->first_day + d);
	for (uint32_t d = 0; d < cfg->days; d++) {
		cum += day_weight(raw->first_day + d);
		while (raw->n < rows * cum / total)
			gen_row(g, raw, d, (size_t)cfg->stores);
	}
}

int generate(const struct sales_config *cfg, struct raw *raw)
{
	struct gen g = { .rng = (uint64_t)cfg->seed };
	int rc = -1;

	if (parse_date(cfg->start_date, &raw->first_day) != 0 ||
	    raw->first_day + cfg->days - 1 > day_number(9999, 12, 31)) {
		cowrun_error("bad --start-date '%s' (expected a date YYYY-MM-DD, "
			     "1000-01-01 or later, the period ending by 9999-12-31)",
			     cfg->start_date);
		return -1;
	}
	raw->last_day = raw->first_day + (uint32_t)cfg->days - 1;
	if (raw_reserve(raw, (size_t)cfg->rows) != 0 ||
	    gen_catalogue(&g, cfg, raw) != 0 || gen_stores(&g, cfg, raw) != 0) {
		cowrun_error("out of memory generating %lld rows", cfg->rows);
		goto out;
	}
	gen_promos(&g, cfg, raw);
	gen_rows(&g, cfg, raw);
	rc = 0;
out:
	free(g.store_cdf);
	free(g.store_open);
	free(g.pop_cdf);
	free(g.pop_product);
	return rc;
}
