/*
 * csv_load.c - loading a CSV of sales (--input) straight into the shared
 * state, on the setup threads: csv_load(), the one function the rest of
 * the workload calls, and the order of the load.
 *
 * The file is cut into fixed parts of PART_SIZE bytes (csv_input.c), and
 * a line belongs to the part where it starts, so the cut depends on the
 * file alone, never on the thread count.  Pass 1 parses every part (cowrun_parallel) into
 * small per-part tables: its stores and products in first-appearance
 * order, its rows per store, its day range and revenue.  Merging those in
 * file order gives the store list, catalogue and name pool the sequential
 * reader gave, and the final index of every row.  Pass 2 parses each part
 * again and writes its rows to those indexes in the arena, so the rows are
 * never held twice.  Before it, the parts' product tables are merged and
 * freed, and each thread reads a piece of a part at a time, so the setup
 * peaks at the arena and little more (1.10x for 5M rows at -j 2; the whole
 * parts and their tables once made it 1.28x).
 *
 * Regular files are read with pread (not mmap: a file truncated under us
 * would be a SIGBUS with no message); a file that changes between the
 * passes is one clear error.  Pipes and devices are read whole into memory
 * first and cut into parts the same way.  Threads never print: each part
 * keeps its first error, and the lowest failing part's is printed after
 * the call, with its line number in the whole file.
 *
 * The reader's files (each includes csv_loader.h, the private header;
 * they call down to index.c and util.c, never up to sales.c):
 *   csv_input.c   opening the input, reading a part's bytes
 *   csv_scan.c    the hot path: a part's lines, the fast row parser, what
 *                 passes 1 and 2 do with each row
 *   csv_row.c     the exact row parser (every message) and the header
 *   csv_merge.c   the parts' tables merged in file order
 *   csv_hash.c    the hash maps and the product table
 *   csv_err.c     recording and printing errors
 */
#include "csv_loader.h"

#include <stdlib.h>
#include <unistd.h>

/* The whole file's row count and day range; 0, or -1 after a message. */
static int totals(struct loader *L, size_t *rows, uint32_t *last)
{
	*rows = 0;
	for (size_t i = 0; i < L->nparts; i++) {
		const struct part *pt = &L->part[i];
		if (pt->rows == 0)
			continue;
		if (*rows == 0 || pt->first_day < L->first_day)
			L->first_day = pt->first_day;
		if (*rows == 0 || pt->last_day > *last)
			*last = pt->last_day;
		*rows += pt->rows;
	}
	if (*rows == 0) {
		cowrun_error("%s: no data rows", L->path);
		return -1;
	}
	if (*last - L->first_day >= MAX_SPAN_DAYS) {
		cowrun_error("%s: dates span more than 100 years", L->path);
		return -1;
	}
	return 0;
}

/* Hash of the part hashes in order: the file's bytes, at any -j. */
static int input_hash(struct loader *L, uint64_t *out)
{
	uint64_t *h = malloc(L->nparts * sizeof *h);

	if (h == NULL)
		return -1;
	for (size_t i = 0; i < L->nparts; i++)
		h[i] = L->part[i].hash;
	*out = cowrun_hash64(h, L->nparts * sizeof *h, L->size);
	free(h);
	return 0;
}

/* Pass 2 and its first error (a changed file, a read error). */
static int place_rows(struct loader *L, struct sales *s, size_t rows)
{
	s->txn_bytes = rows * sizeof *s->txn;
	/* The bulk of the shared state: in the runner's setup arena (huge
	 * pages, so fork() stays cheap; read-only after setup). */
	s->txn = cowrun_alloc_aligned(s->txn_bytes, 64);
	if (s->txn == NULL) {
		cowrun_error("out of memory for %zu transactions", rows);
		return -1;
	}
	s->ntxn = rows;
	if (csv_pass2(L) == 0)
		return 0;
	for (size_t i = 0; i < L->nparts; i++)
		if (L->part[i].err.kind != E_NONE) {
			csv_print_err(L, &L->part[i].err, 0);
			return -1;
		}
	cowrun_error("out of memory reading '%s'", L->path);
	return -1;
}

/* Pass 1, its first error, the merge, pass 2. */
static int load(struct loader *L, struct sales *s)
{
	size_t rows;
	uint32_t last = 0;
	int r1;

	L->nparts = (L->size + L->part_size - 1) / L->part_size;
	L->part = calloc(L->nparts, sizeof *L->part);
	L->tmp = calloc(cowrun_setup_threads(), sizeof *L->tmp);
	if (L->part == NULL || L->tmp == NULL) {
		cowrun_error("out of memory reading '%s'", L->path);
		return -1;
	}
	r1 = csv_pass1(L);
	if (csv_first_error(L) != 0)
		return -1;
	if (r1 != 0) {
		cowrun_error("out of memory reading '%s'", L->path);
		return -1;
	}
	if (totals(L, &rows, &last) != 0)
		return -1;
	if (csv_merge_stores(L, s) != 0 || csv_merge_products(L, s) != 0 ||
	    index_calendar(s, L->first_day, last) != 0 ||
	    input_hash(L, &s->input_hash) != 0) {
		cowrun_error("out of memory indexing %zu transactions", rows);
		return -1;
	}
	s->has_categories = 0;
	if (place_rows(L, s, rows) != 0)
		return -1;
	s->names = L->cat.names; /* s's from now on */
	L->cat.names = NULL;
	return 0;
}

static void loader_free(struct loader *L)
{
	for (size_t i = 0; L->part && i < L->nparts; i++) {
		struct part *pt = &L->part[i];
		free(pt->stores.slot);
		free(pt->sid);
		free(pt->count);
		free(pt->place);
		ptable_free(&pt->prod);
	}
	ptable_free(&L->cat);
	free(L->rank);
	for (unsigned t = 0; L->tmp && t < cowrun_setup_threads(); t++) {
		free(L->tmp[t].buf);
		free(L->tmp[t].line);
		free(L->tmp[t].store_at);
	}
	free(L->part);
	free(L->tmp);
	free(L->mem);
	if (L->fd >= 0)
		close(L->fd);
}

/* What a failed load leaves: nothing of its own (the arena keeps the rows'
 * space, as it keeps every allocation until exit). */
static void unload(struct sales *s)
{
	index_free_tables(s);
	s->txn = NULL;
	s->nstores = s->nproducts = s->ntxn = s->txn_bytes = s->ndays = s->nmonths = 0;
}

/* Load the CSV at path into s (see sales.h).  Returns 0, or -1 after one
 * message, with nothing of s allocated. */
int csv_load(const char *path, struct sales *s)
{
	struct loader L = { .path = path, .fd = -1, .s = s };
	int rc = -1;

	if (csv_open_input(&L) != 0)
		goto out;
	if (L.size == 0) {
		cowrun_error("%s: empty file (expected the header '%s')", path, CSV_HEADER);
		goto out;
	}
	L.part_size = csv_part_size();
	rc = load(&L, s);
	/* Its parts are the runner's hash blocks: the runner need not read
	 * the file again to know its identity. */
	if (rc == 0 && L.part_size == COWRUN_INPUT_BLOCK)
		cowrun_input_hash(L.fd, s->input_hash);
out:
	if (rc != 0)
		unload(s);
	loader_free(&L);
	return rc;
}

