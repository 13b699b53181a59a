/*
 * format.c - number formatting for workloads' reports (cowrun.h):
 * integers only, so a report never depends on the C library's locale or
 * floating-point printing.
 */
#include "cowrun.h"

const char *cowrun_fmt_count(char *buf, size_t size, int64_t v)
{
	char tmp[32]; /* 19 digits, 6 commas and a sign at most */
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	size_t n = 0;
	int digits = 0;

	do {
		if (digits > 0 && digits % 3 == 0)
			tmp[n++] = ',';
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
		digits++;
	} while (u > 0);
	if (v < 0)
		tmp[n++] = '-';
	if (size == 0)
		return buf;
	if (n >= size)
		n = size - 1; /* keeps the leading part: never in a NUMBUF */
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}
