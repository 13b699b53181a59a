/*
 * procstat.h - what a worker cost: measured in the worker as it exits
 * (getrusage, /proc/self/smaps_rollup) and sent to the parent, which adds
 * its own side (how long fork() took) and can write them all as CSV
 * (--stats FILE).  This is how copy-on-write becomes visible: Pss is the
 * worker's fair share of memory, Shared what it still shares with the
 * parent and its siblings, Private_Dirty what it copied or allocated.
 */
#ifndef COWRUN_PROCSTAT_H
#define COWRUN_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Sent by a worker in a WIRE_STATS frame: plain integers, fixed layout. */
struct worker_stats {
	uint64_t start_delay_ns;  /* from the parent calling fork() to the child running */
	uint64_t tasks;           /* attempts it ran */
	uint64_t minor_faults, major_faults;
	uint64_t max_rss_kb;
	uint64_t pss_kb, shared_kb, private_dirty_kb;
	uint64_t user_us, sys_us;
	/* Filled in by the parent: */
	uint64_t fork_ns;         /* time inside fork() in the parent */
	uint64_t slot, pid;
};

/* In the worker: fill everything but the parent's fields; the memory
 * fields (Pss, private dirty: /proc/self/smaps_rollup, milliseconds in a
 * process mapping a large setup) only `with_memory`, else 0. */
void procstat_measure(struct worker_stats *s, int with_memory);

/* Resident memory of this process (from /proc/self/statm), in bytes. */
size_t procstat_rss_bytes(void);

/* The peak resident memory of this process so far (VmHWM in
 * /proc/self/status), in bytes; 0 if it cannot be read. */
size_t procstat_peak_rss_bytes(void);

/* Threads of this process now (entries of /proc/self/task), or 0 if it
 * cannot be read.  The runner forks with one: a thread left running in
 * the parent (a BLAS pool, OpenMP) would be missing in every worker. */
size_t procstat_threads(void);

/* A small /proc file's text into buf, NUL-terminated: one read() of at
 * most size - 1 bytes (size > 0).  Returns its length, or -1 if it cannot
 * be read or is empty (a process gone).  Also compare/psswatch's. */
ssize_t procstat_read_text(const char *path, char *buf, size_t size);

/* --stats: the CSV header and one row per worker. */
void procstat_write_header(FILE *f);
void procstat_write_row(FILE *f, const struct worker_stats *s);

#endif
