/*
 * index.c - what every sales state has, whichever loader built its rows:
 * the calendar and the merge accumulator; and freeing the tables a loader
 * built, which a loader that fails and the teardown both do.
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

/* Frees the tables (NULL or half-built is fine) and forgets them. */
void index_free_tables(struct sales *s)
{
	free(s->store_off);
	free(s->store_id);
	free(s->product);
	free(s->names);
	free(s->day);
	free(s->month);
	s->store_off = NULL;
	s->store_id = NULL;
	s->product = NULL;
	s->names = NULL;
	s->day = NULL;
	s->month = NULL;
}
