/*
 * csv_input.c - the CSV reader's input: opening it, the size of its parts,
 * and a part's bytes.  Regular files are read with pread (not mmap: a file
 * truncated under us would be a SIGBUS with no message), in parts, on the
 * setup threads, a piece (PIECE bytes) at a time into the thread's buffer,
 * so the setup holds a piece per thread, not a part, while the arena fills;
 * pipes and devices are read whole into memory first and cut into parts
 * the same way.
 */
#include "csv_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PART_SIZE   ((size_t)4 << 20)

/* ---- the whole input -------------------------------------------------- */

/* A pipe's or device's input, read to its end: it cannot be read twice. */
static int read_all(struct loader *L)
{
	size_t cap = 0, n = 0;

	for (;;) {
		if (n + PAD >= cap) { /* room for the fast path's sentinel */
			char *p = realloc(L->mem, cap = cap ? cap * 2 : (size_t)64 << 10);
			if (p == NULL) {
				cowrun_error("out of memory reading '%s'", L->path);
				return -1;
			}
			L->mem = p;
		}
		ssize_t r = read(L->fd, L->mem + n, cap - n - PAD);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			cowrun_error("cannot read '%s': %s", L->path, strerror(errno));
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	L->size = n;
	memset(L->mem + n, '\n', PAD);
	return 0;
}

/* Open the input; a regular file is read later, in parts, by pread.  (A
 * regular file of size 0 may be a /proc file: read it like a pipe.) */
int csv_open_input(struct loader *L)
{
	struct stat st;

	L->fd = open(L->path, O_RDONLY | O_CLOEXEC);
	if (L->fd < 0 || fstat(L->fd, &st) != 0) {
		cowrun_error("cannot read '%s': %s", L->path, strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		L->size = (size_t)st.st_size;
		return 0;
	}
	return read_all(L);
}

/* The part size: fixed, so the cut depends on the file alone.  Tests
 * shrink it (COWRUN_SALES_CSV_PART=bytes) to give a small file many
 * parts; it changes the input hash too. */
size_t csv_part_size(void)
{
	const char *env = getenv("COWRUN_SALES_CSV_PART");
	char *end;
	unsigned long long v;

	if (env == NULL || *env == '\0')
		return PART_SIZE;
	v = strtoull(env, &end, 10);
	return *end == '\0' && v >= 1 && v <= ((size_t)1 << 30) ? (size_t)v : PART_SIZE;
}

/* ---- a part's bytes --------------------------------------------------- */

/* Read exactly n bytes at offset off (a regular file that ends sooner has
 * changed since its size was taken). */
static int read_at(struct loader *L, char *buf, size_t n, size_t off,
		   struct csv_err *e)
{
	while (n > 0) {
		ssize_t r = pread(L->fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return csv_fail_io(e, E_READ, errno);
		if (r == 0)
			return csv_fail_io(e, E_CHANGED, 0);
		buf += r;
		off += (size_t)r;
		n -= (size_t)r;
	}
	return 0;
}

/* Room in the thread's buffer for n bytes and the sentinel: a piece and
 * a line's rest at first, doubled for a longer line. */
static int reserve(struct scratch *t, size_t n, struct csv_err *e)
{
	size_t cap = t->cap * 2 > n + PAD ? t->cap * 2 : n + PAD;
	char *p;

	if (n + PAD <= t->cap)
		return 0;
	if (cap < PIECE + PART_EXTRA + PAD)
		cap = PIECE + PART_EXTRA + PAD;
	p = realloc(t->buf, cap);
	if (p == NULL)
		return csv_fail_io(e, E_NOMEM, 0);
	t->buf = p;
	t->cap = cap;
	return 0;
}

/* Up to a piece, the part and PART_EXTRA past it (for its last line), then
 * PART_EXTRA at a time (a line that runs on); never past the file's end. */
int csv_view_more(struct view *v, struct csv_err *e)
{
	struct scratch *t = v->tmp;
	size_t keep = v->len - v->pos, at = v->off + v->len;
	size_t n = (at > v->end ? at : v->end) + PART_EXTRA - at;
	size_t lo, hi;

	if (n > PIECE)
		n = PIECE;
	if (n > v->L->size - at)
		n = v->L->size - at;
	if (keep > 0 && v->pos > 0)
		memmove(t->buf, t->buf + v->pos, keep); /* the line in progress */
	v->off += v->pos;
	v->pos = 0;
	v->len = keep;
	if (reserve(t, keep + n, e) != 0 || read_at(v->L, t->buf + keep, n, at, e) != 0)
		return -1;
	lo = at > v->start ? at : v->start;
	hi = at + n < v->end ? at + n : v->end;
	if (lo < hi)
		XXH3_64bits_update(&v->hash, t->buf + keep + (lo - at), hi - lo);
	memset(t->buf + keep + n, '\n', PAD); /* the sentinel the fast path relies on */
	v->buf = t->buf;
	v->len = keep + n;
	return 0;
}

/* Part i > 0: its first line follows the first '\n' in file bytes
 * [start - 1, end - 1), read on as far as that takes; none: pos at the
 * part's end. */
static int first_line(struct view *v, struct csv_err *e)
{
	for (v->pos = v->start - 1 - v->off;;) {
		size_t stop = v->end - 1 - v->off;
		size_t upto = v->len < stop ? v->len : stop;
		const char *nl = memchr(v->buf + v->pos, '\n', upto - v->pos);

		if (nl != NULL) {
			v->pos = (size_t)(nl - v->buf) + 1;
			return 0;
		}
		if (upto == stop) { /* no line starts in the part */
			v->pos = stop + 1;
			return 0;
		}
		v->pos = upto;
		if (csv_view_more(v, e) != 0)
			return -1;
	}
}

int csv_view_open(struct view *v, struct loader *L, size_t i,
		  unsigned thread, struct csv_err *e)
{
	v->L = L;
	v->tmp = &L->tmp[thread];
	v->start = i * L->part_size;
	v->end = v->start + L->part_size < L->size ? v->start + L->part_size : L->size;
	v->off = v->len = v->pos = 0;
	XXH3_64bits_reset(&v->hash);
	if (L->mem) {
		v->buf = L->mem;
		v->len = L->size;
		XXH3_64bits_update(&v->hash, L->mem + v->start, v->end - v->start);
	} else {
		v->off = i ? v->start - 1 : 0; /* the byte before: is it a '\n'? */
		if (csv_view_more(v, e) != 0)
			return -1;
	}
	return i == 0 ? 0 : first_line(v, e);
}

int csv_view_hash(struct view *v, uint64_t *hash, struct csv_err *e)
{
	while (v->off + v->len < v->end) {
		v->pos = v->len;
		if (csv_view_more(v, e) != 0)
			return -1;
	}
	*hash = XXH3_64bits_digest(&v->hash);
	return 0;
}
