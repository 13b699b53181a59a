/*
 * setup_arena.c - the setup arena behind cowrun_alloc().  See
 * setup_arena.h and arena.h.
 */
#include "setup_arena.h"
#include "cowrun.h"
#include "util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static struct arena the_arena;

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

void *cowrun_alloc(size_t size)
{
	return arena_alloc(&the_arena, size, 0);
}

void *cowrun_alloc_aligned(size_t size, size_t align)
{
	return arena_alloc(&the_arena, size, align);
}

char *cowrun_strdup(const char *s)
{
	return arena_strdup(&the_arena, s);
}

void *cowrun_memdup(const void *p, size_t size)
{
	return arena_memdup(&the_arena, p, size);
}
