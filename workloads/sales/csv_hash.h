/*
 * csv_hash.h - the CSV reader's hash maps: store or product id -> index,
 * and the product table (catalogue entries, their names in a pool, and
 * both maps to find one).  Private to workloads/sales/csv_*.c.
 *
 * The lookups run per row (idmap_get() for every id too large for the
 * scan's direct arrays, ptable_find() in pass 2 for every product known by
 * name), so they are static inline here, for csv_scan.c to inline as it
 * did when all this was one file; what runs on a first sight (growing a
 * map, adding a product) and the name map's probe are in csv_hash.c.
 */
#ifndef COWRUN_SALES_CSV_HASH_H
#define COWRUN_SALES_CSV_HASH_H

#include "sales.h"

/* ---- uint32 id -> index ---- */

struct idslot {
	uint32_t id;  /* 0: empty (ids start at 1) */
	uint32_t val;
};

struct idmap {
	struct idslot *slot;  /* malloc'd; the map's owner frees it */
	size_t cap, n;  /* cap: a power of two, at least twice n */
};

static inline size_t id_home(uint32_t id, size_t cap)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* The slot holding id, or the empty slot where it belongs (cap > 0). */
static inline struct idslot *idmap_find(const struct idmap *m, uint32_t id)
{
	size_t i = id_home(id, m->cap);

	while (m->slot[i].id != 0 && m->slot[i].id != id)
		i = (i + 1) & (m->cap - 1);
	return &m->slot[i];
}

/* The value of id, or -1 if absent. */
static inline int64_t idmap_get(const struct idmap *m, uint32_t id)
{
	const struct idslot *slot;

	if (m->cap == 0)
		return -1;
	slot = idmap_find(m, id);
	return slot->id ? (int64_t)slot->val : -1;
}

/* Room for one more id, keeping the load under one half: 0, or -1 out of
 * memory (the map unchanged).  The caller then stores the id in the slot
 * idmap_find() gives and counts it in m->n. */
int idmap_reserve(struct idmap *m);

/* ---- products: id or name -> index ---- */

struct nslot {
	uint64_t hash;
	uint32_t val, used;
};

struct namemap {
	struct nslot *slot;
	size_t cap, n;
};

/* Products in first-appearance order, each with its name (if any) in a
 * NUL-separated pool.  Zeroed is empty; everything in it is malloc'd and
 * freed by ptable_free(), unless the caller takes names (and sets it to
 * NULL). */
struct ptable {
	struct product *prod;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	struct idmap ids;    /* numeric id -> index */
	struct namemap byname;
};

/* The name map's slot for the len bytes of name (hash h), or the empty
 * slot where it belongs (t->byname.cap > 0). */
struct nslot *namemap_find(const struct ptable *t, uint64_t h,
			   const char *name, size_t len);

static inline uint64_t name_hash(const char *name, size_t len)
{
	return cowrun_hash64(name, len, 0x5a1e5);
}

/* The index of product (id, or id 0 and the len bytes of name, which
 * need no NUL), or -1 if absent. */
static inline int64_t ptable_find(const struct ptable *t, uint32_t id,
				  const char *name, size_t len)
{
	const struct nslot *slot;

	if (id != 0)
		return idmap_get(&t->ids, id);
	if (t->byname.cap == 0)
		return -1;
	slot = namemap_find(t, name_hash(name, len), name, len);
	return slot->used ? (int64_t)slot->val : -1;
}

/* ptable_find(), and when absent and `add`, add the product (with no
 * category and list price 0, its name copied into the pool).  Returns -1
 * if absent (and not added) or out of memory. */
int64_t ptable_index(struct ptable *t, uint32_t id, const char *name,
		     size_t len, int add);
/* Frees what t holds (not t itself). */
void ptable_free(struct ptable *t);

#endif
