/*
 * jobs.c - parse and resolve the -j argument.  See jobs.h.
 */
#include "jobs.h"
#include "os/util.h"

#include <errno.h>
#include <string.h>

/* Largest number a -j form may carry; far above any sane worker count,
 * low enough that no arithmetic below overflows. */
#define JOBS_VALUE_MAX 1000000LL

int jobs_parse(const char *text, struct jobs_spec *spec, const char **why)
{
	size_t len = strlen(text);
	char number[32];

	*why = "expected N, N%, +N, -N or 0";
	if (len == 0 || len >= sizeof number)
		return -1;
	memcpy(number, text, len + 1);
	spec->kind = JOBS_ABSOLUTE;
	const char *digits = number;
	if (number[0] == '+' || number[0] == '-') {
		spec->kind = number[0] == '+' ? JOBS_PLUS : JOBS_MINUS;
		digits++;
	} else if (number[len - 1] == '%') {
		spec->kind = JOBS_PERCENT;
		/* digits points into number: this drops the '%' it reads. */
		number[len - 1] = '\0'; // cppcheck-suppress unreadVariable
	}
	/* Digits only: no second sign, no spaces, nothing after. */
	if (digits[0] < '0' || digits[0] > '9')
		return -1;
	if (parse_ll(digits, 0, JOBS_VALUE_MAX, &spec->value) != 0) {
		if (errno == ERANGE)
			*why = "number out of range";
		return -1;
	}
	if (spec->kind == JOBS_PERCENT && spec->value == 0) {
		*why = "0% of the CPUs is no worker at all";
		return -1;
	}
	if (spec->kind == JOBS_ABSOLUTE && spec->value == 0)
		spec->kind = JOBS_PER_TASK;
	return 0;
}

size_t jobs_resolve(const struct jobs_spec *spec, int cpus, size_t ntasks)
{
	long long n = 1;

	switch (spec->kind) {
	case JOBS_ABSOLUTE: n = spec->value; break;
	case JOBS_PERCENT: n = cpus * spec->value / 100; break;
	case JOBS_PLUS: n = cpus + spec->value; break;
	case JOBS_MINUS: n = cpus - spec->value; break;
	case JOBS_PER_TASK: n = (long long)ntasks; break;
	}
	if (n < 1)
		n = 1;
	if ((unsigned long long)n > ntasks)
		n = (long long)ntasks;
	return (size_t)n;
}
