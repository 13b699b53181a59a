/*
 * sales.c - the nightly sales-report workload.
 *
 * Setup (parent, once) reads a CSV of transactions or generates a
 * deterministic synthetic data set, then builds the read-only indexes every
 * report needs: the transactions grouped by store (one array, counting
 * sorted, plus offsets), the product catalogue and the calendar.  Each task
 * is one store: the worker writes that store manager's report
 * (store-NNNN.txt) and emits the store's totals; the parent merges them in
 * task order and prints the company summary.
 *
 * Money is int64 cents throughout and every printed ratio comes from integer
 * arithmetic, so all output is byte-identical at any -j and in every mode.
 */
#define _GNU_SOURCE
#include "cowrun.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#define CSV_HEADER      "date,store,product,quantity,unit_price"
#define CSV_FIELDS      5
#define MAX_ID          999999999LL     /* store and product ids */
#define MAX_QUANTITY    1000000LL
#define MAX_PRICE       100000000LL     /* cents: $1,000,000.00 a unit */
#define MAX_NAME        64              /* bytes in a product name */
#define MAX_SPAN_DAYS   36525           /* a CSV may cover 100 years */
#define TOP_PRODUCTS    10
#define TOP_STORES      5
#define MAX_PROMOS      8
#define NO_NAME         UINT32_MAX
#define NO_CATEGORY     UINT32_MAX
#define NUMBUF          48              /* fits any formatted number */

/* ---- options ------------------------------------------------------------ */

struct sales_config {
	const char *input;      /* CSV path, or NULL to generate */
	const char *start_date; /* first day of generated data */
	long long rows, stores, products, days, seed;
};

static const struct sales_config sales_defaults = {
	.input = NULL,
	.start_date = "2025-01-01",
	.rows = 40000000,
	.stores = 64,
	.products = 2000,
	.days = 365,
	.seed = 1,
};

static const struct cowrun_option sales_options[] = {
	{ "input", COWRUN_OPT_STRING, offsetof(struct sales_config, input),
	  0, 0, "FILE", "read this CSV instead of generating data" },
	{ "rows", COWRUN_OPT_INT, offsetof(struct sales_config, rows),
	  1, 100000000, "N", "transactions to generate" },
	{ "stores", COWRUN_OPT_INT, offsetof(struct sales_config, stores),
	  1, 9999, "N", "stores to generate (one report each)" },
	{ "products", COWRUN_OPT_INT, offsetof(struct sales_config, products),
	  1, 1000000, "N", "products in the generated catalogue" },
	{ "days", COWRUN_OPT_INT, offsetof(struct sales_config, days),
	  1, 3660, "N", "days of generated sales" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct sales_config, seed),
	  0, 4294967295.0, "N", "seed of the generated data" },
	{ "start-date", COWRUN_OPT_STRING, offsetof(struct sales_config, start_date),
	  0, 0, "YYYY-MM-DD", "first day of the generated data" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- the shared state ----------------------------------------------------- */

/* One sale (a CSV row).  16 bytes, so a store's slice streams well. */
struct txn {
	uint32_t day;     /* calendar index (before indexing: a day number) */
	uint32_t product; /* catalogue index */
	uint32_t qty;
	uint32_t price;   /* unit price, cents */
};

struct product {
	uint32_t id;         /* numeric id; 0 for a product known by name */
	uint32_t name;       /* offset into the name pool, or NO_NAME */
	uint32_t category;   /* index into categories[], or NO_CATEGORY */
	uint32_t list_price; /* cents; for a CSV, the highest price seen */
};

struct day {
	char date[11];   /* YYYY-MM-DD */
	uint8_t weekday; /* 0 = Monday */
	uint32_t month;  /* index into the month labels */
};

/* One store's totals: the result record a worker sends to the parent.
 * Only 8-byte fields, so the layout has no padding on any ABI; native byte
 * order (saved records are read back on a machine of the same kind). */
struct sales_result {
	int64_t store_id;
	int64_t revenue;        /* cents */
	int64_t units;
	int64_t transactions;
	int64_t discount;       /* cents below list price */
	int64_t trading_days;   /* days with at least one sale */
	int64_t best_day;       /* calendar index, -1 if no sales */
	int64_t best_day_revenue;
};
_Static_assert(sizeof(struct sales_result) == 64, "result record layout");

/* What merge() collects.  Allocated on its own in setup and written only
 * by the parent, so the workers never touch (and never copy) its pages. */
struct sales_acc {
	struct sales_result *result; /* per task, valid where merged[k] */
	unsigned char *merged;
	size_t nmerged;
};

struct sales {
	struct sales_config cfg;
	struct txn *txn;        /* grouped by store, in the setup arena */
	size_t ntxn, txn_bytes;
	size_t *store_off;      /* store k's sales: txn[off[k] .. off[k+1]) */
	uint32_t *store_id;     /* ascending */
	size_t nstores;
	struct product *product; /* numeric ids ascending, then names */
	size_t nproducts;
	char *names;            /* NUL-separated product names */
	struct day *day;
	size_t ndays;
	char (*month)[8];       /* "YYYY-MM" per month index */
	size_t nmonths;
	int has_categories;
	struct sales_acc *acc;
};

/* Categories of the generated catalogue, with their price ranges. */
static const struct category {
	const char *name;
	uint32_t min_price, max_price; /* cents */
	const char *noun[6];
} categories[] = {
	{ "Produce", 79, 599, { "Apples", "Bananas", "Tomatoes", "Lettuce", "Carrots", "Grapes" } },
	{ "Dairy", 89, 799, { "Milk", "Yogurt", "Cheddar", "Butter", "Cream", "Eggs" } },
	{ "Bakery", 99, 699, { "Sourdough", "Bagels", "Croissants", "Muffins", "Rye Bread", "Baguette" } },
	{ "Beverages", 69, 1499, { "Cola", "Orange Juice", "Coffee", "Green Tea", "Sparkling Water", "Lemonade" } },
	{ "Snacks", 99, 649, { "Crisps", "Pretzels", "Trail Mix", "Cookies", "Popcorn", "Granola Bars" } },
	{ "Frozen", 199, 1299, { "Pizza", "Ice Cream", "Peas", "Fish Fingers", "Dumplings", "Berries" } },
	{ "Pantry", 89, 999, { "Pasta", "Rice", "Olive Oil", "Tomato Sauce", "Cereal", "Peanut Butter" } },
	{ "Household", 149, 2499, { "Detergent", "Paper Towels", "Dish Soap", "Sponges", "Trash Bags", "Light Bulbs" } },
	{ "Personal Care", 199, 1999, { "Shampoo", "Toothpaste", "Soap", "Deodorant", "Razors", "Sunscreen" } },
	{ "Meat", 299, 2999, { "Chicken Breast", "Ground Beef", "Pork Chops", "Bacon", "Salmon", "Sausages" } },
};
#define NCATEGORIES (sizeof categories / sizeof categories[0])

static const char *const adjectives[] = {
	"Fresh", "Organic", "Classic", "Family", "Value", "Premium", "Farm", "Daily",
};

static const char *const weekday_name[7] = {
	"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun",
};

/* ---- small helpers ---------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

/* A "day number" counts days from 1000-01-01, the earliest date accepted,
 * so it fits a uint32_t. */
static int64_t day_zero(void)
{
	return days_from_civil(1000, 1, 1);
}

static uint32_t day_number(int y, unsigned m, unsigned d)
{
	return (uint32_t)(days_from_civil(y, m, d) - day_zero());
}

static unsigned days_in_month(int y, unsigned m)
{
	static const unsigned len[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return len[m - 1] + (m == 2 && leap);
}

static unsigned digits_value(const char *s, size_t n)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

/* Parse a strict YYYY-MM-DD (years 1000-9999) into a day number.
 * Returns 0, or -1 if s is not exactly that or not a real date. */
static int parse_date(const char *s, uint32_t *out)
{
	static const char pattern[] = "dddd-dd-dd";

	for (size_t i = 0; i < sizeof pattern - 1; i++) {
		int digit = s[i] >= '0' && s[i] <= '9';
		if (pattern[i] == 'd' ? !digit : s[i] != '-')
			return -1;
	}
	if (s[sizeof pattern - 1] != '\0')
		return -1;
	int y = (int)digits_value(s, 4);
	unsigned m = digits_value(s + 5, 2), d = digits_value(s + 8, 2);
	if (y < 1000 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
		return -1;
	*out = day_number(y, m, d);
	return 0;
}

/* Writes n as exactly `width` digits; the caller bounds n. */
static void put_digits(char *out, unsigned n, int width)
{
	for (int i = width - 1; i >= 0; i--, n /= 10)
		out[i] = (char)('0' + n % 10);
}

/* Parse a whole field as a decimal integer in [min, max].  Digits only:
 * a sign or a space in a CSV field is more likely damage than intent. */
static int parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse "3", "3.4" or "3.49" into cents (at most MAX_PRICE). */
static int parse_price(const char *s, uint32_t *cents)
{
	char whole[16];
	const char *dot = strchr(s, '.');
	size_t wlen = dot ? (size_t)(dot - s) : strlen(s);
	long long units;
	unsigned frac = 0;

	if (wlen == 0 || wlen >= sizeof whole)
		return -1;
	memcpy(whole, s, wlen);
	whole[wlen] = '\0';
	if (parse_int(whole, 0, MAX_PRICE / 100, &units) != 0)
		return -1;
	if (dot) {
		size_t flen = strlen(dot + 1);
		if (flen < 1 || flen > 2 || strspn(dot + 1, "0123456789") != flen)
			return -1;
		frac = digits_value(dot + 1, flen) * (flen == 1 ? 10 : 1);
	}
	if (units * 100 + frac > MAX_PRICE)
		return -1;
	*cents = (uint32_t)(units * 100 + frac);
	return 0;
}

/* Room for `need` elements of `size` bytes in p (capacity *cap), doubling.
 * Returns the possibly moved array, or NULL with p still valid and *cap
 * unchanged. */
static void *grow_array(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;

	if (need <= *cap)
		return p;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return NULL;
		n *= 2;
	}
	p = realloc(p, n * size);
	if (p)
		*cap = n;
	return p;
}

/* ---- number formatting (integers only, so output never varies) ---------- */

/* "1,234,567" into buf (NUMBUF bytes). */
static const char *fmt_count(char *buf, int64_t v)
{
	char tmp[NUMBUF];
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	int n = 0, digits = 0;

	do {
		if (digits > 0 && digits % 3 == 0)
			tmp[n++] = ',';
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
		digits++;
	} while (u > 0);
	if (v < 0)
		tmp[n++] = '-';
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

/* "$1,234.56" into buf (NUMBUF bytes). */
static const char *fmt_money(char *buf, int64_t cents)
{
	char whole[32]; /* 19 digits and 6 commas at most */
	uint64_t u = cents < 0 ? -(uint64_t)cents : (uint64_t)cents;

	fmt_count(whole, (int64_t)(u / 100));
	snprintf(buf, NUMBUF, "%s$%s.%02u", cents < 0 ? "-" : "", whole,
		 (unsigned)(u % 100));
	return buf;
}

/* part / whole, rounded half up, as "12.3%"; "-" when whole is 0.  Setup
 * caps total revenue so part * 1000 cannot overflow. */
static const char *fmt_share(char *buf, int64_t part, int64_t whole)
{
	if (whole <= 0) {
		snprintf(buf, NUMBUF, "-");
		return buf;
	}
	int64_t pm = (part * 1000 + whole / 2) / whole;
	snprintf(buf, NUMBUF, "%" PRId64 ".%" PRId64 "%%", pm / 10, pm % 10);
	return buf;
}

/* num / den rounded half up, as "$12.34" (den > 0). */
static const char *fmt_avg_money(char *buf, int64_t num, int64_t den)
{
	return fmt_money(buf, den > 0 ? (num + den / 2) / den : 0);
}

/* num / den with two decimals, rounded half up, as "1.90" (den > 0). */
static const char *fmt_ratio(char *buf, int64_t num, int64_t den)
{
	int64_t h = den > 0 ? (num * 100 + den / 2) / den : 0;

	snprintf(buf, NUMBUF, "%" PRId64 ".%02" PRId64, h / 100, h % 100);
	return buf;
}

static const char *plural(int64_t n)
{
	return n == 1 ? "" : "s";
}

/* How reports name a product: "1234 Organic Apples", "1234" or a CSV name. */
static const char *product_label(const struct sales *s, uint32_t idx,
				 char *buf, size_t size)
{
	const struct product *p = &s->product[idx];

	if (p->id != 0 && p->name != NO_NAME)
		snprintf(buf, size, "%" PRIu32 " %s", p->id, s->names + p->name);
	else if (p->id != 0)
		snprintf(buf, size, "%" PRIu32, p->id);
	else
		snprintf(buf, size, "%s", s->names + p->name);
	return buf;
}

/* ---- raw data: what the CSV reader or the generator hands to indexing --- */

struct raw {
	struct txn *txn;        /* day = day number */
	uint32_t *store;        /* per row: index into store_id[] */
	size_t n, txn_cap, store_cap;
	uint32_t *store_id;     /* distinct ids, first-appearance order */
	size_t nstores, id_cap;
	struct product *product;
	size_t nproducts, product_cap;
	char *names;
	size_t names_len, names_cap;
	uint32_t first_day, last_day; /* day numbers the calendar covers */
};

static void raw_free(struct raw *raw)
{
	free(raw->txn);
	free(raw->store);
	free(raw->store_id);
	free(raw->product);
	free(raw->names);
	memset(raw, 0, sizeof *raw);
}

static int raw_reserve(struct raw *raw, size_t rows)
{
	void *t = grow_array(raw->txn, &raw->txn_cap, rows, sizeof *raw->txn);

	if (t == NULL)
		return -1;
	raw->txn = t;
	t = grow_array(raw->store, &raw->store_cap, rows, sizeof *raw->store);
	if (t == NULL)
		return -1;
	raw->store = t;
	return 0;
}

/* Append a store id; returns its index or -1 if memory ran out. */
static int64_t raw_add_store(struct raw *raw, uint32_t id)
{
	void *p = grow_array(raw->store_id, &raw->id_cap, raw->nstores + 1,
			     sizeof *raw->store_id);

	if (p == NULL)
		return -1;
	raw->store_id = p;
	raw->store_id[raw->nstores] = id;
	return (int64_t)raw->nstores++;
}

/* Append a product (its name copied into the pool unless NULL); returns
 * its index or -1 if memory ran out. */
static int64_t raw_add_product(struct raw *raw, uint32_t id, const char *name,
			       size_t len)
{
	struct product p = { id, NO_NAME, NO_CATEGORY, 0 };
	void *q = grow_array(raw->product, &raw->product_cap,
			     raw->nproducts + 1, sizeof *raw->product);

	if (q == NULL)
		return -1;
	raw->product = q;
	if (name) {
		q = grow_array(raw->names, &raw->names_cap,
			       raw->names_len + len + 1, 1);
		if (q == NULL)
			return -1;
		raw->names = q;
		memcpy(raw->names + raw->names_len, name, len);
		raw->names[raw->names_len + len] = '\0';
		p.name = (uint32_t)raw->names_len;
		raw->names_len += len + 1;
	}
	raw->product[raw->nproducts] = p;
	return (int64_t)raw->nproducts++;
}

/* ---- hash map for the CSV's store ids and product keys -------------------- */

struct hslot {
	uint64_t hash;
	uint32_t val;  /* index into the raw store or product array */
	uint32_t used;
};

struct hmap {
	struct hslot *slot;
	size_t cap, n;  /* cap: a power of two, at least twice n */
};

typedef int (*hmap_eq)(const struct raw *raw, uint32_t val, const void *key);

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The slot holding `key`, or the empty slot where it belongs. */
static struct hslot *hmap_find(const struct hmap *m, uint64_t h, hmap_eq eq,
			       const struct raw *raw, const void *key)
{
	size_t i = h & (m->cap - 1);

	while (m->slot[i].used &&
	       !(m->slot[i].hash == h && eq(raw, m->slot[i].val, key)))
		i = (i + 1) & (m->cap - 1);
	return &m->slot[i];
}

/* Make room for one more entry, keeping the load under one half. */
static int hmap_reserve(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct hslot *slot;

	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	slot = calloc(cap, sizeof *slot);
	if (slot == NULL)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j = m->slot[i].hash & (cap - 1);
		if (!m->slot[i].used)
			continue;
		while (slot[j].used)
			j = (j + 1) & (cap - 1);
		slot[j] = m->slot[i];
	}
	free(m->slot);
	m->slot = slot;
	m->cap = cap;
	return 0;
}

/* ---- CSV reader ----------------------------------------------------------- */

struct csv {
	const char *path;
	FILE *f;
	size_t line;
	struct hmap stores, products;
	int64_t revenue; /* running total, to refuse an overflowing file */
};

/* A product as the CSV names it: a numeric id, or (id 0) a name. */
struct pkey {
	uint32_t id;
	const char *name;
	size_t len;
};

static int store_eq(const struct raw *raw, uint32_t val, const void *key)
{
	return raw->store_id[val] == *(const uint32_t *)key;
}

static int product_eq(const struct raw *raw, uint32_t val, const void *key)
{
	const struct pkey *k = key;
	const struct product *p = &raw->product[val];

	if (k->id != 0 || p->id != 0)
		return p->id == k->id;
	return strncmp(raw->names + p->name, k->name, k->len) == 0 &&
	       raw->names[p->name + k->len] == '\0';
}

static int csv_bad(const struct csv *c, const char *what, const char *value,
		   const char *why)
{
	cowrun_error("%s:%zu: bad %s '%.40s' (%s)", c->path, c->line, what,
		     value, why);
	return -1;
}

static int csv_nomem(const struct csv *c)
{
	cowrun_error("%s:%zu: out of memory", c->path, c->line);
	return -1;
}

/* The store index of id, adding it on first sight; -1 if memory ran out. */
static int64_t csv_store(struct csv *c, struct raw *raw, uint32_t id)
{
	struct hslot *slot;
	int64_t idx;

	if (hmap_reserve(&c->stores) != 0)
		return -1;
	slot = hmap_find(&c->stores, mix64(id), store_eq, raw, &id);
	if (slot->used)
		return slot->val;
	idx = raw_add_store(raw, id);
	if (idx < 0)
		return -1;
	*slot = (struct hslot){ mix64(id), (uint32_t)idx, 1 };
	c->stores.n++;
	return idx;
}

/* The product index of key, adding it on first sight; -1 if memory ran
 * out. */
static int64_t csv_product(struct csv *c, struct raw *raw, const struct pkey *key)
{
	uint64_t h = key->id ? mix64(key->id) : 14695981039346656037ULL;
	struct hslot *slot;
	int64_t idx;

	for (size_t i = 0; key->id == 0 && i < key->len; i++)
		h = (h ^ (unsigned char)key->name[i]) * 1099511628211ULL;
	if (hmap_reserve(&c->products) != 0)
		return -1;
	slot = hmap_find(&c->products, h, product_eq, raw, key);
	if (slot->used)
		return slot->val;
	idx = raw_add_product(raw, key->id, key->id ? NULL : key->name, key->len);
	if (idx < 0)
		return -1;
	*slot = (struct hslot){ h, (uint32_t)idx, 1 };
	c->products.n++;
	return idx;
}

/* A product field: a positive integer id, or a name that does not start
 * with a digit, has no quotes or control characters and no edge spaces. */
static int csv_product_key(const struct csv *c, const char *s, struct pkey *key)
{
	long long id;
	size_t len = strlen(s);

	*key = (struct pkey){ 0, s, len };
	if (*s >= '0' && *s <= '9') {
		if (parse_int(s, 1, MAX_ID, &id) != 0)
			return csv_bad(c, "product", s, "expected a positive integer id or a name");
		key->id = (uint32_t)id;
		return 0;
	}
	if (len == 0 || len > MAX_NAME || s[0] == ' ' || s[len - 1] == ' ')
		return csv_bad(c, "product", s, "expected an id or a name of 1 to 64 characters");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == 0x7f)
			return csv_bad(c, "product", s, "quotes and control characters are not allowed");
	return 0;
}

/* Split line at commas into field[]; returns the number of fields. */
static int csv_split(char *line, char **field, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		char *comma = strchr(p, ',');
		if (n < max)
			field[n] = p;
		n++;
		if (comma == NULL)
			return n;
		*comma = '\0';
		p = comma;
	}
}

/* Parse one data row's fields (column order, so the first bad field is
 * the one named) into t, id and key. */
static int csv_fields(const struct csv *c, char **field, struct txn *t,
		      uint32_t *store, struct pkey *key)
{
	long long v;

	if (parse_date(field[0], &t->day) != 0)
		return csv_bad(c, "date", field[0], "expected a real date YYYY-MM-DD");
	if (parse_int(field[1], 1, MAX_ID, &v) != 0)
		return csv_bad(c, "store", field[1], "expected a positive integer id");
	*store = (uint32_t)v;
	if (csv_product_key(c, field[2], key) != 0)
		return -1;
	if (parse_int(field[3], 1, MAX_QUANTITY, &v) != 0)
		return csv_bad(c, "quantity", field[3], "expected an integer from 1 to 1000000");
	t->qty = (uint32_t)v;
	if (parse_price(field[4], &t->price) != 0)
		return csv_bad(c, "unit price", field[4],
			       "expected a price like 3.49: at most 2 decimals, up to 1000000.00");
	return 0;
}

/* Add one row's sale to raw, checking the company total still fits the
 * integer arithmetic the reports do (part * 1000 in fmt_share). */
static int csv_add(struct csv *c, struct raw *raw, struct txn t, uint32_t id,
		   const struct pkey *key)
{
	int64_t store = csv_store(c, raw, id);
	int64_t product = store < 0 ? -1 : csv_product(c, raw, key);

	if (product < 0 || raw_reserve(raw, raw->n + 1) != 0)
		return csv_nomem(c);
	c->revenue += (int64_t)t.qty * t.price;
	if (c->revenue > INT64_MAX / 1000) {
		cowrun_error("%s:%zu: total revenue too large", c->path, c->line);
		return -1;
	}
	if (raw->product[product].list_price < t.price)
		raw->product[product].list_price = t.price;
	if (raw->n == 0 || t.day < raw->first_day)
		raw->first_day = t.day;
	if (raw->n == 0 || t.day > raw->last_day)
		raw->last_day = t.day;
	t.product = (uint32_t)product;
	raw->txn[raw->n] = t;
	raw->store[raw->n++] = (uint32_t)store;
	return 0;
}

static int csv_row(struct csv *c, struct raw *raw, char *line)
{
	char *field[CSV_FIELDS];
	struct txn t;
	struct pkey key;
	uint32_t id;
	int n;

	if (*line == '\0')
		return 0; /* blank lines carry nothing: skip them */
	n = csv_split(line, field, CSV_FIELDS);
	if (n != CSV_FIELDS) {
		cowrun_error("%s:%zu: expected %d fields (%s), found %d",
			     c->path, c->line, CSV_FIELDS, CSV_HEADER, n);
		return -1;
	}
	if (csv_fields(c, field, &t, &id, &key) != 0)
		return -1;
	return csv_add(c, raw, t, id, &key);
}

/* Read the next line into *buf without its "\n" or "\r\n".  Returns 1, 0
 * at end of file, or -1 after a message (read error, NUL byte). */
static int csv_getline(struct csv *c, char **buf, size_t *cap)
{
	ssize_t len = getline(buf, cap, c->f);

	if (len < 0) {
		if (!ferror(c->f))
			return 0;
		cowrun_error("cannot read '%s': %s", c->path, strerror(errno));
		return -1;
	}
	c->line++;
	if (strlen(*buf) != (size_t)len) {
		cowrun_error("%s:%zu: NUL byte in line", c->path, c->line);
		return -1;
	}
	if (len > 0 && (*buf)[len - 1] == '\n')
		(*buf)[--len] = '\0';
	if (len > 0 && (*buf)[len - 1] == '\r')
		(*buf)[--len] = '\0';
	return 1;
}

static int csv_header(struct csv *c, char **buf, size_t *cap)
{
	int r = csv_getline(c, buf, cap);
	const char *h = *buf;

	if (r < 0)
		return -1;
	if (r == 0) {
		cowrun_error("%s: empty file (expected the header '%s')", c->path, CSV_HEADER);
		return -1;
	}
	if (strncmp(h, "\xEF\xBB\xBF", 3) == 0)
		h += 3; /* a UTF-8 byte order mark, as spreadsheets write */
	if (strcmp(h, CSV_HEADER) != 0) {
		cowrun_error("%s:1: bad header '%.60s' (expected '%s')", c->path, h, CSV_HEADER);
		return -1;
	}
	return 0;
}

/* After the last row: the file must have had data, over a sane span. */
static int csv_check(const struct csv *c, const struct raw *raw)
{
	if (raw->n == 0) {
		cowrun_error("%s: no data rows", c->path);
		return -1;
	}
	if (raw->last_day - raw->first_day >= MAX_SPAN_DAYS) {
		cowrun_error("%s: dates span more than 100 years", c->path);
		return -1;
	}
	return 0;
}

/* Read the CSV at path into raw.  Returns 0, or -1 after a message. */
static int csv_read(const char *path, struct raw *raw)
{
	struct csv c = { .path = path };
	char *buf = NULL;
	size_t cap = 0;
	int r, rc = -1;

	c.f = fopen(path, "r");
	if (c.f == NULL) {
		cowrun_error("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (csv_header(&c, &buf, &cap) != 0)
		goto out;
	while ((r = csv_getline(&c, &buf, &cap)) > 0)
		if (csv_row(&c, raw, buf) != 0)
			goto out;
	if (r == 0 && csv_check(&c, raw) == 0)
		rc = 0;
out:
	free(buf);
	free(c.stores.slot);
	free(c.products.slot);
	fclose(c.f);
	return rc;
}

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

static int generate(const struct sales_config *cfg, struct raw *raw)
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

/* ---- indexing: raw data -> the shared state --------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Stores in ascending id order; rank[raw index] = task number. */
static int index_stores(struct sales *s, const struct raw *raw, uint32_t *rank)
{
	uint64_t *key = malloc(raw->nstores * sizeof *key);

	s->store_id = malloc(raw->nstores * sizeof *s->store_id);
	if (key == NULL || s->store_id == NULL) {
		free(key);
		return -1;
	}
	for (size_t i = 0; i < raw->nstores; i++)
		key[i] = (uint64_t)raw->store_id[i] << 32 | i;
	qsort(key, raw->nstores, sizeof *key, cmp_u64);
	for (size_t i = 0; i < raw->nstores; i++) {
		s->store_id[i] = (uint32_t)(key[i] >> 32);
		rank[(uint32_t)key[i]] = (uint32_t)i;
	}
	s->nstores = raw->nstores;
	free(key);
	return 0;
}

struct psort {
	struct product p;
	uint32_t old;
	const char *names;
};

/* Numeric ids first, ascending; then names in byte order. */
static int cmp_product(const void *a, const void *b)
{
	const struct psort *x = a, *y = b;

	if (x->p.id != 0 && y->p.id != 0)
		return (x->p.id > y->p.id) - (x->p.id < y->p.id);
	if (x->p.id != 0 || y->p.id != 0)
		return x->p.id != 0 ? -1 : 1;
	return strcmp(x->names + x->p.name, y->names + y->p.name);
}

/* The catalogue in that order; rank[raw index] = catalogue index. */
static int index_products(struct sales *s, const struct raw *raw, uint32_t *rank)
{
	struct psort *ps = malloc(raw->nproducts * sizeof *ps);

	s->product = malloc(raw->nproducts * sizeof *s->product);
	if (ps == NULL || s->product == NULL) {
		free(ps);
		return -1;
	}
	for (size_t i = 0; i < raw->nproducts; i++)
		ps[i] = (struct psort){ raw->product[i], (uint32_t)i, raw->names };
	qsort(ps, raw->nproducts, sizeof *ps, cmp_product);
	for (size_t i = 0; i < raw->nproducts; i++) {
		s->product[i] = ps[i].p;
		rank[ps[i].old] = (uint32_t)i;
		s->has_categories |= ps[i].p.category != NO_CATEGORY;
	}
	s->nproducts = raw->nproducts;
	free(ps);
	return 0;
}

/* Counting sort by store into one array, stable, so each store's sales
 * stay in file (or generation) order; days become calendar indexes. */
static int index_txns(struct sales *s, const struct raw *raw,
		      const uint32_t *srank, const uint32_t *prank)
{
	size_t *next = malloc(s->nstores * sizeof *next);

	s->store_off = calloc(s->nstores + 1, sizeof *s->store_off);
	s->txn_bytes = raw->n * sizeof *s->txn;
	/* The bulk of the shared state: in the runner's setup arena (huge
	 * pages, so fork() stays cheap; read-only after setup). */
	s->txn = cowrun_alloc_aligned(s->txn_bytes, 64);
	if (next == NULL || s->store_off == NULL || s->txn == NULL) {
		free(next);
		return -1;
	}
	for (size_t i = 0; i < raw->n; i++)
		s->store_off[srank[raw->store[i]] + 1]++;
	for (size_t k = 0; k < s->nstores; k++) {
		s->store_off[k + 1] += s->store_off[k];
		next[k] = s->store_off[k];
	}
	for (size_t i = 0; i < raw->n; i++) {
		struct txn t = raw->txn[i];
		t.day -= raw->first_day;
		t.product = prank[t.product];
		s->txn[next[srank[raw->store[i]]]++] = t;
	}
	s->ntxn = raw->n;
	free(next);
	return 0;
}

/* The calendar from first to last: date strings, weekdays, months. */
static int index_calendar(struct sales *s, uint32_t first, uint32_t last)
{
	int y, y0;
	unsigned m, m0, d;

	s->ndays = (size_t)(last - first) + 1;
	s->day = malloc(s->ndays * sizeof *s->day);
	civil_from_days(first + day_zero(), &y0, &m0, &d);
	civil_from_days(last + day_zero(), &y, &m, &d);
	s->nmonths = (size_t)((y - y0) * 12 + (int)m - (int)m0) + 1;
	s->month = malloc(s->nmonths * sizeof *s->month);
	if (s->day == NULL || s->month == NULL)
		return -1;
	for (size_t i = 0; i < s->ndays; i++) {
		int64_t z = first + day_zero() + (int64_t)i;
		struct day *day = &s->day[i];
		civil_from_days(z, &y, &m, &d);
		put_digits(day->date, (unsigned)y, 4);
		day->date[4] = day->date[7] = '-';
		put_digits(day->date + 5, m, 2);
		put_digits(day->date + 8, d, 2);
		day->date[10] = '\0';
		day->weekday = (uint8_t)(((z % 7) + 10) % 7);
		day->month = (uint32_t)((y - y0) * 12 + (int)m - (int)m0);
		memcpy(s->month[day->month], day->date, 7);
		s->month[day->month][7] = '\0';
	}
	return 0;
}

/* The merge accumulator: its own allocations, parent-only. */
static int index_acc(struct sales *s)
{
	s->acc = calloc(1, sizeof *s->acc);
	if (s->acc == NULL)
		return -1;
	s->acc->result = calloc(s->nstores, sizeof *s->acc->result);
	s->acc->merged = calloc(s->nstores, 1);
	return s->acc->result && s->acc->merged ? 0 : -1;
}

/* Build every index from raw; the name pool moves over to s. */
static int build_index(struct sales *s, struct raw *raw)
{
	uint32_t *srank = malloc(raw->nstores * sizeof *srank);
	uint32_t *prank = malloc(raw->nproducts * sizeof *prank);
	int rc = -1;

	if (srank == NULL || prank == NULL ||
	    index_stores(s, raw, srank) != 0 ||
	    index_products(s, raw, prank) != 0 ||
	    index_txns(s, raw, srank, prank) != 0 ||
	    index_calendar(s, raw->first_day, raw->last_day) != 0 ||
	    index_acc(s) != 0)
		goto out;
	s->names = raw->names;
	raw->names = NULL;
	rc = 0;
out:
	free(srank);
	free(prank);
	return rc;
}

/* ---- setup and teardown (parent) ---------------------------------------- */

/* Frees everything setup built (NULL or half-built is fine). */
static void sales_teardown(void *state)
{
	struct sales *s = state;

	if (s == NULL)
		return;
	free(s->store_off);
	free(s->store_id);
	free(s->product);
	free(s->names);
	free(s->day);
	free(s->month);
	if (s->acc) {
		free(s->acc->result);
		free(s->acc->merged);
		free(s->acc);
	}
	free(s);
}

/* Parent, once: parse the options, read or generate the sales, index them.
 * Returns the state (freed by sales_teardown), or NULL after one line on
 * stderr saying what failed; nothing is left allocated then. */
static void *sales_setup(int argc, char **argv)
{
	struct sales_config cfg = sales_defaults;
	struct raw raw = { 0 };
	struct sales *s = NULL;

	if (cowrun_parse_options(argc, argv, sales_options, &cfg) != 0)
		return NULL;
	if ((cfg.input ? csv_read(cfg.input, &raw) : generate(&cfg, &raw)) != 0)
		goto fail;
	s = calloc(1, sizeof *s);
	if (s == NULL || build_index(s, &raw) != 0) {
		cowrun_error("out of memory indexing %zu transactions", raw.n);
		goto fail;
	}
	s->cfg = cfg;
	raw_free(&raw);
	return s;
fail:
	raw_free(&raw);
	sales_teardown(s);
	return NULL;
}

static size_t sales_ntasks(const void *state)
{
	const struct sales *s = state;

	return s->nstores;
}

static void sales_task_name(const void *state, size_t k, char *buf, size_t size)
{
	const struct sales *s = state;

	snprintf(buf, size, "store-%04" PRIu32 ".txt", s->store_id[k]);
}

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
static int sales_run(const void *state, size_t k, struct cowrun_task *task)
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

static int result_valid(const struct sales *s, size_t k, const struct sales_result *r)
{
	return r->store_id == s->store_id[k] && r->revenue >= 0 && r->units >= 0 &&
	       r->transactions >= 0 && r->discount >= 0 && r->trading_days >= 0 &&
	       r->trading_days <= (int64_t)s->ndays && r->best_day >= -1 &&
	       r->best_day < (int64_t)s->ndays && r->best_day_revenue >= 0;
}

/* Parent, in task order: check store k's record and keep it in the
 * accumulator (the only memory merge writes). */
static int sales_merge(void *state, size_t k, const void *record, size_t len)
{
	struct sales *s = state;
	struct sales_result r;

	if (k >= s->nstores || len != sizeof r) {
		cowrun_error("task %zu: result record of %zu bytes, expected %zu",
			     k, len, sizeof r);
		return -1;
	}
	memcpy(&r, record, sizeof r);
	if (!result_valid(s, k, &r) || s->acc->merged[k]) {
		cowrun_error("task %zu (store %04" PRIu32 "): %s", k, s->store_id[k],
			     s->acc->merged[k] ? "result merged twice" : "malformed result record");
		return -1;
	}
	s->acc->result[k] = r;
	s->acc->merged[k] = 1;
	s->acc->nmerged++;
	return 0;
}

/* The biggest stores: revenue descending, ties in task (store id) order. */
static size_t top_stores(const struct sales_acc *acc, size_t nstores, size_t *top)
{
	size_t n = 0;

	for (size_t k = 0; k < nstores; k++) {
		int64_t rev = acc->result[k].revenue;
		size_t i;
		if (!acc->merged[k])
			continue;
		i = n < TOP_STORES ? n++ : TOP_STORES;
		while (i > 0 && acc->result[top[i - 1]].revenue < rev) {
			if (i < TOP_STORES)
				top[i] = top[i - 1];
			i--;
		}
		if (i < TOP_STORES)
			top[i] = k;
	}
	return n;
}

static void finish_top(FILE *out, const struct sales *s, const struct sales_result *sum)
{
	char a[NUMBUF], b[NUMBUF], c[NUMBUF], d[NUMBUF];
	size_t top[TOP_STORES];
	size_t n = top_stores(s->acc, s->nstores, top);

	fprintf(out, "\nTop %d stores by revenue\n", TOP_STORES);
	fprintf(out, "  %4s %6s %18s %7s %14s  %s\n", "Rank", "Store",
		"Revenue", "Share", "Transactions", "Best day");
	for (size_t i = 0; i < n; i++) {
		const struct sales_result *r = &s->acc->result[top[i]];
		fprintf(out, "  %4zu   %04" PRId64 " %18s %7s %14s  ", i + 1, r->store_id,
			fmt_money(a, r->revenue), fmt_share(b, r->revenue, sum->revenue),
			fmt_count(c, r->transactions));
		if (r->best_day >= 0)
			fprintf(out, "%s %s\n", s->day[r->best_day].date,
				fmt_money(d, r->best_day_revenue));
		else
			fprintf(out, "-\n");
	}
}

static void finish_totals(const struct sales *s, struct sales_result *sum)
{
	memset(sum, 0, sizeof *sum);
	for (size_t k = 0; k < s->nstores; k++) {
		const struct sales_result *r = &s->acc->result[k];
		if (!s->acc->merged[k])
			continue;
		sum->revenue += r->revenue;
		sum->units += r->units;
		sum->transactions += r->transactions;
		sum->discount += r->discount;
	}
}

/* Parent: the company summary from the merged records, on out. */
static int sales_finish(void *state, FILE *out)
{
	struct sales *s = state;
	struct sales_result sum;
	char a[NUMBUF];
	int64_t nm = (int64_t)s->acc->nmerged;

	finish_totals(s, &sum);
	fprintf(out, "Sales summary\n");
	if (s->cfg.input)
		fprintf(out, "  %-24s %s\n", "Source", s->cfg.input);
	else
		fprintf(out, "  %-24s generated data, seed %lld\n", "Source", s->cfg.seed);
	fprintf(out, "  %-24s %s to %s (%zu day%s)\n", "Period", s->day[0].date,
		s->day[s->ndays - 1].date, s->ndays, plural((int64_t)s->ndays));
	fprintf(out, "  %-24s %zu of %zu\n", "Stores reported", s->acc->nmerged, s->nstores);
	fprintf(out, "  %-24s %18s\n", "Transactions", fmt_count(a, sum.transactions));
	fprintf(out, "  %-24s %18s\n", "Units sold", fmt_count(a, sum.units));
	fprintf(out, "  %-24s %18s\n", "Revenue", fmt_money(a, sum.revenue));
	fprintf(out, "  %-24s %18s\n", "Average per store", fmt_avg_money(a, sum.revenue, nm));
	fprintf(out, "  %-24s %18s\n", "Average transaction",
		fmt_avg_money(a, sum.revenue, sum.transactions));
	fprintf(out, "  %-24s %18s\n", "Discount given", fmt_money(a, sum.discount));
	finish_top(out, s, &sum);
	if (ferror(out)) {
		cowrun_error("cannot write the summary");
		return -1;
	}
	return 0;
}

const struct cowrun_workload cowrun_workload_sales = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "sales",
	.summary = "nightly sales reports: one report per store, company summary",
	.description =
		"Reads a CSV of sales (header " CSV_HEADER ";\n"
		"money with at most 2 decimals) or generates a deterministic data set\n"
		"from --seed, indexes it once, then writes one report per store\n"
		"(store-NNNN.txt: months, top products, basket percentiles, best and\n"
		"worst day, weekdays) and prints the company summary.  With --input\n"
		"the generator options are ignored.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = sales_options,
	.defaults = &sales_defaults,
	.setup = sales_setup,
	.ntasks = sales_ntasks,
	.task_name = sales_task_name,
	.run = sales_run,
	.merge = sales_merge,
	.finish = sales_finish,
	.teardown = sales_teardown,
};
