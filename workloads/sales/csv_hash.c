/*
 * csv_hash.c - the CSV reader's hash maps (csv_hash.h): the parts that run
 * on a first sight (growing a map, adding a product), and the name map's
 * probe.  Each part of the file has its own tables (no locks), and the
 * merge builds the whole catalogue with the same ptable_index().
 */
#include "csv_hash.h"

#include <stdlib.h>
#include <string.h>

/* ---- uint32 id -> index ----------------------------------------------- */

int idmap_reserve(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	struct idmap bigger = { NULL, cap, m->n };

	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	bigger.slot = calloc(cap, sizeof *m->slot);
	if (bigger.slot == NULL)
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].id != 0)
			*idmap_find(&bigger, m->slot[i].id) = m->slot[i];
	free(m->slot);
	*m = bigger;
	return 0;
}

/* ---- product name -> index -------------------------------------------- */

static int name_eq(const struct ptable *t, uint32_t val, const char *name, size_t len)
{
	const char *have = t->names + t->prod[val].name;

	return memcmp(have, name, len) == 0 && have[len] == '\0';
}

struct nslot *namemap_find(const struct ptable *t, uint64_t h,
			   const char *name, size_t len)
{
	const struct namemap *m = &t->byname;
	size_t i = h & (m->cap - 1);

	while (m->slot[i].used &&
	       !(m->slot[i].hash == h && name_eq(t, m->slot[i].val, name, len)))
		i = (i + 1) & (m->cap - 1);
	return &m->slot[i];
}

static int namemap_reserve(struct namemap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct nslot *slot;

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

/* ---- the product table ------------------------------------------------ */

/* Append a product (name copied into the pool unless NULL); returns its
 * index, or -1 if memory ran out. */
static int64_t ptable_append(struct ptable *t, uint32_t id, const char *name,
			     size_t len)
{
	struct product p = { id, NO_NAME, NO_CATEGORY, 0 };
	void *q = grow_array(t->prod, &t->cap, t->n + 1, sizeof *t->prod);

	if (q == NULL)
		return -1;
	t->prod = q;
	if (name) {
		q = grow_array(t->names, &t->names_cap, t->names_len + len + 1, 1);
		if (q == NULL)
			return -1;
		t->names = q;
		memcpy(t->names + t->names_len, name, len);
		t->names[t->names_len + len] = '\0';
		p.name = (uint32_t)t->names_len;
		t->names_len += len + 1;
	}
	t->prod[t->n] = p;
	return (int64_t)t->n++;
}

/* Add a product ptable_find() did not find: its index, or -1 out of
 * memory. */
static int64_t ptable_add(struct ptable *t, uint32_t id, const char *name,
			  size_t len)
{
	int64_t idx;
	uint64_t h;
	struct nslot *slot;

	if (id != 0) {
		if (idmap_reserve(&t->ids) != 0 ||
		    (idx = ptable_append(t, id, NULL, 0)) < 0)
			return -1;
		*idmap_find(&t->ids, id) = (struct idslot){ id, (uint32_t)idx };
		t->ids.n++;
		return idx;
	}
	if (namemap_reserve(&t->byname) != 0)
		return -1;
	h = name_hash(name, len);
	slot = namemap_find(t, h, name, len);
	if ((idx = ptable_append(t, 0, name, len)) < 0)
		return -1;
	*slot = (struct nslot){ h, (uint32_t)idx, 1 };
	t->byname.n++;
	return idx;
}

int64_t ptable_index(struct ptable *t, uint32_t id, const char *name,
		     size_t len, int add)
{
	int64_t idx = ptable_find(t, id, name, len);

	if (idx >= 0 || !add)
		return idx;
	return ptable_add(t, id, name, len);
}

void ptable_free(struct ptable *t)
{
	free(t->prod);
	free(t->names);
	free(t->ids.slot);
	free(t->byname.slot);
}
