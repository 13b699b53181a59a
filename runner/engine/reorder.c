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

/* Hold a copy of `bytes` for waiting task k in state `state`. */
static int hold(struct reorder *r, size_t k, enum reorder_state state,
		const void *bytes, size_t length)
{
	if (reorder_state(r, k) != REORDER_WAITING)
		return 1;
	struct reorder_slot *s = &r->slots[k];
	/* malloc(0) may return NULL: always ask for at least one byte. */
	s->record = malloc(length ? length : 1);
	if (s->record == NULL)
		return -1;
	if (length)
		memcpy(s->record, bytes, length);
	s->length = length;
	s->state = state;
	r->held++;
	r->held_bytes += length;
	return 0;
}

int reorder_put(struct reorder *r, size_t k, const void *record, size_t length)
{
	return hold(r, k, REORDER_READY, record, length);
}

int reorder_fail(struct reorder *r, size_t k, const char *message, size_t length)
{
	return hold(r, k, REORDER_FAILED, message, length);
}

void reorder_include(struct reorder *r, size_t k)
{
	if (reorder_state(r, k) == REORDER_EXCLUDED)
		r->slots[k].state = REORDER_WAITING;
}

void reorder_exclude(struct reorder *r, size_t k)
{
	if (reorder_state(r, k) == REORDER_WAITING)
		r->slots[k].state = REORDER_EXCLUDED;
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
	while (r->next < r->ntasks && r->slots[r->next].state == REORDER_EXCLUDED)
		r->slots[r->next++].state = REORDER_DONE;
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
	release_previous(r);
	while (r->next < r->ntasks && r->slots[r->next].state == REORDER_EXCLUDED)
		r->slots[r->next++].state = REORDER_DONE;
	if (r->next >= r->ntasks || r->slots[r->next].state != REORDER_WAITING)
		return;
	r->slots[r->next].state = REORDER_DONE;
	r->next++;
}

int reorder_complete(const struct reorder *r)
{
	size_t next = r->next;

	while (next < r->ntasks && r->slots[next].state == REORDER_EXCLUDED)
		next++;
	return next >= r->ntasks;
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
