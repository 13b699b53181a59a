/*
 * cpus.c - how many CPUs this run may use: the default -j and the cap on
 * the setup's threads.  The smallest of what the process is allowed to run
 * on (its affinity mask), what its cgroup's CPU quota pays for, and what a
 * Slurm job was given (SLURM_CPUS_PER_TASK: with task/none, Slurm sets
 * neither of the others).
 */
#define _GNU_SOURCE
#include "util.h"
#include "cgroup.h"

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

/* Read the pair in DIR/FILE; -1 if the path is too long or unread. */
static int read_cgroup_pair(const char *dir, const char *file, long long *a, long long *b)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof path, "%s/%s", dir, file);

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

/* cgroup_walk()'s visit: the quota of the cgroup at `dir` (v2's cpu.max,
 * or v1's cpu.cfs_quota_us and cpu.cfs_period_us) into the tightest so
 * far, *(int *)limit (0: none yet). */
static void tighten_quota(const char *dir, int v1, void *limit)
{
	long long quota = 0, period = 0, unused;
	int n = 0, *tightest = limit;

	if (!v1 ? read_cgroup_pair(dir, "cpu.max", &quota, &period) == 0
		: read_cgroup_pair(dir, "cpu.cfs_quota_us", &quota, &unused) == 0 &&
		  read_cgroup_pair(dir, "cpu.cfs_period_us", &period, &unused) == 0)
		n = quota_cpus(quota, period);
	if (n > 0 && (*tightest == 0 || n < *tightest))
		*tightest = n;
}

/* The CPUs this process's cgroup CPU quota allows (the tightest on its
 * cgroups and their parents, cgroup.h), or 0 if it has none. */
static int cgroup_cpus(void)
{
	int limit = 0;

	cgroup_walk("cpu", tighten_quota, &limit);
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
