/*
 * csv.c - reading a CSV of sales into raw rows.
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
int csv_read(const char *path, struct raw *raw)
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
