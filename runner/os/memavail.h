/*
 * memavail.h - the memory this process may still take (--memfree).
 */
#ifndef COWRUN_MEMAVAIL_H
#define COWRUN_MEMAVAIL_H

#include <stddef.h>

/* The smaller of MemAvailable and the room left under every cgroup
 * memory limit above this process (v1 or v2), in bytes; SIZE_MAX if
 * nothing can be read.  Reads a few /proc and /sys files: tens of
 * microseconds. */
size_t mem_available_bytes(void);

#endif
