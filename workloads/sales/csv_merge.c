/*
 * csv_merge.c - between the CSV reader's two passes: merging the parts'
 * tables in file order into the store list (ascending ids, each store's
 * rows in file order), the catalogue and its name pool, as the sequential
 * reader built them; and telling every part where its rows go.
 */
#include "csv_loader.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The distinct store ids of all parts in first-appearance order, as keys
 * (id << 32 | that order) in *key; each part's place[j] = its local store
 * j's global number.  Returns how many, or -1 out of memory. */
static int64_t collect_stores(struct loader *L, uint64_t **key)
{
	struct idmap map = { 0 };
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < L->nparts; i++) {
		struct part *pt = &L->part[i];
		pt->place = malloc((pt->nstores + 1) * sizeof *pt->place);
		if (pt->place == NULL)
			goto nomem;
		for (size_t j = 0; j < pt->nstores; j++) {
			struct idslot *slot;
			if (idmap_reserve(&map) != 0)
				goto nomem;
			slot = idmap_find(&map, pt->sid[j]);
			if (slot->id == 0) {
				void *p = grow_array(*key, &cap, n + 1, sizeof **key);
				if (p == NULL)
					goto nomem;
				*key = p;
				(*key)[n] = (uint64_t)pt->sid[j] << 32 | n;
				*slot = (struct idslot){ pt->sid[j], (uint32_t)n++ };
				map.n++;
			}
			pt->place[j] = slot->val;
		}
	}
	free(map.slot);
	return (int64_t)n;
nomem:
	free(map.slot);
	return -1;
}

/* From global numbers to first row indexes: each store's rows start at
 * its store_off[], in part order, so each store keeps file order.
 * rank[global number] = task number; store_off has its counts. */
static void store_places(struct loader *L, struct sales *s, size_t *rank)
{
	for (size_t i = 0; i < L->nparts; i++)
		for (size_t j = 0; j < L->part[i].nstores; j++) {
			size_t *g = &L->part[i].place[j];
			*g = rank[*g];
			s->store_off[*g + 1] += L->part[i].count[j];
		}
	for (size_t k = 0; k < s->nstores; k++) {
		s->store_off[k + 1] += s->store_off[k];
		rank[k] = s->store_off[k]; /* now: the next free row per store */
	}
	for (size_t i = 0; i < L->nparts; i++)
		for (size_t j = 0; j < L->part[i].nstores; j++) {
			size_t *k = &L->part[i].place[j];
			size_t at = rank[*k];
			rank[*k] += L->part[i].count[j];
			*k = at;
		}
}

/* Every part's place[] for pass 2: stores ascending by id, each store's
 * rows in part order.  Sets s->store_id, nstores, store_off. */
int csv_merge_stores(struct loader *L, struct sales *s)
{
	uint64_t *key = NULL;
	size_t *rank = NULL;
	int64_t n = collect_stores(L, &key);
	int rc = -1;

	if (n < 0)
		goto out;
	/* sorted by id, the low half says which global store ranks there */
	qsort(key, (size_t)n, sizeof *key, cmp_u64);
	s->store_id = malloc((size_t)n * sizeof *s->store_id);
	s->store_off = calloc((size_t)n + 1, sizeof *s->store_off);
	rank = malloc((size_t)n * sizeof *rank);
	if (s->store_id == NULL || s->store_off == NULL || rank == NULL)
		goto out;
	s->nstores = (size_t)n;
	for (size_t k = 0; k < s->nstores; k++) {
		s->store_id[k] = (uint32_t)(key[k] >> 32);
		rank[(uint32_t)key[k]] = k;
	}
	store_places(L, s, rank);
	rc = 0;
out:
	free(key);
	free(rank);
	return rc;
}

struct psort {
	struct product p;
	uint32_t old;
	const char *names;
};

/* Numeric ids first, ascending; then names in byte order (as index.c). */
static int cmp_product(const void *a, const void *b)
{
	const struct psort *x = a, *y = b;

	if (x->p.id != 0 && y->p.id != 0)
		return (x->p.id > y->p.id) - (x->p.id < y->p.id);
	if (x->p.id != 0 || y->p.id != 0)
		return x->p.id != 0 ? -1 : 1;
	return strcmp(x->names + x->p.name, y->names + y->p.name);
}

/* Sort the catalogue; rank[first-appearance index] = catalogue index. */
static int sort_products(struct ptable *all, struct sales *s, uint32_t *rank)
{
	struct psort *ps = malloc(all->n * sizeof *ps);

	s->product = malloc(all->n * sizeof *s->product);
	if (ps == NULL || s->product == NULL) {
		free(ps);
		return -1;
	}
	for (size_t i = 0; i < all->n; i++)
		ps[i] = (struct psort){ all->prod[i], (uint32_t)i, all->names };
	qsort(ps, all->n, sizeof *ps, cmp_product);
	for (size_t i = 0; i < all->n; i++) {
		s->product[i] = ps[i].p;
		rank[ps[i].old] = (uint32_t)i;
	}
	s->nproducts = all->n;
	free(ps);
	return 0;
}

/* The catalogue and name pool (first-appearance order, as the sequential
 * reader built it) in L->cat, each product's catalogue index in L->rank.
 * Each part's product table is freed once merged, before pass 2 fills the
 * arena: kept, the parts' tables (every product in each of them) added
 * about a tenth of the arena to the setup's peak.  s->names is set by
 * csv_load() once the load succeeds (pass 2 still finds names in it). */
int csv_merge_products(struct loader *L, struct sales *s)
{
	struct ptable *all = &L->cat;

	for (size_t i = 0; i < L->nparts; i++) {
		struct ptable *t = &L->part[i].prod;
		for (size_t j = 0; j < t->n; j++) {
			const struct product *p = &t->prod[j];
			const char *name = p->id ? NULL : t->names + p->name;
			int64_t g = ptable_index(all, p->id, name, name ? strlen(name) : 0, 1);
			if (g < 0)
				return -1;
			if (all->prod[g].list_price < p->list_price)
				all->prod[g].list_price = p->list_price;
		}
		ptable_free(t);
		*t = (struct ptable){ 0 };
	}
	L->rank = malloc((all->n + 1) * sizeof *L->rank);
	if (L->rank == NULL)
		return -1;
	return sort_products(all, s, L->rank);
}
