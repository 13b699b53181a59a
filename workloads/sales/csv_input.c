/*
 * csv_input.c - the CSV reader's input: opening it, the size of its parts,
 * and a part's bytes.  Regular files are read with pread (not mmap: a file
 * truncated under us would be a SIGBUS with no message), in parts, on the
 * setup threads; pipes and devices are read whole into memory first and
 * cut into parts the same way.
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

/* Make the view hold n bytes (n <= size - off). */
int csv_view_fill(struct view *v, size_t n, struct csv_err *e)
{
	struct scratch *t = v->tmp;

	if (v->L->mem) {
		v->buf = v->L->mem + v->off;
		v->len = v->L->size - v->off;
		return 0;
	}
	if (n + PAD > t->cap) {
		char *p = realloc(t->buf, n + PAD);
		if (p == NULL)
			return csv_fail_io(e, E_NOMEM, 0);
		t->buf = p;
		t->cap = n + PAD;
	}
	if (read_at(v->L, t->buf + v->len, n - v->len, v->off + v->len, e) != 0)
		return -1;
	memset(t->buf + n, '\n', PAD); /* the sentinel the fast path relies on */
	v->buf = t->buf;
	v->len = n;
	return 0;
}
