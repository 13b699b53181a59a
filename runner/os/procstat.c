/*
 * procstat.c - measuring a worker's cost.  See procstat.h.
 */
#include "procstat.h"
#include <dirent.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The "Name:   123 kB" value of a field of smaps_rollup text, or 0. */
static uint64_t field_kb(const char *text, const char *name)
{
	const char *at = strstr(text, name);

	return at ? strtoull(at + strlen(name), NULL, 10) : 0;
}

ssize_t procstat_read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n > 0)
		buf[n] = '\0';
	return n > 0 ? n : -1;
}

/* smaps_rollup sums every mapping of the process: one small read. */
static void read_rollup(struct worker_stats *s)
{
	char text[4096];

	if (procstat_read_text("/proc/self/smaps_rollup", text, sizeof text) < 0)
		return;
	s->pss_kb = field_kb(text, "\nPss:");
	s->shared_kb = field_kb(text, "\nShared_Clean:") + field_kb(text, "\nShared_Dirty:");
	s->private_dirty_kb = field_kb(text, "\nPrivate_Dirty:");
}

void procstat_measure(struct worker_stats *s, int with_memory)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		s->minor_faults = (uint64_t)ru.ru_minflt;
		s->major_faults = (uint64_t)ru.ru_majflt;
		s->max_rss_kb = (uint64_t)ru.ru_maxrss;
		s->user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
		s->sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
	}
	if (with_memory)
		read_rollup(s);
}

size_t procstat_rss_bytes(void)
{
	char text[128];
	unsigned long pages = 0, resident = 0;

	if (procstat_read_text("/proc/self/statm", text, sizeof text) < 0)
		return 0;
	if (sscanf(text, "%lu %lu", &pages, &resident) != 2)
		return 0;
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

size_t procstat_peak_rss_bytes(void)
{
	char text[4096];
	unsigned long kb = 0;

	if (procstat_read_text("/proc/self/status", text, sizeof text) < 0)
		return 0;
	const char *at = strstr(text, "\nVmHWM:");
	if (at == NULL || sscanf(at + 7, " %lu", &kb) != 1)
		return 0;
	return (size_t)kb * 1024;
}

size_t procstat_threads(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	size_t n = 0;

	if (dir == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL)
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

void procstat_write_header(FILE *f)
{
	fprintf(f, "# one row per worker process (replacements included); memory in KiB,\n"
		   "# times in ms unless named _s; pss/shared/private_dirty from smaps_rollup at exit\n"
		   "worker,pid,tasks,fork_ms,start_delay_ms,minor_faults,major_faults,"
		   "max_rss_kb,pss_kb,shared_kb,private_dirty_kb,user_s,sys_s\n");
}

void procstat_write_row(FILE *f, const struct worker_stats *s)
{
	fprintf(f, "%llu,%llu,%llu,%.3f,%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%.3f\n",
		(unsigned long long)s->slot, (unsigned long long)s->pid,
		(unsigned long long)s->tasks, s->fork_ns / 1e6, s->start_delay_ns / 1e6,
		(unsigned long long)s->minor_faults, (unsigned long long)s->major_faults,
		(unsigned long long)s->max_rss_kb, (unsigned long long)s->pss_kb,
		(unsigned long long)s->shared_kb, (unsigned long long)s->private_dirty_kb,
		s->user_us / 1e6, s->sys_us / 1e6);
}
