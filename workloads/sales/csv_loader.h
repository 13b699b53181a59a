/*
 * csv_loader.h - the CSV reader's private parts: the loader's state (the
 * file, its parts and their tables, each thread's scratch), its errors,
 * and what its files (workloads/sales/csv_*.c) call of each other.  Only
 * they include it; the rest of the workload sees csv_load() (sales.h).
 */
#ifndef COWRUN_SALES_CSV_LOADER_H
#define COWRUN_SALES_CSV_LOADER_H

#include "csv_hash.h"

/* The streaming form of cowrun_hash64() (XXH3, as the runner's inputid.c
 * compiles it in): a part read a piece at a time hashes as its whole. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define PIECE       ((size_t)256 << 10) /* a part is read this much at a time */
#define PART_EXTRA  ((size_t)64 << 10)  /* read past a part for its last line */
#define REVENUE_MAX (INT64_MAX / 1000)  /* the reports compute part * 1000 */
#define PAD         16                  /* bytes after a buffer, for the fast path */
#define DIRECT_IDS  65536               /* ids below this skip the hash maps */
#define NONE        UINT32_MAX

/* ---- the loader's state ----------------------------------------------- */

enum err_kind { E_NONE, E_LINE, E_NOLINE, E_READ, E_CHANGED, E_NOMEM };

struct csv_err {
	enum err_kind kind;
	size_t line;    /* E_LINE: line number within the part (1 = its first) */
	int errnum;     /* E_READ */
	char msg[224];  /* E_LINE, E_NOLINE: the text after "path:line: " */
};

/* One row as parsed; name points into the line (product id 0). */
struct row {
	uint32_t day, store, pid, qty, price;
	const char *name;
	size_t len;
};

/* One part: pass 1's tables, then pass 2's places.  Its memory is the
 * loader's (csv_load.c frees it); its product table is freed once merged
 * (pass 2 finds products in the loader's catalogue). */
struct part {
	uint64_t hash;        /* of the part's own bytes */
	size_t lines, rows;
	int64_t revenue;      /* stops growing once over REVENUE_MAX */
	uint32_t first_day, last_day;
	struct idmap stores;  /* store id -> local store */
	uint32_t *sid;        /* local store -> id, first-appearance order */
	size_t *count;        /* rows per local store (pass 2 counts down) */
	size_t nstores, scap;
	size_t *place;        /* local store -> next row index (pass 2) */
	struct ptable prod;   /* local products, first-appearance order */
	struct csv_err err;
};

/* Per-thread scratch: a piece of the part, a copy of a bad line, a date memo,
 * and the index of each small store and product id (NONE: not seen yet):
 * most CSVs number their stores and products from 1, and an array beats a
 * hash map per row.  Stores: the current part's local index (reset after
 * each part).  Products: in pass 1 the part's local index (reset after
 * each part), in pass 2 the catalogue index (good for every part).  Its
 * memory is the loader's. */
struct scratch {
	char *buf, *line;
	size_t cap, line_cap;
	char date[10];
	uint32_t day;
	uint32_t *store_at, *prod_at;  /* DIRECT_IDS each */
};

struct loader {
	const char *path;
	int fd;
	char *mem;            /* a pipe's or device's whole input, else NULL */
	size_t size, part_size, nparts;
	struct part *part;
	struct scratch *tmp;  /* cowrun_setup_threads() of them */
	struct sales *s;
	/* After the merge: every product, first-appearance order, and
	 * rank[its index] = its catalogue index (pass 2's lookups).  The
	 * name pool moves to s->names when the load succeeds. */
	struct ptable cat;
	uint32_t *rank;
	uint32_t first_day;   /* of the whole file: calendar index 0 */
	int64_t prefix;       /* overflow search: revenue before the part */
	size_t bad_line;
};

/* A part's bytes, read a piece at a time into the thread's scratch (the
 * setup's peak holds a piece per thread, not a part), or all of the
 * loader's mem: buf[0] is file offset off, len bytes held, PAD bytes of
 * '\n' after them; the next line starts at buf[pos].  Lines start in
 * [start, end), the part's bytes, which are hashed as they are read.  The
 * view owns no memory. */
struct view {
	struct loader *L;
	struct scratch *tmp;
	const char *buf;
	size_t off, len, pos;
	size_t start, end;
	XXH3_state_t hash;
};

/* ---- errors (csv_err.c): a thread records, the caller prints ---------- */

/* Record e's error, E_LINE (line within the part) or E_NOLINE; -1. */
int __attribute__((format(printf, 4, 5)))
csv_fail(struct csv_err *e, enum err_kind kind, size_t line,
	 const char *fmt, ...);
/* Record e's error, E_READ (errnum), E_CHANGED or E_NOMEM; -1. */
int csv_fail_io(struct csv_err *e, enum err_kind kind, int errnum);
/* One line on stderr for e; base: lines in the file before e's part. */
void csv_print_err(const struct loader *L, const struct csv_err *e,
		   size_t base);

/* ---- the input (csv_input.c) ------------------------------------------ */

/* Open L->path into L->fd and set L->size; a pipe or device (or an empty
 * regular file, maybe in /proc) is read whole into L->mem, PAD bytes of
 * '\n' after it.  0, or -1 after a message.  loader_free closes and frees. */
int csv_open_input(struct loader *L);
/* The part size: PART_SIZE, or COWRUN_SALES_CSV_PART's bytes (tests). */
size_t csv_part_size(void);
/* Open v on part i, read by thread's scratch, at the part's first line
 * (the one after the first '\n' at or after its first byte's predecessor;
 * none: pos at the part's end).  0, or -1 after recording a read error in
 * e.  Nothing to close. */
int csv_view_open(struct view *v, struct loader *L, size_t i,
		  unsigned thread, struct csv_err *e);
/* Drop the bytes before buf[pos] and read the next piece after the held
 * ones (there must be one: off + len < size).  0, or -1 as above. */
int csv_view_more(struct view *v, struct csv_err *e);
/* The hash of the part's bytes, reading what the lines left unread.  0,
 * or -1 as above. */
int csv_view_hash(struct view *v, uint64_t *hash, struct csv_err *e);

/* ---- the exact row parser (csv_row.c), for what the fast one declines -- */

/* Parse line number lineno of a part (n bytes, no '\n'), with the
 * sequential reader's every message.  Returns 1 (a row; its name points
 * into t->line), 0 (blank) or -1 after recording the error in e. */
int csv_row_exact(struct scratch *t, const char *line, size_t n,
		  struct row *r, struct csv_err *e, size_t lineno);
/* The file's first line is the header (a UTF-8 BOM allowed): 0 or -1. */
int csv_header_check(struct scratch *t, const char *line, size_t n,
		     struct csv_err *e);

/* ---- the two passes (csv_scan.c), on the setup threads ---------------- */

/* Pass 1: every part's tables.  cowrun_parallel()'s result: nonzero if
 * any part failed (its error in part[i].err, or out of memory). */
int csv_pass1(struct loader *L);
/* After pass 1: print the first error in file order (a part's, or the
 * line where the revenue grows too large) and return -1; else 0. */
int csv_first_error(struct loader *L);
/* Pass 2: every row to L->s->txn[part's place[]]; checks that each part
 * is what pass 1 read.  Nonzero as csv_pass1(). */
int csv_pass2(struct loader *L);

/* ---- between the passes (csv_merge.c) --------------------------------- */

/* Sets s->store_id (ascending), nstores, store_off (malloc'd; s owns
 * them) and every part's place[] (the loader's).  0, or -1 (ENOMEM). */
int csv_merge_stores(struct loader *L, struct sales *s);
/* Sets s->product (sorted as index.c sorts), nproducts (s owns them),
 * L->cat and L->rank, and frees every part's product table.  0, or -1
 * (ENOMEM). */
int csv_merge_products(struct loader *L, struct sales *s);

#endif
