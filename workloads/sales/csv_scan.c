/*
 * csv_scan.c - the CSV reader's hot path: scanning a part line by line,
 * the fast row parser, and what each pass does with every row (pass 1
 * tallies the part's tables, pass 2 puts each row in its place).  It is
 * one translation unit so the compiler inlines the per-row work into the
 * scan loop, as it did when the reader was one file (callgrind counts the
 * same instructions); what runs on a bad line, on a first sight or
 * between the passes is in the other csv_*.c files.
 */
#include "csv_loader.h"

#include <stdlib.h>
#include <string.h>

/* ---- a part's lines --------------------------------------------------- */

/* The next line starting in the part, without its '\n' (which is held,
 * or the file ends there).  Returns 1, 0 at the part's end, or -1 after
 * recording a read error. */
static int view_line(struct view *v, const char **line, size_t *n,
		     struct csv_err *e)
{
	size_t from = v->pos;
	const char *nl;

	if (v->off + v->pos >= v->end)
		return 0;
	while ((nl = memchr(v->buf + from, '\n', v->len - from)) == NULL &&
	       v->off + v->len < v->L->size) {
		from = v->len - v->pos; /* where the line's held bytes end, once moved */
		if (csv_view_more(v, e) != 0)
			return -1;
	}
	*line = v->buf + v->pos;
	*n = (nl ? (size_t)(nl - v->buf) : v->len) - v->pos;
	v->pos += *n + 1;
	return 1;
}

/* ---- parsing a row: the fast path ------------------------------------- */

/*
 * The fast path relies on the bytes after a line: the byte right after it
 * is no digit and no comma ('\n', '\r', or the sentinel '\n' after the
 * buffer), and PAD bytes after the buffer may be read, so it reads a
 * field's first 8 bytes at once and finds its digits without a branch
 * per byte (field lengths vary from row to row: a loop's exit would
 * mispredict on every field).  It takes the common shapes only (at most
 * 9 digits in an id, 7 in a quantity or whole price); the exact parser has
 * the last word on anything else (leading zeros, say).
 */

static inline uint64_t load8(const char *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return x; /* little-endian: p[0] in the low byte */
}

/* The digits' values in the 8 bytes at p (d), and how many of them lead
 * (8: maybe more).  A byte is a digit when (byte ^ '0') < 10; carries
 * from adding 0x76 only reach bytes after the first non-digit. */
static inline int lead_digits(const char *p, uint64_t *d)
{
	uint64_t nd;

	*d = load8(p) ^ 0x3030303030303030ULL;
	nd = ((*d + 0x7676767676767676ULL) | *d) & 0x8080808080808080ULL;
	return nd ? __builtin_ctzll(nd) >> 3 : 8;
}

/* The value of the first len (1 to 8) digits in d. */
static inline uint32_t digits_swar(uint64_t d, int len)
{
	uint64_t v = d << (64 - 8 * len); /* the digits, after leading zeros */

	v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;
	v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;
	return (uint32_t)((v * 10000 + (v >> 32)) & 0xFFFFFFFFULL);
}

/* 1 to maxdigits (at most 9) digits, then a comma. */
static inline int fast_uint(const char **p, int maxdigits, uint32_t *out)
{
	const char *q = *p;
	uint64_t d;
	int len = lead_digits(q, &d);

	if (len == 8) { /* rare: long ids, one byte at a time */
		uint32_t v = 0;
		while ((unsigned)(*q - '0') <= 9 && q - *p <= maxdigits)
			v = v * 10 + (unsigned)(*q++ - '0');
		len = (int)(q - *p);
		*out = v;
	} else if (len > 0) {
		*out = digits_swar(d, len);
	}
	if (len == 0 || len > maxdigits || (*p)[len] != ',')
		return -1;
	*p += len + 1;
	return 0;
}

/* A price to the line's end: 1 to 7 whole digits, 1 or 2 decimals. */
static inline int fast_price(const char *p, const char *end, uint32_t *cents)
{
	uint64_t d;
	int len = lead_digits(p, &d);
	const char *q = p + len;
	uint32_t units, frac = 0;

	if (len == 0 || len > 7 || (units = digits_swar(d, len)) > MAX_PRICE / 100)
		return -1;
	if (q < end) {
		size_t flen = (size_t)(end - q) - 1;
		if (*q != '.' || flen < 1 || flen > 2 || (unsigned)(q[1] - '0') > 9 ||
		    (flen == 2 && (unsigned)(q[2] - '0') > 9))
			return -1;
		frac = (unsigned)(q[1] - '0') * 10 + (flen == 2 ? (unsigned)(q[2] - '0') : 0);
	}
	if (units * 100 + frac > MAX_PRICE)
		return -1;
	*cents = units * 100 + frac;
	return 0;
}

/* The date in p[0..9]: a memo of the last one, as rows come day by day. */
static inline int fast_date(struct scratch *t, const char *p, uint32_t *day)
{
	char s[11];

	if (memcmp(p, t->date, 10) == 0) {
		*day = t->day;
		return 0;
	}
	memcpy(s, p, 10);
	s[10] = '\0';
	if (parse_date(s, day) != 0)
		return -1;
	memcpy(t->date, p, 10);
	t->day = *day;
	return 0;
}

/* A product name up to the next comma: what product_key() (csv_row.c)
 * accepts. */
static inline int fast_name(const char **p, const char *end, struct row *r)
{
	const char *s = *p, *comma = memchr(s, ',', (size_t)(end - s));
	size_t len = comma ? (size_t)(comma - s) : 0;

	if (len == 0 || len > MAX_NAME || s[len - 1] == ' ')
		return -1; /* s[0] is no digit, no space: the caller checked */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == 0x7f)
			return -1;
	r->pid = 0;
	r->name = s;
	r->len = len;
	*p = comma + 1;
	return 0;
}

/* One well-formed row, without copying it; -1 for anything unusual
 * (the exact parser then decides, and names the problem). */
static int row_fast(struct scratch *t, const char *p, const char *end, struct row *r)
{
	if (end - p < 19 || p[10] != ',' || fast_date(t, p, &r->day) != 0)
		return -1;
	p += 11;
	if (fast_uint(&p, 9, &r->store) != 0 || r->store == 0)
		return -1;
	if ((unsigned)(*p - '0') <= 9) {
		if (fast_uint(&p, 9, &r->pid) != 0 || r->pid == 0)
			return -1;
	} else if (p == end || *p == ' ' || fast_name(&p, end, r) != 0) {
		return -1;
	}
	if (fast_uint(&p, 7, &r->qty) != 0 || r->qty == 0 || r->qty > MAX_QUANTITY)
		return -1;
	return fast_price(p, end, &r->price);
}

/* Parse line number lineno of a part.  Returns 1 (a row), 0 (blank) or
 * -1 after recording the error. */
static int row_parse(struct scratch *t, const char *line, size_t n,
		     struct row *r, struct csv_err *e, size_t lineno)
{
	const char *end = line + n;

	if (n > 0 && end[-1] == '\r')
		end--;
	if (end == line)
		return memchr(line, '\0', n) ? csv_row_exact(t, line, n, r, e, lineno) : 0;
	if (row_fast(t, line, end, r) == 0)
		return 1;
	return csv_row_exact(t, line, n, r, e, lineno);
}

/* ---- scanning a part -------------------------------------------------- */

typedef int (*row_fn)(struct loader *L, struct part *pt, struct scratch *t,
		      const struct row *r, size_t lineno);

/* The thread's direct arrays, all NONE; -1 out of memory. */
static int direct_init(struct scratch *t, struct csv_err *e)
{
	if (t->store_at != NULL)
		return 0;
	t->store_at = malloc(2 * DIRECT_IDS * sizeof *t->store_at);
	if (t->store_at == NULL)
		return csv_fail_io(e, E_NOMEM, 0);
	memset(t->store_at, 0xff, 2 * DIRECT_IDS * sizeof *t->store_at);
	t->prod_at = t->store_at + DIRECT_IDS;
	return 0;
}

/* Back to all NONE for the thread's next part: its stores, and its
 * products in pass 1 (in pass 2 the part's table is gone, and the array
 * holds catalogue indexes, good for every part). */
static void direct_reset(struct scratch *t, const struct part *pt)
{
	for (size_t j = 0; j < pt->nstores; j++)
		if (pt->sid[j] < DIRECT_IDS)
			t->store_at[pt->sid[j]] = NONE;
	for (size_t j = 0; j < pt->prod.n; j++)
		if (pt->prod.prod[j].id < DIRECT_IDS)
			t->prod_at[pt->prod.prod[j].id] = NONE;
}

/* Parse every line starting in part i, calling fn for each row.  Counts
 * the part's lines into *lines and hashes its bytes into *hash.  Returns
 * 0, or -1 after recording the first error in pt->err. */
static int scan_part(struct loader *L, size_t i, unsigned thread, row_fn fn,
		     size_t *lines, uint64_t *hash)
{
	struct part *pt = &L->part[i];
	struct view v;
	const char *line;
	size_t n;
	struct row r;
	int rc;

	*lines = 0;
	if (direct_init(&L->tmp[thread], &pt->err) != 0 ||
	    csv_view_open(&v, L, i, thread, &pt->err) != 0)
		return -1;
	while ((rc = view_line(&v, &line, &n, &pt->err)) > 0) {
		++*lines;
		if (i == 0 && *lines == 1) {
			rc = csv_header_check(v.tmp, line, n, &pt->err);
		} else {
			rc = row_parse(v.tmp, line, n, &r, &pt->err, *lines);
			if (rc > 0)
				rc = fn(L, pt, v.tmp, &r, *lines);
		}
		if (rc < 0)
			break;
	}
	direct_reset(v.tmp, pt);
	return rc < 0 ? -1 : csv_view_hash(&v, hash, &pt->err);
}

/* ---- a row's local store and product ---------------------------------- */

static int64_t part_store(struct part *pt, uint32_t id);

/* The part's index of the row's store; add it on first sight when `add`.
 * -1 if absent (and not added) or out of memory. */
static inline int64_t local_store(struct scratch *t, struct part *pt,
				  uint32_t id, int add)
{
	int64_t idx;

	if (id < DIRECT_IDS && t->store_at[id] != NONE)
		return t->store_at[id];
	idx = add ? part_store(pt, id) : idmap_get(&pt->stores, id);
	if (idx >= 0 && id < DIRECT_IDS)
		t->store_at[id] = (uint32_t)idx;
	return idx;
}

/* Pass 1: the part's index of the row's product, added on first sight;
 * -1 out of memory. */
static inline int64_t local_product(struct scratch *t, struct part *pt,
				    const struct row *r)
{
	int direct = r->pid != 0 && r->pid < DIRECT_IDS;
	int64_t idx;

	/* the common case (a small id, seen before): the fall-through */
	if (__builtin_expect(direct && t->prod_at[r->pid] != NONE, 1))
		return t->prod_at[r->pid];
	idx = ptable_index(&pt->prod, r->pid, r->name, r->len, 1);
	if (idx >= 0 && direct)
		t->prod_at[r->pid] = (uint32_t)idx;
	return idx;
}

/* Pass 2: the catalogue index of the row's product; -1 if absent. */
static inline int64_t catalogue_product(const struct loader *L,
					struct scratch *t, const struct row *r)
{
	int direct = r->pid != 0 && r->pid < DIRECT_IDS;
	int64_t idx;

	if (__builtin_expect(direct && t->prod_at[r->pid] != NONE, 1))
		return t->prod_at[r->pid];
	idx = ptable_find(&L->cat, r->pid, r->name, r->len);
	if (idx < 0)
		return -1;
	idx = L->rank[idx];
	if (direct)
		t->prod_at[r->pid] = (uint32_t)idx;
	return idx;
}

/* ---- pass 1: per-part tables ------------------------------------------ */

/* The local index of store id, added on first sight; -1 out of memory. */
static int64_t part_store(struct part *pt, uint32_t id)
{
	int64_t idx = idmap_get(&pt->stores, id);
	void *p;

	if (idx >= 0)
		return idx;
	if (idmap_reserve(&pt->stores) != 0)
		return -1;
	p = grow_array(pt->sid, &pt->scap, pt->nstores + 1, sizeof *pt->sid);
	if (p == NULL)
		return -1;
	pt->sid = p;
	/* count has the same capacity as sid: grow it alongside */
	p = realloc(pt->count, pt->scap * sizeof *pt->count);
	if (p == NULL)
		return -1;
	pt->count = p;
	pt->sid[pt->nstores] = id;
	pt->count[pt->nstores] = 0;
	*idmap_find(&pt->stores, id) = (struct idslot){ id, (uint32_t)pt->nstores };
	pt->stores.n++;
	return (int64_t)pt->nstores++;
}

static int tally(struct loader *L, struct part *pt, struct scratch *t,
		 const struct row *r, size_t lineno)
{
	int64_t store = local_store(t, pt, r->store, 1);
	int64_t prod = store < 0 ? -1 : local_product(t, pt, r);

	(void)L;
	if (prod < 0)
		return csv_fail(&pt->err, E_LINE, lineno, "out of memory");
	pt->count[store]++;
	if (pt->prod.prod[prod].list_price < r->price)
		pt->prod.prod[prod].list_price = r->price;
	if (pt->rows == 0 || r->day < pt->first_day)
		pt->first_day = r->day;
	if (pt->rows == 0 || r->day > pt->last_day)
		pt->last_day = r->day;
	if (pt->revenue <= REVENUE_MAX)
		pt->revenue += (int64_t)r->qty * r->price;
	pt->rows++;
	return 0;
}

static int pass1_block(void *ctx, size_t i, unsigned thread)
{
	struct loader *L = ctx;
	struct part *pt = &L->part[i];

	return scan_part(L, i, thread, tally, &pt->lines, &pt->hash);
}

/* The row where the running revenue first passes the limit. */
static int overflow_row(struct loader *L, struct part *pt, struct scratch *t,
			const struct row *r, size_t lineno)
{
	(void)pt;
	(void)t;
	L->prefix += (int64_t)r->qty * r->price;
	if (L->prefix <= REVENUE_MAX)
		return 0;
	L->bad_line = lineno;
	return -1;
}

int csv_pass1(struct loader *L)
{
	return cowrun_parallel(L->nparts, pass1_block, L);
}

/* After pass 1: print the first error in file order, as the sequential
 * reader would have met it: a part's own error, or the line where the
 * company's revenue grew too large.  Returns 0 if there was none. */
int csv_first_error(struct loader *L)
{
	size_t base = 0, lines;
	uint64_t hash;
	int64_t prefix = 0;

	for (size_t i = 0; i < L->nparts; i++) {
		struct part *pt = &L->part[i];
		if (pt->revenue > REVENUE_MAX - prefix) {
			L->prefix = prefix;
			pt->err.kind = E_NONE;
			if (scan_part(L, i, 0, overflow_row, &lines, &hash) == 0 ||
			    L->bad_line == 0) {
				csv_print_err(L, &pt->err, base);
				return -1;
			}
			cowrun_error("%s:%zu: total revenue too large", L->path, base + L->bad_line);
			return -1;
		}
		if (pt->err.kind != E_NONE) {
			csv_print_err(L, &pt->err, base);
			return -1;
		}
		prefix += pt->revenue;
		base += pt->lines;
	}
	return 0;
}

/* ---- pass 2: every row to its place ----------------------------------- */

static int place_row(struct loader *L, struct part *pt, struct scratch *tmp,
		     const struct row *r, size_t lineno)
{
	struct sales *s = L->s;
	int64_t store = local_store(tmp, pt, r->store, 0);
	int64_t prod = catalogue_product(L, tmp, r);
	struct txn t = { r->day - L->first_day, 0, r->qty, r->price };

	(void)lineno;
	if (store < 0 || prod < 0 || pt->count[store] == 0 ||
	    r->day < L->first_day || r->day - L->first_day >= s->ndays)
		return csv_fail_io(&pt->err, E_CHANGED, 0);
	t.product = (uint32_t)prod;
	pt->count[store]--;
	s->txn[pt->place[store]++] = t;
	return 0;
}

static int pass2_block(void *ctx, size_t i, unsigned thread)
{
	struct loader *L = ctx;
	struct part *pt = &L->part[i];
	size_t lines;
	uint64_t hash;

	if (scan_part(L, i, thread, place_row, &lines, &hash) != 0) {
		if (pt->err.kind != E_READ && pt->err.kind != E_NOMEM)
			pt->err.kind = E_CHANGED;
		return -1;
	}
	for (size_t j = 0; j < pt->nstores; j++)
		if (pt->count[j] != 0)
			return csv_fail_io(&pt->err, E_CHANGED, 0);
	if (hash != pt->hash || lines != pt->lines)
		return csv_fail_io(&pt->err, E_CHANGED, 0);
	return 0;
}

int csv_pass2(struct loader *L)
{
	return cowrun_parallel(L->nparts, pass2_block, L);
}
