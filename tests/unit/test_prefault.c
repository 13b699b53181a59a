/*
 * test_prefault.c - prefault_private_pages() makes the pages a waiting
 * process will write first before it writes them (its stack, its heap's
 * next block, its data): the writes after it take (almost) no page fault,
 * the same writes without it take one per page, and so on a kernel
 * without MADV_POPULATE_WRITE (Linux before 5.14; this file's madvise()
 * refuses it as such a kernel does).  Each case runs in a child forked
 * for it, as the spares and standbys that call it are, its pages its
 * parent's copy-on-write.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/process.h"

#define PAGES 48        /* written below the stack */
#define HEAP_PAGES 16   /* and in the heap (64 KiB: under malloc's mmap threshold) */
#define DATA_PAGES 8    /* and in the program's bss */

static char data_pages[DATA_PAGES * 4096];

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Set: madvise() refuses MADV_POPULATE_WRITE with EINVAL, as a kernel
 * older than 5.14 does.  This definition takes the place of the C
 * library's for the code under test. */
static int old_kernel;

int madvise(void *addr, size_t length, int advice)
{
	if (old_kernel && advice == MADV_POPULATE_WRITE) {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_madvise, addr, length, advice);
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Write one byte on each of PAGES pages of the stack below this frame. */
static void __attribute__((noinline)) write_stack(void)
{
	volatile char pages[PAGES * 4096];

	for (size_t i = 0; i < sizeof pages; i += 4096)
		pages[i] = 1;
}

/* In a child: the faults its writes take (the stack's; with heap_pages,
 * a block it allocates then), with or without the prefault, as its exit
 * status (capped). */
static int faults_in_child(int prefault, size_t heap_pages)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (prefault)
			prefault_private_pages(PAGES * 4 + 64, HEAP_PAGES * 4, 16384);
		long before = minor_faults();
		write_stack();
		volatile char *block = heap_pages ? malloc(heap_pages * 4096) : NULL;
		for (size_t i = 0; block != NULL && i < heap_pages * 4096; i += 4096)
			block[i] = 2;
		for (size_t i = 0; i < sizeof data_pages; i += 4096)
			((volatile char *)data_pages)[i] = 2;
		long n = minor_faults() - before;
		_exit(n > 250 ? 250 : (int)n);
	}
	int status = 0;
	assert_int_equal(reap_child(pid, &status), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void writes_after_prefault_take_no_fault(void)
{
	/* The heap's next block, written and given back here: present in
	 * the parent, copy-on-write in the child.  Under ASan, whose
	 * allocator is no brk heap (and keeps freed blocks aside), only the
	 * stack is counted. */
	char *block = malloc(HEAP_PAGES * 4096);
	assert_non_null(block);
	memset(block, 1, HEAP_PAGES * 4096);
	size_t heap = (char *)sbrk(0) > block && (char *)sbrk(0) - block < 256 * 1024 ? HEAP_PAGES : 0;
	free(block);
	write_stack();   /* the parent's stack pages are there too */
	memset(data_pages, 1, sizeof data_pages);
	int without = faults_in_child(0, heap), with = faults_in_child(1, heap);
	print_message("faults without the prefault %d, with it %d (%zu heap pages)\n", without,
		      with, heap);
	assert_true(without >= (int)(PAGES + heap + DATA_PAGES) * 3 / 4);
	assert_true(with <= 4);   /* a page or two of the test itself */
}

static void test_writes_after_prefault_take_no_fault(void **state)
{
	(void)state;
	old_kernel = 0;
	writes_after_prefault_take_no_fault();
}

static void test_without_populate_write_too(void **state)
{
	(void)state;
	old_kernel = 1;
	writes_after_prefault_take_no_fault();
	old_kernel = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_after_prefault_take_no_fault),
		cmocka_unit_test(test_without_populate_write_too),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
