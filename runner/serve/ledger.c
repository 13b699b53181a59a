/*
 * ledger.c - the server-wide count of workers under --max-workers: who
 * waits, who holds what.  See ledger.h.
 */
#include "ledger.h"

#include <string.h>

#define LEDGER_GENS 64           /* generation indexes 0..63 */

struct want {
	int gen;
	uint32_t ticket;
	size_t want;
};

static struct {
	size_t cap, in_use;
	size_t held[LEDGER_GENS];
	struct want wants[LEDGER_WANTS_MAX];   /* in arrival order */
	size_t nwants;
} L;

void ledger_init(size_t cap)
{
	memset(&L, 0, sizeof L);
	L.cap = cap ? cap : 1;
}

int ledger_want(int gen, uint32_t ticket, size_t want)
{
	if (gen < 0 || gen >= LEDGER_GENS || L.nwants == LEDGER_WANTS_MAX)
		return -1;
	L.wants[L.nwants++] = (struct want){ gen, ticket, want ? want : 1 };
	return 0;
}

size_t ledger_take_now(int gen, size_t want)
{
	if (gen < 0 || gen >= LEDGER_GENS || L.nwants > 0 || L.in_use >= L.cap || want == 0)
		return 0;
	size_t free = L.cap - L.in_use, got = want < free ? want : free;

	L.in_use += got;
	L.held[gen] += got;
	return got;
}

static void drop_want(size_t i)
{
	memmove(&L.wants[i], &L.wants[i + 1], (L.nwants - i - 1) * sizeof L.wants[0]);
	L.nwants--;
}

int ledger_withdraw(int gen, uint32_t ticket)
{
	for (size_t i = 0; i < L.nwants; i++)
		if (L.wants[i].gen == gen && L.wants[i].ticket == ticket) {
			drop_want(i);
			return 1;
		}
	return 0;
}

int ledger_next(struct ledger_grant *g)
{
	if (L.nwants == 0)
		return 0;
	const struct want *w = &L.wants[0];
	size_t used = L.in_use;   /* the whole server's, every generation's */
	if (used >= L.cap)
		return 0;
	size_t free = L.cap - used;

	*g = (struct ledger_grant){ w->gen, w->ticket, w->want < free ? w->want : free };
	L.in_use += g->workers;
	L.held[g->gen] += g->workers;
	drop_want(0);
	return 1;
}

void ledger_free(int gen, size_t workers)
{
	if (gen < 0 || gen >= LEDGER_GENS)
		return;
	if (workers > L.held[gen])
		workers = L.held[gen];
	L.held[gen] -= workers;
	L.in_use -= workers;
}

void ledger_forget(int gen)
{
	for (size_t i = L.nwants; i-- > 0;)
		if (L.wants[i].gen == gen)
			drop_want(i);
	ledger_free(gen, (size_t)-1);
}

size_t ledger_cap(void) { return L.cap; }
size_t ledger_in_use(void) { return L.in_use; }
size_t ledger_waiting(void) { return L.nwants; }
