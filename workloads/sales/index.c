/*
 * index.c - the calendar and the merge accumulator, built for every state;
 * and, until csv.c's parallel reader lands, raw CSV rows into the shared
 * state (stores, catalogue, transactions grouped by store).
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- raw data: what the CSV reader hands to indexing --------------------- */

void raw_free(struct raw *raw)
{
	free(raw->txn);
	free(raw->store);
	free(raw->store_id);
	free(raw->product);
	free(raw->names);
	memset(raw, 0, sizeof *raw);
}

int raw_reserve(struct raw *raw, size_t rows)
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
int64_t raw_add_store(struct raw *raw, uint32_t id)
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
int64_t raw_add_product(struct raw *raw, uint32_t id, const char *name,
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
 * stay in file order; days become calendar indexes. */
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
int index_calendar(struct sales *s, uint32_t first, uint32_t last)
{
	int y, y0;
	unsigned m, m0, d;

	s->first_day = first;
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
int index_acc(struct sales *s)
{
	s->acc = calloc(1, sizeof *s->acc);
	if (s->acc == NULL)
		return -1;
	s->acc->result = calloc(s->nstores, sizeof *s->acc->result);
	s->acc->merged = calloc(s->nstores, 1);
	return s->acc->result && s->acc->merged ? 0 : -1;
}

/* Build every index from raw; the name pool moves over to s. */
int build_index(struct sales *s, struct raw *raw)
{
	uint32_t *srank = malloc(raw->nstores * sizeof *srank);
	uint32_t *prank = malloc(raw->nproducts * sizeof *prank);
	int rc = -1;

	if (srank == NULL || prank == NULL ||
	    index_stores(s, raw, srank) != 0 ||
	    index_products(s, raw, prank) != 0 ||
	    index_txns(s, raw, srank, prank) != 0 ||
	    index_calendar(s, raw->first_day, raw->last_day) != 0)
		goto out;
	s->names = raw->names;
	raw->names = NULL;
	rc = 0;
out:
	free(srank);
	free(prank);
	return rc;
}

/* ---- TEMPORARY (issue 10): delete at merge with csv.c's csv_load() ------
 * csv_load() as the old two-pass path (csv_read() into raw, then
 * build_index()), so --input keeps working on this branch until the
 * parallel CSV reader replaces it.  Weak, so csv.c's definition wins if
 * both are linked; delete this, build_index() and its helpers, and struct
 * raw with raw_*() once csv.c no longer calls them. */
__attribute__((weak)) int csv_load(const char *path, struct sales *s)
{
	struct raw raw = { 0 };
	int rc = -1;

	if (csv_read(path, &raw) != 0)
		return -1;
	if (build_index(s, &raw) != 0)
		cowrun_error("out of memory indexing %zu transactions", raw.n);
	else
		rc = 0;
	raw_free(&raw);
	return rc;
}
