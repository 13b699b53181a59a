/*
 * arena.c - the setup arena: a bump allocator in one 2 MiB aligned,
 * huge-page advised region that is reserved up front, committed as it
 * grows, and frozen read-only before the workers fork.  See arena.h.
 */
#define _GNU_SOURCE
#include "arena.h"

#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

/* n rounded up to a multiple of the power of two `step`; 0 on overflow. */
static size_t round_up(size_t n, size_t step)
{
	if (n > SIZE_MAX - (step - 1))
		return 0;
	return (n + step - 1) & ~(step - 1);
}

/* The bracketed word of THP_ENABLED, e.g. "always [madvise] never". */
static enum arena_thp read_thp_setting(void)
{
	char line[128] = "";
	FILE *f = fopen(THP_ENABLED, "re");

	if (f == NULL)
		return ARENA_THP_UNKNOWN;
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	fclose(f);
	if (strstr(line, "[always]"))
		return ARENA_THP_ALWAYS;
	if (strstr(line, "[madvise]"))
		return ARENA_THP_MADVISE;
	if (strstr(line, "[never]"))
		return ARENA_THP_NEVER;
	return ARENA_THP_UNKNOWN;
}

/* Map len + ARENA_STEP bytes PROT_NONE and unmap what lies outside the
 * first ARENA_STEP aligned stretch of len bytes.  NULL on failure. */
static char *reserve_aligned(size_t len)
{
	size_t span = len + ARENA_STEP;
	char *raw = mmap(NULL, span, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *base;
	size_t head, tail;

	if (raw == MAP_FAILED)
		return NULL;
	base = (char *)round_up((uintptr_t)raw, ARENA_STEP);
	head = (size_t)(base - raw);
	tail = span - head - len;
	if (head > 0)
		munmap(raw, head);
	if (tail > 0)
		munmap(base + len, tail);
	return base;
}

int arena_init(struct arena *a, size_t reserve, int use_huge_pages)
{
	size_t len = round_up(reserve, ARENA_STEP);

	memset(a, 0, sizeof *a);
	if (reserve == 0) {
		errno = EINVAL;
		return -1;
	}
	if (len == 0 || len > SIZE_MAX - ARENA_STEP) {
		errno = ENOMEM;
		return -1;
	}
	a->base = reserve_aligned(len);
	if (a->base == NULL)
		return -1;
	a->reserved = len;
	a->thp = read_thp_setting();
	a->huge_requested = use_huge_pages != 0;
	/* Advice set on the whole reservation now is inherited by every part
	 * committed later, so the committed part stays one mapping. */
	if (use_huge_pages && a->thp != ARENA_THP_NEVER)
		a->huge_advised = madvise(a->base, len, MADV_HUGEPAGE) == 0;
	else if (!use_huge_pages)
		(void)madvise(a->base, len, MADV_NOHUGEPAGE);
	return 0;
}

/* Make the reservation readable and writable up to at least `end` bytes
 * from base, in ARENA_STEP steps.  Returns 0 or -1 (errno from mprotect). */
static int commit_to(struct arena *a, size_t end)
{
	size_t want = round_up(end, ARENA_STEP);

	if (want <= a->committed)
		return 0;
	if (mprotect(a->base + a->committed, want - a->committed,
		     PROT_READ | PROT_WRITE) != 0) {
		errno = ENOMEM;
		return -1;
	}
	a->committed = want;
	return 0;
}

void *arena_alloc(struct arena *a, size_t size, size_t align)
{
	size_t start;

	if (align == 0)
		align = alignof(max_align_t);
	if ((align & (align - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (size == 0)
		size = 1;
	start = round_up(a->used, align);
	if (a->base == NULL || a->frozen || (start == 0 && a->used != 0) ||
	    start > a->reserved || size > a->reserved - start) {
		errno = ENOMEM;
		return NULL;
	}
	if (commit_to(a, start + size) != 0)
		return NULL;
	a->used = start + size;
	return a->base + start;
}

void *arena_memdup(struct arena *a, const void *p, size_t len)
{
	void *copy = arena_alloc(a, len, 1);

	if (copy != NULL && len > 0)
		memcpy(copy, p, len);
	return copy;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_memdup(a, s, strlen(s) + 1);
}

size_t arena_used(const struct arena *a)
{
	return a->used;
}

int arena_freeze(struct arena *a)
{
	if (a->committed > 0 && mprotect(a->base, a->committed, PROT_READ) != 0)
		return -1;
	a->frozen = 1;
	return 0;
}

int arena_contains(const struct arena *a, const void *addr, size_t *offset)
{
	uintptr_t p = (uintptr_t)addr, base = (uintptr_t)a->base;

	if (a->base == NULL || p < base || p - base >= a->reserved)
		return 0;
	if (offset != NULL)
		*offset = (size_t)(p - base);
	return 1;
}

/* "Name:   123 kB" -> bytes added to *sum, if the line's name is `name`. */
static void add_field(const char *line, const char *name, size_t *sum)
{
	size_t n = strlen(name);
	unsigned long long kb;

	if (strncmp(line, name, n) == 0 && line[n] == ':' &&
	    sscanf(line + n + 1, "%llu", &kb) == 1)
		*sum += (size_t)kb * 1024;
}

/* Whether an smaps mapping header "start-end perms ..." overlaps
 * [lo, hi); sets *is_header to whether the line is a header at all. */
static int header_overlaps(const char *line, uintptr_t lo, uintptr_t hi,
			   int *is_header)
{
	uintmax_t start, end;
	int n = 0;

	*is_header = sscanf(line, "%jx-%jx %n", &start, &end, &n) == 2 && n > 0;
	return *is_header && start < hi && end > lo;
}

int arena_region_usage(const void *addr, size_t len, struct arena_usage *u)
{
	char line[256];
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;
	int inside = 0, at_line_start = 1, header, overlaps;
	FILE *f = fopen("/proc/self/smaps", "re");

	memset(u, 0, sizeof *u);
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		int starts = at_line_start;

		at_line_start = strchr(line, '\n') != NULL;
		if (!starts)
			continue;  /* the rest of a long line (a path) */
		overlaps = header_overlaps(line, lo, hi, &header);
		if (header) {
			inside = overlaps;
			continue;
		}
		if (!inside)
			continue;
		add_field(line, "Rss", &u->rss);
		add_field(line, "AnonHugePages", &u->anon_huge);
		add_field(line, "Private_Dirty", &u->private_dirty);
	}
	fclose(f);
	return 0;
}

int arena_usage(const struct arena *a, struct arena_usage *u)
{
	if (a->base == NULL) {
		memset(u, 0, sizeof *u);
		return 0;
	}
	return arena_region_usage(a->base, a->reserved, u);
}

const char *arena_thp_name(enum arena_thp thp)
{
	switch (thp) {
	case ARENA_THP_ALWAYS: return "always";
	case ARENA_THP_MADVISE: return "madvise";
	case ARENA_THP_NEVER: return "never";
	default: return "unavailable";
	}
}

/* "512 KiB", "12.0 MiB", "1.00 GiB" into buf. */
static const char *human_size(size_t n, char *buf, size_t size)
{
	if (n >= (size_t)1 << 30)
		snprintf(buf, size, "%.2f GiB", (double)n / (1 << 30));
	else if (n >= (size_t)1 << 20)
		snprintf(buf, size, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, size, "%zu KiB", n >> 10);
	return buf;
}

char *arena_describe(const struct arena *a, char *buf, size_t size)
{
	struct arena_usage u;
	char used[32], rss[32], huge[32];
	int got = arena_usage(a, &u) == 0;

	human_size(a->used, used, sizeof used);
	if (!a->huge_advised) {
		snprintf(buf, size, "setup arena: %s used; huge pages: %s (THP %s), "
			 "4 KiB pages", used, a->huge_requested ? "unavailable" : "off",
			 arena_thp_name(a->thp));
	} else if (!got || u.rss == 0) {
		snprintf(buf, size, "setup arena: %s used; huge pages: requested, "
			 "THP %s", used, arena_thp_name(a->thp));
	} else {
		snprintf(buf, size, "setup arena: %s used; huge pages: requested, "
			 "THP %s, %s of %s resident is huge (%.0f%%)", used,
			 arena_thp_name(a->thp), human_size(u.anon_huge, huge, sizeof huge),
			 human_size(u.rss, rss, sizeof rss),
			 100.0 * (double)u.anon_huge / (double)u.rss);
	}
	return buf;
}

void arena_destroy(struct arena *a)
{
	if (a->base != NULL)
		munmap(a->base, a->reserved);
	memset(a, 0, sizeof *a);
}
