/*
 * generate.c - the deterministic synthetic data set (--seed), generated
 * straight into its final place: s->txn grouped by store, in the setup
 * arena, on the setup threads, with no second copy of the rows.
 *
 * Three steps, so nothing depends on the thread count:
 *  1. the small parts (catalogue, store sizes and opening days, promotions)
 *     from --seed on one thread;
 *  2. every count by integer arithmetic alone, no random draw: --rows split
 *     among the stores by weight x the day weights of the days each is
 *     open, then each store's rows among its open days by day weight
 *     (cumulative rounding both times, so they add up exactly).  Every
 *     store's region, and the day of any of its rows, is known before a
 *     row is drawn;
 *  3. the rows, in blocks of GEN_BLOCK rows of one store (cowrun_parallel()),
 *     each block with its own random stream seeded from (seed, store,
 *     block), written where they belong.
 */
#include "sales.h"

#include <stdlib.h>
#include <string.h>

/* Rows of one store drawn by one block: fixed, never derived from the
 * thread count; small enough that 2-16 threads balance on the default
 * 40M rows (about 600 blocks). */
#define GEN_BLOCK 65536

static const char *const adjectives[] = {
	"Fresh", "Organic", "Classic", "Family", "Value", "Premium", "Farm", "Daily",
};

struct promo {
	uint32_t product, first, last; /* product index, calendar days */
	uint32_t price;                /* cents */
};

/* One bucket of Walker's alias table: a uniform bucket, then a uniform
 * x below the total weight picks `product` if x < prob, else `other`.
 * O(1) per draw: a binary search over cumulative weights was half of
 * setup (its loads depend on each other). */
struct alias {
	uint32_t prob, product, other;
};

/* What the row blocks read (step 3): filled by steps 1 and 2, read-only
 * while the threads run. */
struct gen {
	uint64_t rng;          /* the small parts' stream (step 1 only) */
	const struct sales_config *cfg;
	struct sales *s;
	uint32_t ndays;
	uint32_t *store_weight;
	uint32_t *store_open;  /* first trading day of each store */
	uint64_t *cum_day;     /* cum_day[d]: weights of days 0 .. d-1 */
	size_t *first_block;   /* store k's blocks: first_block[k] .. [k+1] */
	struct alias *pop;     /* products by popularity, one draw each */
	uint32_t *pop_product; /* product index of each rank */
	uint64_t pop_total;    /* the popularity weights' sum (< 2^32) */
	size_t names_len, names_cap;
	struct promo promo[MAX_PROMOS];
	size_t npromos;
};

/* splitmix64: tiny, fast, and the same sequence everywhere, unlike rand().
 * Its finaliser is util.c's mix64(), repeated here so the row loop inlines
 * it (a call per draw was 6% of setup). */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s += 0x9e3779b97f4a7c15ULL;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in [0, n) for n < 2^32 (multiply-shift; the bias is < 2^-32). */
static uint32_t rng_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rng_next(s) >> 32) * n) >> 32);
}

/* ---- step 1: catalogue, stores, promotions (one thread, from --seed) ---- */

/* Append name to the state's pool; returns its offset or NO_NAME if
 * memory ran out. */
static uint32_t gen_name(struct gen *g, const char *name)
{
	size_t len = strlen(name);
	char *p = grow_array(g->s->names, &g->names_cap, g->names_len + len + 1, 1);
	uint32_t off = (uint32_t)g->names_len;

	if (p == NULL)
		return NO_NAME;
	g->s->names = p;
	memcpy(p + off, name, len + 1);
	g->names_len += len + 1;
	return off;
}

/* Product i (id i + 1): a random category, a name from it, a price ending
 * in 9.  Ids ascend with the index, as the catalogue's order wants. */
static int gen_product_entry(struct gen *g, uint32_t i)
{
	uint32_t cat = rng_below(&g->rng, NCATEGORIES);
	const struct category *c = &categories[cat];
	const char *adj = adjectives[rng_below(&g->rng,
				sizeof adjectives / sizeof adjectives[0])];
	struct product *p = &g->s->product[i];
	char name[64];

	snprintf(name, sizeof name, "%s %s", adj, c->noun[rng_below(&g->rng, 6)]);
	p->id = i + 1;
	p->name = gen_name(g, name);
	p->category = cat;
	p->list_price = (c->min_price +
		rng_below(&g->rng, c->max_price - c->min_price + 1)) / 10 * 10 + 9;
	return p->name == NO_NAME ? -1 : 0;
}

/* Vose's construction of the alias table over weight[rank], in integers
 * (each weight scaled by n against the total), so the table, and the data,
 * are the same on every machine.  Returns 0 or -1 (ENOMEM). */
static int alias_build(struct gen *g, const uint32_t *weight, uint32_t n, uint64_t total)
{
	uint64_t *scaled = malloc(n * sizeof *scaled);
	uint32_t *small = malloc(n * sizeof *small), *large = malloc(n * sizeof *large);
	size_t ns = 0, nl = 0;
	int rc = -1;

	if ((g->pop = malloc(n * sizeof *g->pop)) == NULL || !scaled || !small || !large)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		scaled[i] = (uint64_t)weight[i] * n;
		g->pop[i] = (struct alias){ (uint32_t)total, g->pop_product[i], g->pop_product[i] };
		if (scaled[i] < total)
			small[ns++] = i;
		else
			large[nl++] = i;
	}
	while (ns > 0 && nl > 0) {
		uint32_t l = small[--ns], h = large[--nl];
		g->pop[l].prob = (uint32_t)scaled[l];
		g->pop[l].other = g->pop_product[h];
		scaled[h] -= total - scaled[l];
		if (scaled[h] < total)
			small[ns++] = h;
		else
			large[nl++] = h;
	}
	rc = 0; /* what is left has exactly the total: prob = total, itself */
out:
	free(scaled);
	free(small);
	free(large);
	return rc;
}

/* The catalogue; popularity is a Zipf-like 1/(rank+3) over a random
 * permutation, in integers so the data do not depend on libm. */
static int gen_catalogue(struct gen *g)
{
	uint32_t n = (uint32_t)g->cfg->products;
	uint32_t *weight = malloc(n * sizeof *weight);
	uint64_t sum = 0;
	int rc = -1;

	g->s->product = calloc(n, sizeof *g->s->product);
	g->pop_product = malloc(n * sizeof *g->pop_product);
	if (g->s->product == NULL || g->pop_product == NULL || weight == NULL)
		goto out;
	g->s->nproducts = n;
	g->s->has_categories = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (gen_product_entry(g, i) != 0)
			goto out;
		g->pop_product[i] = i;
		weight[i] = 1000000 / (i + 3);
		sum += weight[i];
	}
	for (uint32_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
		uint32_t j = rng_below(&g->rng, i + 1), t = g->pop_product[i];
		g->pop_product[i] = g->pop_product[j];
		g->pop_product[j] = t;
	}
	g->pop_total = sum;
	rc = alias_build(g, weight, n, sum);
out:
	free(weight);
	return rc;
}

int generate_store_ids(const struct sales_config *cfg, struct sales *s)
{
	uint32_t n = (uint32_t)cfg->stores;

	s->store_id = malloc(n * sizeof *s->store_id);
	if (s->store_id == NULL)
		return -1;
	s->nstores = n;
	for (uint32_t i = 0; i < n; i++)
		s->store_id[i] = i + 1;
	return 0;
}

/* Stores 1..N of differing sizes (one in eight a flagship three times
 * bigger); one in ten opens during the first half of the period.  Store 1
 * is open from day 0. */
static int gen_stores(struct gen *g)
{
	uint32_t n = (uint32_t)g->cfg->stores;

	g->store_weight = malloc(n * sizeof *g->store_weight);
	g->store_open = malloc(n * sizeof *g->store_open);
	if (generate_store_ids(g->cfg, g->s) != 0 || g->store_weight == NULL ||
	    g->store_open == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t w = 40 + rng_below(&g->rng, 160);
		if (rng_below(&g->rng, 8) == 0)
			w *= 3;
		g->store_weight[i] = w;
		g->store_open[i] = 0;
		if (i > 0 && rng_below(&g->rng, 10) == 0)
			g->store_open[i] = rng_below(&g->rng, g->ndays / 2 + 1);
	}
	return 0;
}

/* A few promotions of popular products: 7-21 days at 15-40% off. */
static void gen_promos(struct gen *g)
{
	uint32_t top = (uint32_t)g->cfg->products;

	g->npromos = 1 + g->ndays / 45;
	if (g->npromos > MAX_PROMOS)
		g->npromos = MAX_PROMOS;
	if (top > 40)
		top = 40;
	for (size_t i = 0; i < g->npromos; i++) {
		struct promo *p = &g->promo[i];
		uint32_t off = 15 + rng_below(&g->rng, 26);
		p->product = g->pop_product[rng_below(&g->rng, top)];
		p->first = rng_below(&g->rng, g->ndays);
		p->last = p->first + 6 + rng_below(&g->rng, 15);
		p->price = g->s->product[p->product].list_price * (100 - off) / 100;
		if (p->price == 0)
			p->price = 1;
	}
}

/* ---- step 2: the counts (integer arithmetic, no draw) -------------------- */

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

/* Rows of store k on days before d (open day <= d <= ndays): its share of
 * its rows by the weights of its open days, rounded cumulatively.  At most
 * 1e8 rows x 3660 days x 21,000 < 2^63: no overflow. */
static size_t rows_before(const struct gen *g, size_t k, uint32_t d)
{
	uint64_t n = g->s->store_off[k + 1] - g->s->store_off[k];
	uint64_t open = g->cum_day[g->store_open[k]];

	if (d <= g->store_open[k])
		return 0;
	return (size_t)(n * (g->cum_day[d] - open) / (g->cum_day[g->ndays] - open));
}

/* store_off: --rows split among the stores by weight x the day weight of
 * the days each is open (a store opening late sells less), cumulative
 * rounding so the regions add up to exactly --rows; first_block likewise. */
static int gen_counts(struct gen *g)
{
	size_t n = g->s->nstores;
	uint64_t total = 0, cum = 0;

	g->cum_day = malloc((g->ndays + 1) * sizeof *g->cum_day);
	g->s->store_off = malloc((n + 1) * sizeof *g->s->store_off);
	g->first_block = malloc((n + 1) * sizeof *g->first_block);
	if (g->cum_day == NULL || g->s->store_off == NULL || g->first_block == NULL)
		return -1;
	g->cum_day[0] = 0;
	for (uint32_t d = 0; d < g->ndays; d++)
		g->cum_day[d + 1] = g->cum_day[d] + day_weight(g->s->first_day + d);
	for (size_t k = 0; k < n; k++)
		total += g->store_weight[k] * (g->cum_day[g->ndays] - g->cum_day[g->store_open[k]]);
	g->s->store_off[0] = g->first_block[0] = 0;
	for (size_t k = 0; k < n; k++) {
		cum += g->store_weight[k] * (g->cum_day[g->ndays] - g->cum_day[g->store_open[k]]);
		/* rows x mass can pass 2^64 (1e8 x 4.6e14): 128-bit product. */
		g->s->store_off[k + 1] = (size_t)((unsigned __int128)g->s->ntxn * cum / total);
		g->first_block[k + 1] = g->first_block[k] +
			(g->s->store_off[k + 1] - g->s->store_off[k] + GEN_BLOCK - 1) / GEN_BLOCK;
	}
	return 0;
}

/* ---- step 3: the rows, one block per call, on the setup threads -------- */

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

/* A product by popularity: one draw, its high half the bucket, its low
 * half the threshold. */
static inline uint32_t alias_pick(const struct gen *g, uint64_t *rng)
{
	uint64_t u = rng_next(rng);
	const struct alias *a = &g->pop[((u >> 32) * g->s->nproducts) >> 32];
	uint32_t x = (uint32_t)(((u & 0xffffffffu) * g->pop_total) >> 32);

	return x < a->prob ? a->product : a->other;
}

/* A product for a sale on day d: by popularity, but a running promotion
 * draws one sale in twenty to itself. */
static uint32_t gen_product(const struct gen *g, uint64_t *rng, uint32_t d)
{
	for (size_t i = 0; i < g->npromos; i++)
		if (d >= g->promo[i].first && d <= g->promo[i].last &&
		    rng_below(rng, 20) == 0)
			return g->promo[i].product;
	return alias_pick(g, rng);
}

/* Units in one sale: mostly 1-3, now and then a case of 6, 12 or 24. */
static uint32_t gen_qty(uint64_t *rng)
{
	static const uint32_t qty[] = { 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
					3, 3, 4, 5, 6, 2, 1, 1, 12, 1, 24, 1 };
	uint32_t i = rng_below(rng, sizeof qty / sizeof qty[0]);

	/* The big packs are rare: keep one draw in twelve of them. */
	if (qty[i] >= 12 && rng_below(rng, 12) != 0)
		return 1;
	return qty[i];
}

/* One sale on calendar day d. */
static struct txn gen_row(const struct gen *g, uint64_t *rng, uint32_t d)
{
	struct txn t;
	const struct promo *p;

	t.day = d;
	t.product = gen_product(g, rng, d);
	p = gen_promo_on(g, t.product, d);
	/* One draw per statement: C leaves the order of operands unspecified,
	 * and the data must not depend on the compiler's choice. */
	t.qty = gen_qty(rng);
	if (p && rng_below(rng, 3) == 0)
		t.qty++; /* a promotion sells an extra unit now and then */
	t.price = p ? p->price : g->s->product[t.product].list_price;
	return t;
}

/* The store whose blocks include block b: the last k with first_block[k] <= b. */
static size_t block_store(const struct gen *g, size_t b)
{
	size_t lo = 0, hi = g->s->nstores; /* first_block[lo] <= b < first_block[hi] */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->first_block[mid] <= b)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The day of store k's row i: the last d with rows_before(k, d) <= i. */
static uint32_t row_day(const struct gen *g, size_t k, size_t i)
{
	uint32_t lo = g->store_open[k], hi = g->ndays;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rows_before(g, k, mid) <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* cowrun_block_fn: block b's rows, from its own stream, into s->txn.  Each
 * block writes its own rows only, so blocks run in any order at once. */
static int gen_block(void *ctx, size_t b, unsigned thread)
{
	const struct gen *g = ctx;
	size_t k = block_store(g, b), j = b - g->first_block[k];
	size_t n = g->s->store_off[k + 1] - g->s->store_off[k];
	size_t i = j * GEN_BLOCK, end = i + GEN_BLOCK < n ? i + GEN_BLOCK : n;
	uint32_t d = row_day(g, k, i);
	size_t next_day = rows_before(g, k, d + 1);
	struct txn *out = g->s->txn + g->s->store_off[k];
	uint64_t rng = mix64(mix64((uint64_t)g->cfg->seed) ^ ((uint64_t)k << 32 | j));

	(void)thread;
	for (; i < end; i++) {
		while (i >= next_day)
			next_day = rows_before(g, k, ++d + 1);
		out[i] = gen_row(g, &rng, d);
	}
	return 0;
}

/* ---- the loader ----------------------------------------------------------- */

static void gen_free(struct gen *g)
{
	free(g->store_weight);
	free(g->store_open);
	free(g->cum_day);
	free(g->first_block);
	free(g->pop);
	free(g->pop_product);
}

int generate_period(const struct sales_config *cfg, uint32_t *first)
{
	if (parse_date(cfg->start_date, first) != 0 ||
	    *first + cfg->days - 1 > day_number(9999, 12, 31)) {
		cowrun_error("bad --start-date '%s' (expected a date YYYY-MM-DD, "
			     "1000-01-01 or later, the period ending by 9999-12-31)",
			     cfg->start_date);
		return -1;
	}
	return 0;
}

int generate_load(const struct sales_config *cfg, struct sales *s)
{
	struct gen g = { .rng = (uint64_t)cfg->seed, .cfg = cfg, .s = s,
			 .ndays = (uint32_t)cfg->days };
	uint32_t first;
	int rc = -1;

	if (generate_period(cfg, &first) != 0)
		return -1;
	s->ntxn = (size_t)cfg->rows;
	s->txn_bytes = s->ntxn * sizeof *s->txn;
	/* The bulk of the shared state: in the runner's setup arena (huge
	 * pages, so fork() stays cheap; read-only after setup).  Its pages
	 * are first touched by the blocks, on every thread. */
	s->txn = cowrun_alloc_aligned(s->txn_bytes, 64);
	if (s->txn == NULL || index_calendar(s, first, first + g.ndays - 1) != 0 ||
	    gen_catalogue(&g) != 0 || gen_stores(&g) != 0 || gen_counts(&g) != 0) {
		cowrun_error("out of memory generating %lld rows", cfg->rows);
		goto out;
	}
	gen_promos(&g);
	if (cowrun_parallel(g.first_block[s->nstores], gen_block, &g) != 0) {
		cowrun_error("generating %lld rows failed", cfg->rows);
		goto out;
	}
	rc = 0;
out:
	gen_free(&g);
	return rc;
}
