/*
 * setup_arena.c - the setup arena behind cowrun_alloc().  See
 * setup_arena.h and arena.h.
 */
#include "setup_arena.h"
#include "cowrun.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static struct arena the_arena;

/* cowrun_alloc() and friends may be called from cowrun_parallel()'s
 * threads (cowrun.h); the arena itself is single-threaded (arena.h). */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

int setup_arena_init(int use_huge_pages)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	size_t reserve = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 34;

	/* Address space only: setup may use up to all of memory. */
	if (arena_init(&the_arena, reserve, use_huge_pages) != 0) {
		warnx_("cannot reserve %zu MiB for the setup arena: %s", reserve >> 20, strerror(errno));
		return -1;
	}
	return 0;
}

int setup_arena_freeze(void)
{
	if (arena_freeze(&the_arena) != 0) {
		warnx_("cannot make the setup arena read-only: %s", strerror(errno));
		return -1;
	}
	return 0;
}

const struct arena *setup_arena(void)
{
	return &the_arena;
}

void setup_arena_destroy(void)
{
	arena_destroy(&the_arena);
}

/* Append text or a decimal number to buf: async-signal-safe, unlike
 * snprintf. */
static char *append_text(char *at, const char *end, const char *text)
{
	while (*text && at < end)
		*at++ = *text++;
	return at;
}

static char *append_number(char *at, const char *end, uint64_t v)
{
	char digits[24];
	int n = 0;

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0 && at < end)
		*at++ = digits[--n];
	return at;
}

/*
 * For a SIGSEGV handler (async-signal-safe): if `addr` lies in the frozen
 * arena, write "wrote to shared setup memory at offset N of the setup
 * arena, which is read-only after setup (...)" into buf (always
 * NUL-terminated, cut to `size`) and return 1; else return 0 and leave buf
 * alone.  Fork mode's workers and the serial/omp watchdog's child say the
 * same thing this way.
 */
static int setup_arena_fault_text(const void *addr, char *buf, size_t size)
{
	size_t offset;

	if (size == 0 || !arena_contains(&the_arena, addr, &offset))
		return 0;
	char *at = buf;
	const char *end = buf + size - 1;
	at = append_text(at, end, "wrote to shared setup memory at offset ");
	at = append_number(at, end, offset);
	at = append_text(at, end, " of the setup arena, which is read-only after setup "
			 "(per-task data belongs outside it; --no-freeze allows it)");
	*at = '\0';
	return 1;
}

/* The fault handler's view: set once, before the handler is installed. */
static struct {
	char *fault;
	size_t size;
	int exit_code;
	void (*on_fault)(void);
} frozen_catch;

/* SIGSEGV: a write to the frozen arena is the task's bug, said plainly
 * through memory the parent reads; any other fault crashes as it would
 * have. */
static void on_segv(int sig, siginfo_t *info, void *context)
{
	(void)context;

	if (info->si_code > 0 &&
	    setup_arena_fault_text(info->si_addr, frozen_catch.fault, frozen_catch.size)) {
		if (frozen_catch.on_fault)
			frozen_catch.on_fault();
		_exit(frozen_catch.exit_code);
	}
	signal(sig, SIG_DFL);
	raise(sig); /* delivered with the default action once we return */
}

void setup_arena_catch_frozen_writes(char *fault, size_t size, int exit_code,
				     void (*on_fault)(void))
{
	struct sigaction sa;

	frozen_catch.fault = fault;
	frozen_catch.size = size;
	frozen_catch.exit_code = exit_code;
	frozen_catch.on_fault = on_fault;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

void *cowrun_alloc(size_t size)
{
	return cowrun_alloc_aligned(size, 0);
}

void *cowrun_alloc_aligned(size_t size, size_t align)
{
	pthread_mutex_lock(&alloc_lock);
	void *p = arena_alloc(&the_arena, size, align);
	pthread_mutex_unlock(&alloc_lock);
	return p;
}

char *cowrun_strdup(const char *s)
{
	pthread_mutex_lock(&alloc_lock);
	char *copy = arena_strdup(&the_arena, s);
	pthread_mutex_unlock(&alloc_lock);
	return copy;
}

void *cowrun_memdup(const void *p, size_t size)
{
	pthread_mutex_lock(&alloc_lock);
	void *copy = arena_memdup(&the_arena, p, size);
	pthread_mutex_unlock(&alloc_lock);
	return copy;
}
