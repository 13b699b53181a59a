/*
 * arena.h - the setup arena: where a workload's setup() puts the state its
 * workers share copy-on-write.
 *
 * fork() copies the parent's page tables, one entry per 4 KiB page: about
 * 20 ms per GiB of setup.  The arena keeps the setup in one region that is
 * 2 MiB aligned and advised MADV_HUGEPAGE, so the kernel backs it with
 * 2 MiB pages and a fork copies one entry per 2 MiB instead (under 1 ms per
 * GiB); a worker also reads it faster (fewer TLB misses).
 *
 * The arena reserves address space up front (PROT_NONE, MAP_NORESERVE: no
 * memory, no commit charge) and makes it readable and writable in 2 MiB
 * steps as allocations need it, so setup need not know its size in advance.
 * Allocation is a bump pointer: nothing is freed before arena_destroy(), and
 * every byte handed out starts zeroed (fresh anonymous memory, never reused).
 *
 * After setup, arena_freeze() makes the arena read-only, so a worker that
 * writes to shared setup memory (and would silently copy it) faults instead;
 * arena_contains() tells a SIGSEGV handler whether the address was ours.
 *
 * Not thread-safe: one thread allocates (setup may use threads for its
 * computation, not to allocate concurrently).
 */
#ifndef COWRUN_ARENA_H
#define COWRUN_ARENA_H

#include <stddef.h>

/* The huge-page step: base alignment and commit granule. */
#define ARENA_STEP ((size_t)2 << 20)

/* Transparent huge pages, as /sys/kernel/mm/transparent_hugepage/enabled
 * says: "always" and "madvise" give an advised region huge pages. */
enum arena_thp {
	ARENA_THP_UNKNOWN = 0, /* no such file (no THP in this kernel) */
	ARENA_THP_ALWAYS,
	ARENA_THP_MADVISE,
	ARENA_THP_NEVER,
};

struct arena {
	char *base;            /* reservation start, ARENA_STEP aligned; NULL if none */
	size_t reserved;       /* bytes of address space reserved */
	size_t committed;      /* bytes from base that are readable (and writable) */
	size_t used;           /* bytes from base handed out, padding included */
	enum arena_thp thp;    /* the system's THP setting, read at init */
	int huge_requested;    /* use_huge_pages was given */
	int huge_advised;      /* madvise(MADV_HUGEPAGE) took: huge pages expected */
	int frozen;            /* arena_freeze() has run */
};

/* Memory of a region as the kernel reports it (/proc/self/smaps). */
struct arena_usage {
	size_t rss;            /* resident bytes */
	size_t anon_huge;      /* of which in transparent huge pages */
	size_t private_dirty;  /* written and not shared with another process */
};

/*
 * Reserve `reserve` bytes of address space (rounded up to ARENA_STEP) for
 * the arena `a`, 2 MiB aligned; nothing is committed yet.  With
 * use_huge_pages, the region is advised MADV_HUGEPAGE when the system's THP
 * setting allows it (a->huge_advised says whether it took); without, it is
 * advised MADV_NOHUGEPAGE, so it gets 4 KiB pages even under THP "always"
 * (the --no-huge-pages comparison).  Neither advice failing is an error.
 * Returns 0, or -1 with errno (EINVAL: reserve 0; ENOMEM: no address
 * space); on failure `a` holds no mapping and arena_destroy() is harmless.
 * The caller owns `a` and releases it with arena_destroy().
 */
int arena_init(struct arena *a, size_t reserve, int use_huge_pages);

/*
 * `size` bytes aligned to `align` (a power of two, up to ARENA_STEP or
 * more; 0 means alignof(max_align_t)), zero-filled.  Commits more of the
 * reservation in ARENA_STEP steps as needed.  A size of 0 still returns a
 * distinct pointer.  Returns NULL with errno ENOMEM when the reservation
 * is exhausted, the commit fails or the arena is frozen, EINVAL for a bad
 * `align`.  The memory belongs to the arena: never free() it.
 */
void *arena_alloc(struct arena *a, size_t size, size_t align);

/* A copy of the string `s` in the arena.  As arena_alloc(). */
char *arena_strdup(struct arena *a, const char *s);

/* A copy of `len` bytes at `p` in the arena.  As arena_alloc(). */
void *arena_memdup(struct arena *a, const void *p, size_t len);

/* Bytes handed out so far, alignment padding included. */
size_t arena_used(const struct arena *a);

/*
 * Make the committed part read-only (PROT_READ) and refuse further
 * allocation.  A later write to the arena, in this process or in a child
 * forked after, raises SIGSEGV.  Idempotent.  Returns 0, or -1 with errno
 * from mprotect().
 */
int arena_freeze(struct arena *a);

/*
 * Whether `addr` lies in a's reservation (committed or not); if so and
 * `offset` is not NULL, stores addr - base there.  Only reads `a`: safe to
 * call from a signal handler (async-signal-safe), and on an arena that was
 * never initialised or was destroyed (returns 0).
 */
int arena_contains(const struct arena *a, const void *addr, size_t *offset);

/*
 * What the kernel says about the arena's memory now: resident bytes, how
 * many of them are huge pages, how many are private dirty.  Reads
 * /proc/self/smaps (a few ms in a big process: for --verbose, not for hot
 * paths).  Returns 0, or -1 with errno (ENOENT: no smaps on this system).
 */
int arena_usage(const struct arena *a, struct arena_usage *u);

/* The same for any region [addr, addr + len) of this process. */
int arena_region_usage(const void *addr, size_t len, struct arena_usage *u);

/* "always", "madvise", "never" or "unavailable". */
const char *arena_thp_name(enum arena_thp thp);

/*
 * One line for --verbose, without a newline, e.g.
 *   "setup arena: 1.00 GiB used; huge pages: requested, THP madvise,
 *    1.00 GiB of 1.00 GiB resident is huge (100%)"
 * or "...; huge pages: off (THP never), 4 KiB pages".  Calls arena_usage().
 * Writes at most `size` bytes into buf (truncating) and returns buf.
 */
char *arena_describe(const struct arena *a, char *buf, size_t size);

/*
 * Unmap the whole reservation (frozen or not) and reset `a` to empty.  Every
 * pointer the arena handed out dies with it.  Harmless on an empty arena.
 */
void arena_destroy(struct arena *a);

#endif
