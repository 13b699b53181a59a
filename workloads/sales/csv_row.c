/*
 * csv_row.c - the CSV reader's exact row parser: slow, and the judge of
 * every line the fast parser (csv_scan.c) declines, so it says what is
 * wrong with a bad one, with the sequential reader's every message; and
 * the header check.
 */
#include "csv_loader.h"

#include <stdlib.h>
#include <string.h>

/* Split line at commas into field[]; returns the number of fields. */
static int csv_split(char *line, char **field, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		char *comma = strchr(p, ',');
		if (n < max)
			field[n] = p;
		n++;
		if (comma == NULL)
			return n;
		*comma = '\0';
		p = comma;
	}
}

static int bad(struct csv_err *e, size_t line, const char *what,
	       const char *value, const char *why)
{
	return csv_fail(e, E_LINE, line, "bad %s '%.40s' (%s)", what, value, why);
}

/* A product field: a positive integer id, or a name that does not start
 * with a digit, has no quotes or control characters and no edge spaces. */
static int product_key(const char *s, struct row *r, struct csv_err *e, size_t line)
{
	long long id;
	size_t len = strlen(s);

	r->pid = 0;
	r->name = s;
	r->len = len;
	if (*s >= '0' && *s <= '9') {
		if (parse_int(s, 1, MAX_ID, &id) != 0)
			return bad(e, line, "product", s, "expected a positive integer id or a name");
		r->pid = (uint32_t)id;
		return 0;
	}
	if (len == 0 || len > MAX_NAME || s[0] == ' ' || s[len - 1] == ' ')
		return bad(e, line, "product", s, "expected an id or a name of 1 to 64 characters");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == 0x7f)
			return bad(e, line, "product", s, "quotes and control characters are not allowed");
	return 0;
}

/* Parse one data row's fields (column order, so the first bad field is
 * the one named). */
static int row_fields(char **field, struct row *r, struct csv_err *e, size_t line)
{
	long long v;

	if (parse_date(field[0], &r->day) != 0)
		return bad(e, line, "date", field[0], "expected a real date YYYY-MM-DD");
	if (parse_int(field[1], 1, MAX_ID, &v) != 0)
		return bad(e, line, "store", field[1], "expected a positive integer id");
	r->store = (uint32_t)v;
	if (product_key(field[2], r, e, line) != 0)
		return -1;
	if (parse_int(field[3], 1, MAX_QUANTITY, &v) != 0)
		return bad(e, line, "quantity", field[3], "expected an integer from 1 to 1000000");
	r->qty = (uint32_t)v;
	if (parse_price(field[4], &r->price) != 0)
		return bad(e, line, "unit price", field[4],
			   "expected a price like 3.49: at most 2 decimals, up to 1000000.00");
	return 0;
}

/* A NUL-terminated copy of the line (with its '\r'), NULL after recording
 * a NUL byte in it (as the sequential reader refused) or no memory. */
static char *line_copy(struct scratch *t, const char *line, size_t n,
		       struct csv_err *e, size_t lineno)
{
	if (memchr(line, '\0', n) != NULL) {
		csv_fail(e, E_LINE, lineno, "NUL byte in line");
		return NULL;
	}
	if (n + 1 > t->line_cap) {
		char *p = realloc(t->line, n + 1);
		if (p == NULL) {
			csv_fail_io(e, E_NOMEM, 0);
			return NULL;
		}
		t->line = p;
		t->line_cap = n + 1;
	}
	memcpy(t->line, line, n);
	t->line[n] = '\0';
	if (n > 0 && t->line[n - 1] == '\r')
		t->line[n - 1] = '\0';
	return t->line;
}

/* The slow, exact row parser: every message of the sequential reader.
 * Returns 1 (a row; its name points into scratch), 0 (blank) or -1. */
int csv_row_exact(struct scratch *t, const char *line, size_t n,
		  struct row *r, struct csv_err *e, size_t lineno)
{
	char *copy = line_copy(t, line, n, e, lineno), *field[CSV_FIELDS];
	int nf;

	if (copy == NULL)
		return -1;
	if (*copy == '\0')
		return 0; /* blank lines carry nothing: skip them */
	nf = csv_split(copy, field, CSV_FIELDS);
	if (nf != CSV_FIELDS)
		return csv_fail(e, E_LINE, lineno, "expected %d fields (%s), found %d",
			    CSV_FIELDS, CSV_HEADER, nf);
	return row_fields(field, r, e, lineno) == 0 ? 1 : -1;
}

int csv_header_check(struct scratch *t, const char *line, size_t n,
		     struct csv_err *e)
{
	const char *h = line_copy(t, line, n, e, 1);

	if (h == NULL)
		return -1;
	if (strncmp(h, "\xEF\xBB\xBF", 3) == 0)
		h += 3; /* a UTF-8 byte order mark, as spreadsheets write */
	if (strcmp(h, CSV_HEADER) != 0)
		return csv_fail(e, E_LINE, 1, "bad header '%.60s' (expected '%s')", h, CSV_HEADER);
	return 0;
}
