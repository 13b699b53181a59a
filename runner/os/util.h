/*
 * util.h - what every runner module uses: messages, complete writes,
 * monotonic and wall time, strict number parsing, the CPU count.  Files
 * and directories are fileops.h's, child processes and signal names
 * process.h's.
 */
#ifndef COWRUN_UTIL_H
#define COWRUN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The program name used in every message ("cowrun"). */
extern const char *progname;

/* Print "cowrun: <message>" on stderr, one line: control characters are
 * shown as '?', and a message over about 1000 bytes has the values it
 * quotes ('...') shortened in their middle, never its reason. */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* From now on, begin each warnx_() line with the time, ISO 8601 in UTC
 * to the millisecond, and "run=RUN_ID" (copied):
 * "2026-11-24T06:15:00.123Z run=20261124T061500Z-1a2b3c4d cowrun: ...". */
void warnx_log_time(const char *run_id);

/* Write all `len` bytes to fd, retrying short writes and EINTR.
 * Returns 0, or -1 with errno set. */
int write_all(int fd, const void *buf, size_t len);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

/* Wall clock (epoch) in seconds, with sub-second precision. */
double epoch_seconds(void);

/* Parse a whole string as a base-10 integer in [min, max].
 * Returns 0, or -1 (errno EINVAL: not a number; ERANGE: out of bounds). */
int parse_ll(const char *text, long long min, long long max, long long *out);

/* Parse a whole string as a finite double in [min, max]; as parse_ll. */
int parse_double(const char *text, double min, double max, double *out);

/* CPUs this run may use, at least 1 (cpus.c): the smallest of the
 * affinity mask, the cgroup's CPU quota (rounded up) and
 * SLURM_CPUS_PER_TASK.  Counted once. */
int cpu_count(void);

#endif
