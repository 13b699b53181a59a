/*
 * fuzz_tasks.c - libFuzzer harness for task selection (runner/engine/selection.c):
 * selection_check_list() and selection_resolve() for --tasks, and
 * selection_parse_shard() for --shard.
 *
 * Input: two bytes of task count (0-4095), then the --tasks text, then
 * optionally a newline and the --shard text.  What selection.c accepts and
 * selects is compared with a plain reference parser of the documented
 * syntax (items "N" or "A-B" with A <= B, decimal digits only, commas
 * between; k/M with 0 <= k < M <= 1000000): the same lists are accepted,
 * the same tasks selected, ascending and distinct, and a list naming a task
 * past the end is refused.
 *
 * Build and run: make fuzz (see the Makefile); seeds in corpus/tasks/.
 */
#include "engine/selection.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT 512

/* Reference: parse a decimal number of digits only; -1 on overflow past
 * `limit` (then the list is out of range or too big either way). */
static const char *ref_number(const char *p, unsigned long long *v)
{
	*v = 0;
	if (*p < '0' || *p > '9')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (*v > (unsigned long long)INT64_MAX / 10)
			return NULL;
		*v = *v * 10 + (unsigned)(*p - '0');
		if (*v > (unsigned long long)INT64_MAX)
			return NULL;
	}
	return p;
}

/* Reference --tasks: 1 valid, 0 not; marks chosen[] for tasks < ntasks and
 * sets *past if any item reaches past the end. */
static int ref_list(const char *text, size_t ntasks, unsigned char *chosen, int *past)
{
	unsigned long long lo, hi;
	const char *p = text;

	*past = 0;
	for (;;) {
		if ((p = ref_number(p, &lo)) == NULL)
			return 0;
		hi = lo;
		if (*p == '-' && (p = ref_number(p + 1, &hi)) == NULL)
			return 0;
		if (hi < lo)
			return 0;
		if (hi >= ntasks)
			*past = 1;
		for (unsigned long long k = lo; k <= hi && k < ntasks; k++)
			chosen[k] = 1;
		if (*p == '\0')
			return 1;
		if (*p++ != ',')
			return 0;
	}
}

/* Reference --shard: 1 valid, 0 not.  Two quirks of the parser are
 * modelled, not flagged: k is at most 31 characters, and k may be written
 * "-0" (parse_ll() takes it). */
static int ref_shard(const char *text, long long *k, long long *m)
{
	unsigned long long a, b;
	int minus = *text == '-';
	const char *p = ref_number(text + minus, &a);

	if (p == NULL || *p != '/' || p - text > 31 || (minus && a != 0))
		return 0;
	if ((p = ref_number(p + 1, &b)) == NULL || *p != '\0')
		return 0;
	if (a > 1000000 || b < 1 || b > 1000000 || a >= b)
		return 0;
	*k = (long long)a;
	*m = (long long)b;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[MAX_TEXT + 1];
	unsigned char chosen[4096];
	struct selection sel = { 0 };
	const char *why;
	size_t *tasks = NULL, count = 0;
	long long k = 0, m = 0;
	int past = 0;

	if (size < 2 || size - 2 > MAX_TEXT)
		return -1;
	size_t ntasks = ((size_t)data[0] << 8 | data[1]) & 4095;
	memcpy(text, data + 2, size - 2);
	text[size - 2] = '\0';
	if (strlen(text) != size - 2)
		return -1; /* argv strings hold no NUL */
	char *shard = strchr(text, '\n');
	if (shard)
		*shard++ = '\0';

	memset(chosen, 0, sizeof chosen);
	int list_ok = selection_check_list(text, &why) == 0;
	if (list_ok != ref_list(text, ntasks, chosen, &past))
		abort();
	if (list_ok)
		sel.list = text;
	else
		memset(chosen, 1, sizeof chosen);
	if (shard) {
		int shard_ok = selection_parse_shard(shard, &sel, &why) == 0;
		if (shard_ok != ref_shard(shard, &k, &m))
			abort();
		if (shard_ok && (sel.shard != k || sel.shards != m))
			abort();
		if (!shard_ok)
			sel.shard = sel.shards = 0;
	}
	if (!selection_active(&sel))
		return 0;
	if (selection_resolve(&sel, ntasks, &tasks, &count) != 0) {
		if (!(sel.list && past))
			abort(); /* refused a selection of existing tasks */
		return 0;
	}
	if (sel.list && past)
		abort(); /* accepted a task that does not exist */
	size_t want = 0;
	for (size_t t = 0; t < ntasks; t++) {
		int in = chosen[t] && (sel.shards == 0 || (long long)(t % (size_t)sel.shards) == sel.shard);
		if (in && (want >= count || tasks[want++] != t))
			abort(); /* a task missing, out of order or repeated */
	}
	if (want != count)
		abort(); /* a task selected that should not be */
	free(tasks);
	return 0;
}
