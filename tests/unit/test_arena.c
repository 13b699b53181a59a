/*
 * test_arena.c - unit tests for runner/os/arena.c: the base is 2 MiB aligned,
 * allocations are aligned, zeroed and intact while the arena grows far past
 * its first commit step, exhaustion and a frozen arena give NULL/ENOMEM, a
 * write to a frozen arena faults in a forked child (and a SIGSEGV handler
 * can name the offset) while reads still work, arena_contains() answers
 * right.  Every behaviour test runs with and without huge pages.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/arena.h"

#define MiB ((size_t)1 << 20)

static int huge_on = 1, huge_off = 0;

/* The use_huge_pages flag a test was registered with. */
static int huge_flag(void **state)
{
	return *(int *)*state;
}

static int is_aligned(const void *p, size_t align)
{
	return ((uintptr_t)p & (align - 1)) == 0;
}

static void test_init_rejects_zero(void **state)
{
	struct arena a;

	errno = 0;
	assert_int_equal(arena_init(&a, 0, huge_flag(state)), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(a.base);
	arena_destroy(&a);
	arena_destroy(&a);
}

/* Several arenas, with odd-sized mappings between them so the address
 * space is not 2 MiB aligned by chance: every base is. */
static void test_base_aligned(void **state)
{
	struct arena a[6];
	void *gap[6];

	for (int i = 0; i < 6; i++) {
		gap[i] = mmap(NULL, (size_t)(i + 1) * 4096 + 12288, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(gap[i] != MAP_FAILED);
		assert_int_equal(arena_init(&a[i], (size_t)i * MiB + 1, huge_flag(state)), 0);
		assert_true(is_aligned(a[i].base, ARENA_STEP));
		assert_int_equal(a[i].reserved % ARENA_STEP, 0);
		assert_true(a[i].reserved >= (size_t)i * MiB + 1);
		assert_int_equal(a[i].committed, 0);
		assert_int_equal(arena_used(&a[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		arena_destroy(&a[i]);
		munmap(gap[i], (size_t)(i + 1) * 4096 + 12288);
	}
}

/* The VmFlags line of the mapping holding `addr`, from /proc/self/smaps
 * (" rd wr mr mw me ac hg" ...), into buf; fails the test if none. */
static void vmflags_of(const void *addr, char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int inside = 0;

	assert_non_null(f);
	buf[0] = '\0';
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(buf, size, "%.200s", line + 8);
			break;
		}
	}
	fclose(f);
	if (buf[0] == '\0')
		fail_msg("no VmFlags for %p in /proc/self/smaps", addr);
}

/* Does a VmFlags line hold the two-letter flag? */
static int has_vmflag(const char *flags, const char *flag)
{
	char padded[8];

	snprintf(padded, sizeof padded, " %s", flag);
	return strstr(flags, padded) != NULL;
}

/* The kernel's own view: with huge pages the region is advised
 * MADV_HUGEPAGE ("hg" in its VmFlags) wherever THP allows it, and 4 KiB
 * pages are asked for ("nh") when they are not wanted. */
static void test_huge_advice(void **state)
{
	struct arena a;
	char line[256], flags[256];
	int thp_allows;

	assert_int_equal(arena_init(&a, 8 * MiB, huge_flag(state)), 0);
	assert_int_equal(a.huge_requested, huge_flag(state));
	thp_allows = a.thp == ARENA_THP_ALWAYS || a.thp == ARENA_THP_MADVISE;
	assert_non_null(arena_alloc(&a, 4 * MiB, ARENA_STEP));
	vmflags_of(a.base, flags, sizeof flags);
	if (huge_flag(state) && thp_allows) {
		assert_true(a.huge_advised);
		if (!has_vmflag(flags, "hg"))
			fail_msg("arena not advised MADV_HUGEPAGE: VmFlags%s", flags);
	} else {
		assert_false(a.huge_advised);
		assert_false(has_vmflag(flags, "hg"));
	}
	if (!huge_flag(state) && a.thp != ARENA_THP_UNKNOWN && !has_vmflag(flags, "nh"))
		fail_msg("arena without huge pages not advised MADV_NOHUGEPAGE: VmFlags%s", flags);
	arena_describe(&a, line, sizeof line);
	assert_memory_equal(line, "setup arena: ", 13);
	assert_non_null(strstr(line, huge_flag(state) && thp_allows ? "huge pages: requested"
								     : "huge pages: "));
	arena_destroy(&a);
}

static void test_alloc_zeroed_distinct(void **state)
{
	struct arena a;
	char *p, *q, *z1, *z2;

	assert_int_equal(arena_init(&a, 4 * MiB, huge_flag(state)), 0);
	p = arena_alloc(&a, 100, 1);
	q = arena_alloc(&a, 100, 1);
	assert_non_null(p);
	assert_non_null(q);
	assert_true(q >= p + 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(p[i] | q[i], 0);
	memset(p, 0xab, 100);
	assert_int_equal((unsigned char)q[0], 0);
	z1 = arena_alloc(&a, 0, 1);
	z2 = arena_alloc(&a, 0, 1);
	assert_non_null(z1);
	assert_true(z1 != z2);
	assert_string_equal(arena_strdup(&a, "store-0042.txt"), "store-0042.txt");
	assert_string_equal(arena_strdup(&a, ""), "");
	assert_memory_equal(arena_memdup(&a, "a\0b", 3), "a\0b", 3);
	assert_true(arena_contains(&a, p, NULL));
	arena_destroy(&a);
}

static void test_alignment(void **state)
{
	struct arena a;
	void *p;

	assert_int_equal(arena_init(&a, 16 * MiB, huge_flag(state)), 0);
	for (size_t align = 1; align <= 4096; align *= 2) {
		assert_non_null(arena_alloc(&a, 3, 1));  /* misalign the bump */
		p = arena_alloc(&a, 5, align);
		assert_non_null(p);
		assert_true(is_aligned(p, align));
	}
	assert_non_null(arena_alloc(&a, 1, 1));
	p = arena_alloc(&a, 17, 0);
	assert_true(is_aligned(p, _Alignof(max_align_t)));
	p = arena_alloc(&a, 1, ARENA_STEP);
	assert_true(is_aligned(p, ARENA_STEP));
	assert_true(p > (void *)a.base);
	errno = 0;
	assert_null(arena_alloc(&a, 8, 3));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(arena_alloc(&a, 8, 48));
	assert_int_equal(errno, EINVAL);
	arena_destroy(&a);
}

/* Piece k: its size and its fill byte. */
static size_t piece_size(size_t k)
{
	return 1000 + (k * 7919) % 7000;
}

static unsigned char piece_byte(size_t k)
{
	return (unsigned char)(k * 131 + 7);
}

/* 300 MiB in pieces of 1-8 KB: each filled, then all checked intact. */
static void test_growth(void **state)
{
	struct arena a;
	size_t n = 0, total = 0;
	unsigned char **piece = malloc(400000 * sizeof *piece);

	assert_non_null(piece);
	assert_int_equal(arena_init(&a, 512 * MiB, huge_flag(state)), 0);
	while (total < 300 * MiB) {
		piece[n] = arena_alloc(&a, piece_size(n), 8);
		assert_non_null(piece[n]);
		memset(piece[n], piece_byte(n), piece_size(n));
		total += piece_size(n);
		n++;
		assert_int_equal(a.committed % ARENA_STEP, 0);
		assert_true(a.committed >= a.used && a.committed - a.used < ARENA_STEP);
	}
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < piece_size(k); i++)
			if (piece[k][i] != piece_byte(k))
				fail_msg("piece %zu byte %zu changed", k, i);
		if (k + 1 < n)
			assert_true(piece[k] + piece_size(k) <= piece[k + 1]);
	}
	assert_true(arena_used(&a) >= total);
	arena_destroy(&a);
	free(piece);
}

static void test_exhaustion(void **state)
{
	struct arena a;

	assert_int_equal(arena_init(&a, 4 * MiB, huge_flag(state)), 0);
	assert_int_equal(a.reserved, 4 * MiB);
	assert_non_null(arena_alloc(&a, 3 * MiB, 1));
	errno = 0;
	assert_null(arena_alloc(&a, 2 * MiB, 1));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(arena_alloc(&a, SIZE_MAX, 1));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(arena_alloc(&a, 1, (size_t)1 << (sizeof(size_t) * 8 - 1)));
	assert_int_equal(errno, ENOMEM);
	assert_non_null(arena_alloc(&a, MiB, 1));  /* exactly what is left */
	assert_int_equal(arena_used(&a), 4 * MiB);
	errno = 0;
	assert_null(arena_alloc(&a, 1, 1));
	assert_int_equal(errno, ENOMEM);
	arena_destroy(&a);
}

static int fault_pipe = -1;

/* Worker-side SIGSEGV handler, as the runner's: if the fault is in the
 * arena, send the offset and leave with 42; else die of the signal. */
static struct arena *fault_arena;

static void on_segv(int sig, siginfo_t *info, void *context)
{
	size_t offset;

	(void)context;
	if (arena_contains(fault_arena, info->si_addr, &offset)) {
		if (write(fault_pipe, &offset, sizeof offset) != sizeof offset)
			_exit(43);
		_exit(42);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* In a child: read p (must hold `want`), then write it.  With `handler`,
 * catch the fault with on_segv.  Returns the child's wait status. */
static int child_reads_then_writes(volatile char *p, char want, int handler)
{
	struct rlimit no_core = { 0, 0 };
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGSEGV, SIG_DFL);  /* not cmocka's */
		if (handler) {
			struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
			sigaction(SIGSEGV, &sa, NULL);
		}
		if (*p != want)
			_exit(2);
		*p = (char)(want + 1);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_freeze(void **state)
{
	struct arena a;
	char *p, *far;
	int fds[2], status;
	size_t offset = 0;

	assert_int_equal(arena_init(&a, 64 * MiB, huge_flag(state)), 0);
	p = arena_alloc(&a, 100, 1);
	far = (char *)arena_alloc(&a, 5 * MiB, 1) + 5 * MiB - 1;
	*p = 'x';
	*far = 'y';
	assert_int_equal(arena_freeze(&a), 0);
	assert_int_equal(arena_freeze(&a), 0);
	errno = 0;
	assert_null(arena_alloc(&a, 1, 1));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(*p, 'x');  /* the parent still reads */

	status = child_reads_then_writes(p, 'x', 0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);

	assert_int_equal(pipe(fds), 0);
	fault_pipe = fds[1];
	fault_arena = &a;
	status = child_reads_then_writes(far, 'y', 1);
	close(fds[1]);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
	assert_int_equal(read(fds[0], &offset, sizeof offset), sizeof offset);
	close(fds[0]);
	assert_int_equal(offset, (size_t)(far - a.base));
	assert_int_equal(*far, 'y');
	arena_destroy(&a);
}

static void test_contains(void **state)
{
	struct arena a;
	size_t offset = 99;
	int local = 0;
	char *p;

	assert_false(arena_contains(&(struct arena){ 0 }, &local, &offset));
	assert_int_equal(arena_init(&a, 3 * MiB, huge_flag(state)), 0);
	assert_true(arena_contains(&a, a.base, &offset));
	assert_int_equal(offset, 0);
	assert_non_null(arena_alloc(&a, 1000, 1));
	p = arena_alloc(&a, 10, 64);
	assert_true(arena_contains(&a, p + 9, &offset));
	assert_int_equal(offset, (size_t)(p + 9 - a.base));
	assert_true(arena_contains(&a, a.base + a.reserved - 1, NULL));
	offset = 99;
	assert_false(arena_contains(&a, a.base + a.reserved, &offset));
	assert_int_equal(offset, 99);
	assert_false(arena_contains(&a, a.base - 1, &offset));
	assert_false(arena_contains(&a, NULL, &offset));
	assert_false(arena_contains(&a, &local, &offset));
	arena_destroy(&a);
	assert_false(arena_contains(&a, p, &offset));
}

/* What the kernel reports: every touched byte resident; without huge
 * pages none of it huge (MADV_NOHUGEPAGE holds even under THP always). */
static void test_usage(void **state)
{
	struct arena a;
	struct arena_usage u;
	char *p;

	assert_int_equal(arena_init(&a, 64 * MiB, huge_flag(state)), 0);
	p = arena_alloc(&a, 16 * MiB, ARENA_STEP);
	memset(p, 1, 16 * MiB);
	assert_int_equal(arena_usage(&a, &u), 0);
	assert_true(u.rss >= 16 * MiB);
	assert_true(u.anon_huge <= u.rss);
	assert_true(u.private_dirty >= 16 * MiB);
	if (!huge_flag(state))
		assert_int_equal(u.anon_huge, 0);
	/* Advised, touched 2 MiB-aligned memory is backed by huge pages
	 * (some of it: fragmentation decides how much, not this test). */
	else if (a.huge_advised && u.anon_huge == 0)
		fail_msg("16 MiB touched in an advised arena, none of it in huge pages");
	arena_destroy(&a);
}

/* Test f twice, named apart in the TAP output. */
#define BOTH(f) { #f " (huge pages)", f, NULL, NULL, &huge_on }, \
		{ #f " (4 KiB pages)", f, NULL, NULL, &huge_off }

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_init_rejects_zero),
		BOTH(test_base_aligned),
		BOTH(test_huge_advice),
		BOTH(test_alloc_zeroed_distinct),
		BOTH(test_alignment),
		BOTH(test_growth),
		BOTH(test_exhaustion),
		BOTH(test_freeze),
		BOTH(test_contains),
		BOTH(test_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
