/*
 * cpus.c - how many CPUs this run may use: the default -j and the cap on
 * the setup's threads.  The smallest of what the process is allowed to run
 * on (its affinity mask), what its cgroup's CPU quota pays for, and what a
 * Slurm job was given (SLURM_CPUS_PER_TASK: with task/none, Slurm sets
 * neither of the others).
 */
#define _GNU_SOURCE
#include "util.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A positive integer from an environment variable, or 0. */
static int env_count(const char *name)
{
	const char *text = getenv(name);
	char *end;
	long v;

	if (text == NULL || *text < '0' || *text > '9')
		return 0;
	v = strtol(text, &end, 10);
	return *end == '\0' && v > 0 && v <= INT_MAX ? (int)v : 0;
}

/* Two numbers from the first line of a file ("max" reads as 0). */
static int read_pair(const char *path, long long *a, long long *b)
{
	FILE *f = fopen(path, "r");
	char first[32];
	int n;

	if (f == NULL)
		return -1;
	n = fscanf(f, "%31s %lld", first, b);
	fclose(f);
	if (n < 1)
		return -1;
	*a = strcmp(first, "max") == 0 ? 0 : atoll(first);
	if (n < 2)
		*b = 0;
	return 0;
}

/* Read the pair in ROOT/AT/FILE; -1 if the path is too long or unread. */
static int read_cgroup_pair(const char *root, const char *at, const char *file, long long *a,
			    long long *b)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof path, "%s%s/%s", root, at, file);

	return n > 0 && (size_t)n < sizeof path ? read_pair(path, a, b) : -1;
}

/* CPUs a quota of `quota` per `period` pays for (rounded up); 0: none. */
static int quota_cpus(long long quota, long long period)
{
	if (quota <= 0 || period <= 0)
		return 0;
	long long n = (quota + period - 1) / period;
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* The tightest quota on dir and its ancestors up to (not above) root:
 * cgroup v2's cpu.max, or v1's cpu.cfs_quota_us and cpu.cfs_period_us. */
static int tightest_quota(const char *root, const char *dir, int v2)
{
	char at[PATH_MAX];
	int limit = 0;

	snprintf(at, sizeof at, "%s", dir);
	for (;;) {
		long long quota = 0, period = 0, unused;
		int n = 0;
		if (v2 ? read_cgroup_pair(root, at, "cpu.max", &quota, &period) == 0
		       : read_cgroup_pair(root, at, "cpu.cfs_quota_us", &quota, &unused) == 0 &&
			 read_cgroup_pair(root, at, "cpu.cfs_period_us", &period, &unused) == 0)
			n = quota_cpus(quota, period);
		if (n > 0 && (limit == 0 || n < limit))
			limit = n;
		char *slash = strrchr(at, '/');
		if (slash == NULL || at[0] == '\0')
			return limit;
		*slash = '\0'; /* the parent; "" is the root itself */
	}
}

/* Does a v1 hierarchy's controller list ("cpu,cpuacct") hold "cpu"? */
static int names_cpu(const char *controllers)
{
	size_t n;

	for (const char *c = controllers; *c; c += n + (c[n] == ',')) {
		n = strcspn(c, ",");
		if (n == 3 && strncmp(c, "cpu", 3) == 0)
			return 1;
	}
	return 0;
}

/* The CPUs this process's cgroup CPU quota allows, or 0 if it has none.
 * COWRUN_CGROUP_ROOT names where the cgroup file systems are mounted
 * (default /sys/fs/cgroup: v2 there or under unified/, v1 under the
 * directory named after the cpu controller's list, e.g. cpu,cpuacct). */
static int cgroup_cpus(void)
{
	const char *root = getenv("COWRUN_CGROUP_ROOT");
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[PATH_MAX + 64], base[PATH_MAX];
	int limit = 0;

	if (root == NULL || root[0] == '\0')
		root = "/sys/fs/cgroup";
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		char *controllers = strchr(line, ':'), *dir;
		int n = 0;
		if (controllers == NULL || (dir = strchr(++controllers, ':')) == NULL)
			continue;
		*dir++ = '\0';
		dir[strcspn(dir, "\n")] = '\0';
		if (strcmp(dir, "/") == 0)
			dir[0] = '\0';
		if (controllers[0] == '\0') { /* v2 */
			n = tightest_quota(root, dir, 1);
			snprintf(base, sizeof base, "%s/unified", root);
			int m = tightest_quota(base, dir, 1);
			n = n == 0 || (m > 0 && m < n) ? m : n;
		} else if (names_cpu(controllers)) {
			snprintf(base, sizeof base, "%s/%s", root, controllers);
			n = tightest_quota(base, dir, 0);
		}
		if (n > 0 && (limit == 0 || n < limit))
			limit = n;
	}
	fclose(f);
	return limit;
}

int cpu_count(void)
{
	static int counted;
	cpu_set_t set;

	if (counted > 0)
		return counted;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int n = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0
		? CPU_COUNT(&set) : online > 0 ? (int)online : 1;
	int quota = cgroup_cpus(), slurm = env_count("SLURM_CPUS_PER_TASK");

	if (quota > 0 && quota < n)
		n = quota;
	if (slurm > 0 && slurm < n)
		n = slurm;
	counted = n;
	return n;
}
