/*
 * reorder.c - the in-order merge buffer.  See reorder.h.
 */
#include "reorder.h"

#include <stdlib.h>
#include <string.h>

int reorder_init(struct reorder *r, size_t ntasks)
{
	memset(r, 0, sizeof *r);
	r->ntasks = ntasks;
	r->slots = calloc(ntasks ? ntasks : 1, sizeof *r->slots);
	return r->slots ? 0 : -1;
}

enum reorder_state reorder_state(const struct reorder *r, size_t k)
{
	return k < r->ntasks ? r->slots[k].state : REORDER_DONE;
}

int reorder_put(struct reorder *r, size_t k, const void *record, size_t length)
{
	if (reorder_state(r, k) != REORDER_WAITING)
		return 1;
	struct reorder_slot *s = &r->slots[k];
	/* malloc(0) may return NULL: always ask for at least one byte. */
	s->record = malloc(length ? length : 1);
	if (s->record == NULL)
		return -1;
	if (length)
		memcpy(s->record, record, length);
	s->length = length;
	s->state = REORDER_READY;
	r->held++;
	r->held_bytes += length;
	return 0;
}

int reorder_fail(struct reorder *r, size_t k)
{
	if (reorder_state(r, k) != REORDER_WAITING)
		return 1;
	r->slots[k].state = REORDER_FAILED;
	r->held++;
	return 0;
}

/* Free the record handed out by the previous reorder_next(). */
static void release_previous(struct reorder *r)
{
	if (r->next == 0)
		return;
	struct reorder_slot *prev = &r->slots[r->next - 1];
	free(prev->record);
	prev->record = NULL;
}

int reorder_next(struct reorder *r, size_t *k, int *failed,
		 const void **record, size_t *length)
{
	release_previous(r);
	if (r->next >= r->ntasks)
		return 0;
	struct reorder_slot *s = &r->slots[r->next];
	if (s->state != REORDER_READY && s->state != REORDER_FAILED)
		return 0;
	*k = r->next;
	*failed = s->state == REORDER_FAILED;
	*record = s->record;
	*length = s->length;
	r->held--;
	r->held_bytes -= s->length;
	s->state = REORDER_DONE;
	r->next++;
	return 1;
}

void reorder_skip_next(struct reorder *r)
{
	if (r->next >= r->ntasks || r->slots[r->next].state != REORDER_WAITING)
		return;
	release_previous(r);
	r->slots[r->next].state = REORDER_DONE;
	r->next++;
}

int reorder_complete(const struct reorder *r)
{
	return r->next >= r->ntasks;
}

void reorder_free(struct reorder *r)
{
	if (r->slots == NULL)
		return;
	for (size_t k = 0; k < r->ntasks; k++)
		free(r->slots[k].record);
	free(r->slots);
	r->slots = NULL;
}
