/*
 * sales.h - the sales workload's shared declarations: its data structures
 * and the helpers its files share.  See sales.c for the workload.
 */
#ifndef COWRUN_SALES_H
#define COWRUN_SALES_H

#define _GNU_SOURCE
#include "cowrun.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
#define NCATEGORIES     10

/* ---- options ------------------------------------------------------------ */

struct sales_config {
	const char *input;      /* CSV path, or NULL to generate */
	const char *start_date; /* first day of generated data */
	long long rows, stores, products, days, seed;
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
	uint64_t input_hash;    /* --input: hash of the file's bytes (merge context) */
	uint32_t first_day;     /* day number of day[0] (index_calendar()) */
	void *context;          /* merge_context()'s bytes (context.c), malloc'd */
	size_t context_len;
};


/* A category of the generated catalogue, with its price range. */
struct category {
	const char *name;
	uint32_t min_price, max_price; /* cents */
	const char *noun[6];
};
extern const struct category categories[NCATEGORIES];
extern const char *const weekday_name[7];

/* ---- helpers (util.c) ---- */
int64_t day_zero(void);
uint32_t day_number(int y, unsigned m, unsigned d);
void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d);
int parse_date(const char *s, uint32_t *out);
void put_digits(char *out, unsigned n, int width);
int parse_int(const char *s, long long min, long long max, long long *out);
int parse_price(const char *s, uint32_t *cents);
void *grow_array(void *p, size_t *cap, size_t need, size_t size);
const char *fmt_count(char *buf, int64_t v);
const char *fmt_money(char *buf, int64_t cents);
const char *fmt_share(char *buf, int64_t part, int64_t whole);
const char *fmt_avg_money(char *buf, int64_t num, int64_t den);
const char *fmt_ratio(char *buf, int64_t num, int64_t den);
const char *plural(int64_t n);
const char *product_label(const struct sales *s, uint32_t idx, char *buf, size_t size);
uint64_t mix64(uint64_t x);

/* ---- the two loaders: each builds s->txn (grouped by store, in the setup
 * arena), store_off, store_id (ascending), nstores, product, nproducts,
 * names, has_categories and the calendar (index_calendar()), straight into
 * their final place, on the setup threads (cowrun_parallel()); output is
 * the same at every thread count.  Return 0, or -1 after one message. ---- */

/* --input (csv_load.c, and the other csv_*.c): also sets s->input_hash. */
int csv_load(const char *path, struct sales *s);
/* Generated data (generate.c). */
int generate_load(const struct sales_config *cfg, struct sales *s);
/* --start-date and --days checked, the first day's number into *first:
 * 0, or -1 after one message.  generate_load()'s first step, and the
 * plan's check of the same options (generate.c). */
int generate_period(const struct sales_config *cfg, uint32_t *first);
/* s->store_id (heap) and s->nstores: the generated stores 1..--stores,
 * for generate_load() and the plan alike.  0, or -1 (ENOMEM). */
int generate_store_ids(const struct sales_config *cfg, struct sales *s);
/* The calendar from day number first to last; sets s->first_day (index.c). */
int index_calendar(struct sales *s, uint32_t first, uint32_t last);
/* The merge accumulator for s->nstores tasks (index.c).  0 or -1 (ENOMEM). */
int index_acc(struct sales *s);
/* Frees the tables a loader built (store_off, store_id, product, names,
 * day, month; not the rows, which are the arena's) and sets them to NULL
 * (index.c): what a failed load does, and the teardown. */
void index_free_tables(struct sales *s);

/* ---- merge without setup (context.c) ---- */

/* Build s->context from the loaded state: 0, or -1 (ENOMEM). */
int context_build(struct sales *s);
/* merge_context(): the bytes context_build() made. */
const void *sales_merge_context(const void *state, size_t *len);
/* Fill s (cfg already parsed) from a saved context: the stores, the
 * calendar, the accumulator; no rows.  0, or -1 after one message. */
int context_load(struct sales *s, const void *bytes, size_t len);

/* Worker: store k's report and totals (report.c). */
int sales_run(const void *state, size_t k, struct cowrun_task *task);

#endif
