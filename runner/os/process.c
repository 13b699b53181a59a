/*
 * process.c - child processes and signals by name: reaping a child,
 * describing its end, and making a waiting process's pages ready.  See
 * process.h.
 */
#define _GNU_SOURCE
#include "process.h"
#include "util.h"

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>

const char *signal_name(int sig)
{
	static char known[40];
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev == NULL) {
		static char unknown[32];
		snprintf(unknown, sizeof unknown, "signal %d", sig);
		return unknown;
	}
	snprintf(known, sizeof known, "SIG%s", abbrev);
	return known;
}

int signal_from_name(const char *name)
{
	long long number;

	if (parse_ll(name, 1, NSIG - 1, &number) == 0)
		return (int)number;
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev != NULL && strcasecmp(abbrev, name) == 0)
			return sig;
	}
	return -1;
}

pid_t reap_child(pid_t child, int *status)
{
	pid_t got;

	while ((got = waitpid(child, status, 0)) < 0 && errno == EINTR)
		;
	return got;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older C library headers lack it */
#endif

/* Write-fault [start, end), writable private pages, now, as the first
 * writes would (page-aligned bounds).  MADV_POPULATE_WRITE; a kernel
 * older than 5.14 refuses it (EINVAL): then each page is read and its
 * byte written back, which only a single-threaded caller may do (no
 * other thread's write can fall between).  Raw pages, not objects: out of
 * AddressSanitizer's sight (its redzones between globals are bytes too). */
static void __attribute__((no_sanitize_address))
prefault_range(uintptr_t start, uintptr_t end, uintptr_t page)
{
	if (start >= end || madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0 ||
	    errno != EINVAL)
		return;
	for (volatile char *p = (volatile char *)start; (uintptr_t)p < end; p += page)
		*p = *p;   // cppcheck-suppress selfAssignment ; volatile: a read, then a write
}

/* The stack below the caller's frame: a frame of stack_kb, written. */
static void __attribute__((noinline)) prefault_stack(size_t stack_kb)
{
	volatile char below[stack_kb * 1024];

	for (size_t i = 0; i < sizeof below; i += 4096)
		below[i] = 0;
}

/* Where the next allocations come from: a block of heap_kb written and
 * given back (under malloc's mmap threshold, so from the heap itself). */
static void prefault_heap(size_t heap_kb)
{
	volatile char *block = malloc(heap_kb * 1024);

	for (size_t i = 0; block != NULL && i < heap_kb * 1024; i += 4096)
		block[i] = 0;
	free((void *)block);
}

/* dl_iterate_phdr()'s callback: each loaded object's writable segment
 * (its data and bss) of at most *(size_t *)limit bytes, less the part
 * made read-only after relocation (RELRO), which no write may touch. */
static int prefault_object(struct dl_phdr_info *info, size_t size, void *limit)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
			relro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
				     info->dlpi_phdr[i].p_memsz) & ~(page - 1);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
		uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
		if (end - start > *(const size_t *)limit)
			continue;
		/* RELRO is the start of a writable segment, when it is in one */
		prefault_range(relro_end > start ? relro_end : start, end, page);
	}
	return 0;
}

void prefault_private_pages(size_t stack_kb, size_t heap_kb, size_t small_kb)
{
	size_t limit = small_kb * 1024;

	prefault_stack(stack_kb);
	prefault_heap(heap_kb);
	dl_iterate_phdr(prefault_object, &limit);
}

char *describe_wait_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by %s (%s)%s",
			 signal_name(WTERMSIG(status)),
			 strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "stopped with wait status 0x%x", status);
	return buf;
}
