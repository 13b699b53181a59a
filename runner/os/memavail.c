/*
 * memavail.c - how much memory this process may still take: the smaller of
 * the system's MemAvailable and, for every cgroup on the way up from this
 * process's own, its limit minus its usage (v2: memory.max and
 * memory.current; v1: memory.limit_in_bytes and memory.usage_in_bytes,
 * less the inactive page cache it would drop first).  For --memfree.
 */
#include "memavail.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first number in `path` (or after `key` in it), or -1. */
static long long read_number(const char *path, const char *key)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(path, "re");

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

/* The room left in the cgroup at `dir` and each of its parents, the
 * tightest; LLONG_MAX without a limit.  `v1`: the v1 file names. */
static long long cgroup_room(const char *root, char *dir, int v1)
{
	long long room = LLONG_MAX;
	char path[PATH_MAX];

	for (;;) {
		snprintf(path, sizeof path, "%s%s/%s", root, dir, v1 ? "memory.limit_in_bytes" : "memory.max");
		long long limit = read_number(path, NULL);
		snprintf(path, sizeof path, "%s%s/%s", root, dir, v1 ? "memory.usage_in_bytes" : "memory.current");
		long long usage = read_number(path, NULL);
		if (limit > 0 && usage >= 0 && limit < LLONG_MAX / 2) {
			snprintf(path, sizeof path, "%s%s/memory.stat", root, dir);
			long long cache = read_number(path, v1 ? "total_inactive_file" : "inactive_file");
			long long left = limit - usage + (cache > 0 ? cache : 0);
			if (left < room)
				room = left < 0 ? 0 : left;
		}
		char *slash = strrchr(dir, '/');
		if (slash == NULL || dir[0] == '\0')
			return room;
		*slash = '\0';
	}
}

size_t mem_available_bytes(void)
{
	long long avail = read_number("/proc/meminfo", "MemAvailable");
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");

	avail = avail < 0 ? LLONG_MAX : avail * 1024;
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		char *controllers = strchr(line, ':'), *dir;
		long long room = LLONG_MAX;
		if (controllers == NULL || (dir = strchr(++controllers, ':')) == NULL)
			continue;
		*dir++ = '\0';
		dir[strcspn(dir, "\n")] = '\0';
		if (strcmp(dir, "/") == 0)
			dir[0] = '\0';
		if (controllers[0] == '\0') {   /* v2, at the root or under unified/ */
			char copy[PATH_MAX];
			snprintf(copy, sizeof copy, "%s", dir);
			room = cgroup_room("/sys/fs/cgroup", dir, 0);
			long long unified = cgroup_room("/sys/fs/cgroup/unified", copy, 0);
			room = unified < room ? unified : room;
		} else if (strstr(controllers, "memory") != NULL) {
			room = cgroup_room("/sys/fs/cgroup/memory", dir, 1);
		}
		if (room < avail)
			avail = room;
	}
	if (f != NULL)
		fclose(f);
	return avail == LLONG_MAX ? SIZE_MAX : (size_t)avail;
}
