/*
 * csv_err.c - the CSV reader's errors: a part records its first one (the
 * threads never print), and the load prints the one that comes first in
 * the file, with its line number in the whole file.
 */
#include "csv_loader.h"

#include <stdarg.h>
#include <string.h>

/* Record the part's first error, E_LINE or E_NOLINE; returns -1. */
int csv_fail(struct csv_err *e, enum err_kind kind, size_t line,
	     const char *fmt, ...)
{
	va_list ap;

	e->kind = kind;
	e->line = line;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int csv_fail_io(struct csv_err *e, enum err_kind kind, int errnum)
{
	e->kind = kind;
	e->errnum = errnum;
	return -1;
}

void csv_print_err(const struct loader *L, const struct csv_err *e, size_t base)
{
	switch (e->kind) {
	case E_LINE:
		cowrun_error("%s:%zu: %s", L->path, base + e->line, e->msg);
		break;
	case E_NOLINE:
		cowrun_error("%s: %s", L->path, e->msg);
		break;
	case E_READ:
		cowrun_error("cannot read '%s': %s", L->path, strerror(e->errnum));
		break;
	case E_CHANGED:
		cowrun_error("cannot read '%s': the file changed while it was read", L->path);
		break;
	case E_NOMEM:
	case E_NONE:
		cowrun_error("out of memory reading '%s'", L->path);
		break;
	}
}
