/*
 * context.c - the merge context: what sales' merge() and finish() need
 * that the arguments do not say, so `cowrun --merge` builds its state from
 * the saved results in milliseconds instead of reading or generating the
 * rows again.
 *
 * merge() checks each record's store id (store_id, nstores) and its day
 * indexes (ndays); finish() prints the period (the calendar's first and
 * last date) and the source (cfg, from the arguments).  So the context is:
 * a header, then the store ids.  Native byte order, like the result
 * records: saved results are read back on a machine of the same kind.
 * Whether the arguments match is not checked here: the results identity
 * holds them, and the runner refuses a mismatch naming both.
 */
#include "sales.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT_MAGIC   0x53414c45u /* "SALE" */
#define CONTEXT_VERSION 1u

/* The fixed part; nstores uint32 store ids (ascending) follow it. */
struct context_head {
	uint32_t magic;               /* CONTEXT_MAGIC */
	uint32_t version;             /* CONTEXT_VERSION */
	uint64_t input_hash;          /* --input: the file's hash; 0 when generated */
	uint32_t first_day, last_day; /* day numbers of the calendar's ends */
	uint32_t nstores;
	uint32_t reserved;            /* 0 */
};
_Static_assert(sizeof(struct context_head) == 32, "merge context layout");

int context_build(struct sales *s)
{
	struct context_head h = {
		CONTEXT_MAGIC, CONTEXT_VERSION, s->input_hash, s->first_day,
		s->first_day + (uint32_t)s->ndays - 1, (uint32_t)s->nstores, 0,
	};
	size_t ids = s->nstores * sizeof *s->store_id;
	char *p = malloc(sizeof h + ids);

	if (p == NULL)
		return -1;
	memcpy(p, &h, sizeof h);
	memcpy(p + sizeof h, s->store_id, ids);
	free(s->context);
	s->context = p;
	s->context_len = sizeof h + ids;
	return 0;
}

const void *sales_merge_context(const void *state, size_t *len)
{
	const struct sales *s = state;

	*len = s->context_len;
	return s->context;
}

/* Why the header h (of a context len bytes long) is unusable, or NULL. */
static const char *head_problem(const struct context_head *h, size_t len)
{
	if (h->magic != CONTEXT_MAGIC || h->version != CONTEXT_VERSION || h->reserved != 0)
		return "not a sales context of this version";
	if (h->nstores == 0)
		return "no stores";
	if (h->nstores > (len - sizeof *h) / sizeof(uint32_t) ||
	    len != sizeof *h + h->nstores * sizeof(uint32_t))
		return "its length does not match its store count";
	if (h->first_day < day_number(1000, 1, 1) || h->last_day < h->first_day ||
	    h->last_day > day_number(9999, 12, 31) ||
	    h->last_day - h->first_day >= MAX_SPAN_DAYS)
		return "bad period";
	return NULL;
}

/* Why the store ids are unusable (not ascending, out of range), or NULL. */
static const char *ids_problem(const uint32_t *id, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (id[i] == 0 || id[i] > MAX_ID || (i > 0 && id[i] <= id[i - 1]))
			return "store ids not ascending within 1..999999999";
	return NULL;
}

int context_load(struct sales *s, const void *bytes, size_t len)
{
	struct context_head h;
	const char *why = len < sizeof h ? "too short" : NULL;
	uint32_t *id = NULL;

	if (why == NULL) {
		memcpy(&h, bytes, sizeof h);
		why = head_problem(&h, len);
	}
	if (why == NULL && (id = malloc(h.nstores * sizeof *id)) == NULL)
		why = strerror(ENOMEM);
	if (why == NULL) {
		memcpy(id, (const char *)bytes + sizeof h, h.nstores * sizeof *id);
		why = ids_problem(id, h.nstores);
	}
	if (why != NULL) {
		cowrun_error("saved results: unusable merge context (%s)", why);
		free(id);
		return -1;
	}
	s->store_id = id;
	s->nstores = h.nstores;
	s->input_hash = h.input_hash;
	if (index_calendar(s, h.first_day, h.last_day) != 0 || context_build(s) != 0) {
		cowrun_error("out of memory building the merge state");
		return -1;
	}
	return 0;
}
