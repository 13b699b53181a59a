/*
 * memavail.c - how much memory this process may still take: the smaller of
 * the system's MemAvailable and, for every cgroup on the way up from this
 * process's own (cgroup.h), its limit minus its usage (v2: memory.max and
 * memory.current; v1: memory.limit_in_bytes and memory.usage_in_bytes,
 * less the inactive page cache it would drop first).  For --memfree.
 */
#include "memavail.h"
#include "cgroup.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first number in DIR/FILE (or after `key` in it), or -1. */
static long long read_number(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX], line[256];
	long long v = -1;
	int len = snprintf(path, sizeof path, "%s/%s", dir, file);
	FILE *f = len > 0 && (size_t)len < sizeof path ? fopen(path, "re") : NULL;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		size_t n = key ? strlen(key) : 0;
		if (key && (strncmp(line, key, n) != 0 || (line[n] != ' ' && line[n] != ':')))
			continue;
		if (sscanf(line + n + (key ? 1 : 0), " %lld", &v) != 1)
			v = -1;   /* "max": no limit */
		break;
	}
	fclose(f);
	return v;
}

/* cgroup_walk()'s visit: the room left in the cgroup at `dir` into the
 * tightest so far, *(long long *)room (LLONG_MAX: no limit yet). */
static void tighten_room(const char *dir, int v1, void *room)
{
	long long limit = read_number(dir, v1 ? "memory.limit_in_bytes" : "memory.max", NULL);
	long long usage = read_number(dir, v1 ? "memory.usage_in_bytes" : "memory.current", NULL);
	long long *tightest = room;

	if (limit <= 0 || usage < 0 || limit >= LLONG_MAX / 2)
		return;
	long long cache = read_number(dir, "memory.stat", v1 ? "total_inactive_file" : "inactive_file");
	long long left = limit - usage + (cache > 0 ? cache : 0);
	if (left < *tightest)
		*tightest = left < 0 ? 0 : left;
}

size_t mem_available_bytes(void)
{
	long long avail = read_number("/proc", "meminfo", "MemAvailable");

	avail = avail < 0 ? LLONG_MAX : avail * 1024;
	cgroup_walk("memory", tighten_room, &avail);
	return avail == LLONG_MAX ? SIZE_MAX : (size_t)avail;
}
