/*
 * csvparts.c - cowrun.csv_parts(path): a CSV cut into parts fixed by the
 * file alone (never by -j), for cowrun.parallel() to load on every core.
 *
 * The file is read once, in blocks of COWRUN_INPUT_BLOCK bytes on the
 * setup threads (cowrun_parallel(): C only, no Python), and each block
 * gives its hash, its count of '"' and, for either quote state at its
 * start, its first line end outside quotes and whether its quotes follow
 * RFC 4180 (a quote opens a field, or doubles one, or closes it before a
 * comma or a line end).  The quote state at a block's start is the parity
 * of the quotes before it, so a quoted field holding a line end is cut
 * exactly; a file whose quotes break the rule is refused (the parity would
 * not be pandas' reading).  Part i holds the lines that start in blocks
 * [i * blocks, (i + 1) * blocks): the C sales loader's cut.  The file's
 * identity is the runner's hash of those blocks, handed over with
 * cowrun_input_hash(): the runner reads the file no second time.
 *
 * Every part reads through the one descriptor opened here (pread), so a
 * rename or a chdir() after the call cannot mix two files; the forks of
 * cowrun.parallel() inherit it.
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The parts as Python objects: open() gives a binary file, the header
 * line first, then the part's bytes, for pd.read_csv() unchanged. */
static const char parts_source[] =
	"import io, os\n"
	"class _Source:\n"
	"    def __init__(self, fd, path, header):\n"
	"        self.fd, self.path, self.header = fd, path, header\n"
	"    def __del__(self):\n"
	"        try:\n"
	"            os.close(self.fd)\n"
	"        except OSError:\n"
	"            pass\n"
	"    def pread(self, start, end):\n"
	"        # One read, no copy, as a regular file gives it; else the rest\n"
	"        # read on (each copy of a 16 MiB part cost its child 5 ms).\n"
	"        b = os.pread(self.fd, end - start, start)\n"
	"        if len(b) == end - start:\n"
	"            return b\n"
	"        out = bytearray(b)\n"
	"        while start + len(out) < end:\n"
	"            b = os.pread(self.fd, end - start - len(out), start + len(out))\n"
	"            if not b:\n"
	"                raise OSError('%s: shorter than when cowrun.csv_parts() cut it: it changed'\n"
	"                              % self.path)\n"
	"            out += b\n"
	"        return bytes(out)\n"
	"class CsvPart:\n"
	"    \"\"\"One part of a CSV (cowrun.csv_parts()): its lines, whole.\"\"\"\n"
	"    __slots__ = ('index', 'start', 'end', 'line', '_source')\n"
	"    def __init__(self, source, index, start, end, line):\n"
	"        self._source, self.index, self.start, self.end, self.line = source, index, start, end, line\n"
	"    @property\n"
	"    def path(self):\n"
	"        return self._source.path\n"
	"    def open(self):\n"
	"        \"\"\"A binary file: the header line, then this part's lines.\"\"\"\n"
	"        s = self._source\n"
	"        return io.BytesIO(s.header + s.pread(self.start, self.end))\n"
	"    def where(self):\n"
	"        return 'part %d of %s, from line %d' % (self.index, self._source.path, self.line)\n"
	"    def __repr__(self):\n"
	"        return '<cowrun.CsvPart %d of %r: bytes %d-%d, from line %d>' % (\n"
	"            self.index, self._source.path, self.start, self.end, self.line)\n"
	"def make(fd, path, header, cuts):\n"
	"    source = _Source(fd, path, header)\n"
	"    return [CsvPart(source, i, a, b, line) for i, (a, b, line) in enumerate(cuts)]\n"
	"def ascii_compatible(encoding):\n"
	"    import codecs\n"
	"    text = ',\"\\n\\r0123456789azAZ.-'\n"
	"    try:\n"
	"        codecs.lookup(encoding)\n"
	"        return text.encode(encoding) == text.encode('ascii')\n"
	"    except (LookupError, UnicodeError):\n"
	"        return False\n";

static PyObject *parts_ns;

/* What one block's scan found; [s]: with quote state s at its start. */
struct block {
	uint64_t hash;
	uint64_t quotes;          /* '"' in the block */
	uint64_t newlines;        /* '\n' in the block (for line numbers) */
	int64_t nl[2];            /* offset of the first '\n' outside quotes, or -1 */
	uint64_t nl_lines[2];     /* the '\n' in the block up to it, it included */
	int64_t bad[2];           /* offset of the first quote against RFC 4180, or -1 */
	int error;                /* errno of a failed read */
};

struct scan {
	int fd;
	uint64_t size;
	size_t block_size;
	struct block *b;
	char **buf;               /* a buffer per setup thread */
};

/* The block size: COWRUN_INPUT_BLOCK, or COWRUN_PYTHON_CSV_BLOCK bytes for
 * the tests (small files in many parts; the hash is then not handed over). */
static size_t block_size(void)
{
	const char *env = getenv("COWRUN_PYTHON_CSV_BLOCK");
	char *end;
	unsigned long long v = env && *env ? strtoull(env, &end, 10) : 0;

	return v >= 16 && v <= COWRUN_INPUT_BLOCK && *end == '\0' ? (size_t)v : COWRUN_INPUT_BLOCK;
}

static int read_at(int fd, char *buf, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r == 0 ? EAGAIN : errno;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Whether the quote at buf[i] may open a field (state outside before it)
 * or close one (inside): RFC 4180, a doubled quote being a close and an
 * open.  `prev`, `next`: the bytes around it (-1 at the file's ends). */
static int may_open(int prev)
{
	return prev < 0 || prev == ',' || prev == '\n' || prev == '\r' || prev == '"';
}

static int may_close(int next)
{
	return next < 0 || next == ',' || next == '\n' || next == '\r' || next == '"';
}

/* The quotes of one block, for both start states: their count, the first
 * line end outside quotes, the first quote against the rule. */
static void scan_quotes(struct block *bl, const char *buf, size_t n, int before, int after)
{
	size_t q = 0, seen = 0;
	const char *p = buf, *end = buf + n, *last = memrchr(buf, '"', n);

	for (int s = 0; s < 2; s++)
		bl->nl[s] = bl->bad[s] = -1;
	/* Line ends: the first outside quotes, for either start state.  Past
	 * the block's last quote the parity holds, so no line end after it
	 * is the other state's first: a block without quotes takes one. */
	for (const char *nl = memchr(buf, '\n', n); nl && (bl->nl[0] < 0 || bl->nl[1] < 0);
	     nl = memchr(nl + 1, '\n', (size_t)(end - nl - 1))) {
		size_t quotes = 0;
		for (const char *c = memchr(p, '"', (size_t)(nl - p)); c; c = memchr(c + 1, '"', (size_t)(nl - c - 1)))
			quotes++;
		q += quotes;
		p = nl;
		seen++;
		int s = (int)(q & 1); /* outside with start state s iff s == q's parity */
		if (bl->nl[s] < 0) {
			bl->nl[s] = nl - buf;
			bl->nl_lines[s] = seen;
		}
		if (last == NULL || last < nl)
			break;
	}
	/* Every quote: the count, and the rule for either start state. */
	q = 0;
	for (const char *c = memchr(buf, '"', n); c; c = memchr(c + 1, '"', (size_t)(end - c - 1))) {
		int prev = c > buf ? (unsigned char)c[-1] : before;
		int next = c + 1 < end ? (unsigned char)c[1] : after;
		for (int s = 0; s < 2; s++) {
			int opens = ((q + (size_t)s) & 1) == 0;
			if (bl->bad[s] < 0 && !(opens ? may_open(prev) : may_close(next)))
				bl->bad[s] = c - buf;
		}
		q++;
	}
	bl->quotes = q;
}

/* The '\n' in buf, 8 bytes at a time (a byte at a time took a third of
 * the scan): a byte of v = the bytes ^ '\n' is zero where buf has '\n'.
 * Its low 7 bits plus 0x7f carry into its high bit unless they are zero
 * (and never into the next byte); OR-ed with v, the high bit stays clear
 * for a zero byte only.  The clear high bits, summed by the multiply
 * into the top byte, are the count. */
static uint64_t count_newlines(const char *buf, size_t n)
{
	const uint64_t low7 = 0x7f7f7f7f7f7f7f7full, ones = 0x0101010101010101ull;
	uint64_t lines = 0;
	size_t k = 0;

	for (; k + 8 <= n; k += 8) {
		uint64_t v;
		memcpy(&v, buf + k, 8);
		v ^= ones * '\n';
		uint64_t zero = ~(((v & low7) + low7) | v) & ~low7;   /* 0x80 per zero byte */
		lines += ((zero >> 7) * ones) >> 56;
	}
	for (; k < n; k++)
		lines += buf[k] == '\n';
	return lines;
}

static int scan_block(void *ctx, size_t i, unsigned thread)
{
	struct scan *sc = ctx;
	struct block *bl = &sc->b[i];
	uint64_t off = (uint64_t)i * sc->block_size;
	size_t n = (size_t)(sc->size - off < sc->block_size ? sc->size - off : sc->block_size);
	char *buf = sc->buf[thread];
	unsigned char edge[2] = { 0, 0 };

	if (read_at(sc->fd, buf, n, off) != 0 ||
	    (off > 0 && read_at(sc->fd, (char *)&edge[0], 1, off - 1) != 0) ||
	    (off + n < sc->size && read_at(sc->fd, (char *)&edge[1], 1, off + n) != 0)) {
		bl->error = errno;
		return -1;
	}
	bl->hash = cowrun_hash64(buf, n, 0);
	bl->newlines = count_newlines(buf, n);
	scan_quotes(bl, buf, n, off > 0 ? edge[0] : -1, off + n < sc->size ? edge[1] : -1);
	return 0;
}

/* The block scans on the setup threads.  0, or -1 after a Python error. */
static int scan_file(struct scan *sc, size_t nblocks, const char *path)
{
	unsigned threads = cowrun_setup_threads();
	int rc = -1;

	sc->b = calloc(nblocks ? nblocks : 1, sizeof *sc->b);
	sc->buf = calloc(threads, sizeof *sc->buf);
	for (unsigned t = 0; sc->buf && t < threads; t++)
		sc->buf[t] = malloc(sc->block_size);
	for (unsigned t = 0; sc->buf && t < threads; t++)
		if (sc->buf[t] == NULL)
			goto out;
	if (sc->b == NULL || sc->buf == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	if (cowrun_parallel(nblocks, scan_block, sc) == 0) {
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < nblocks; i++)
		if (sc->b[i].error) {
			errno = sc->b[i].error;
			break;
		}
	PyErr_Format(PyExc_OSError, "cowrun.csv_parts('%s'): %s", path,
		     errno == EAGAIN ? "it got shorter while it was read" : strerror(errno));
out:
	for (unsigned t = 0; sc->buf && t < threads; t++)
		free(sc->buf[t]);
	free(sc->buf);
	if (rc != 0 && !PyErr_Occurred())
		PyErr_NoMemory();
	return rc;
}

/* The first line start after a line end outside quotes, at or after
 * block `from` (quote state `state`, `lines` line ends before its start),
 * or the file's size; *line: the number of the line starting there. */
static uint64_t line_start_from(const struct scan *sc, size_t nblocks, size_t from, int state,
				uint64_t lines, uint64_t *line)
{
	for (size_t i = from; i < nblocks; i++) {
		if (sc->b[i].nl[state] >= 0) {
			*line = lines + sc->b[i].nl_lines[state] + 1;
			return (uint64_t)i * sc->block_size + (uint64_t)sc->b[i].nl[state] + 1;
		}
		state ^= (int)(sc->b[i].quotes & 1);
		lines += sc->b[i].newlines;
	}
	*line = lines + 1;
	return sc->size;
}

/* Why the file cannot be cut, from its first bytes, or NULL. */
static const char *refused_by_magic(const unsigned char *m, size_t n)
{
	if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
		return "is compressed (gzip)";
	if (n >= 3 && memcmp(m, "BZh", 3) == 0)
		return "is compressed (bzip2)";
	if (n >= 6 && memcmp(m, "\xfd" "7zXZ\0", 6) == 0)
		return "is compressed (xz)";
	if (n >= 4 && memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0)
		return "is compressed (zstd)";
	if (n >= 4 && memcmp(m, "PK\x03\x04", 4) == 0)
		return "is compressed (zip)";
	if (n >= 2 && ((m[0] == 0xff && m[1] == 0xfe) || (m[0] == 0xfe && m[1] == 0xff)))
		return "is UTF-16 or UTF-32 (a byte-order mark): not ASCII-compatible";
	if (memchr(m, 0, n) != NULL)
		return "holds NUL bytes (UTF-16? binary?): not ASCII-compatible";
	return NULL;
}

/* (start, end, line) of each part, lines from the header's end on (the
 * header ends at `body`); a file with no data line has one empty part. */
static PyObject *cuts(const struct scan *sc, size_t nblocks, size_t per, uint64_t body,
		      uint64_t body_line)
{
	PyObject *list = PyList_New(0);
	uint64_t start = body, lines = 0, start_line = body_line, end_line = 0;
	int state = 0;

	for (size_t i = 0; list && i < nblocks; i += per) {
		/* The quote state and line count at the start of block i + per. */
		for (size_t k = i; k < i + per && k < nblocks; k++) {
			state ^= (int)(sc->b[k].quotes & 1);
			lines += sc->b[k].newlines;
		}
		uint64_t end = i + per >= nblocks ? sc->size
			: line_start_from(sc, nblocks, i + per, state, lines, &end_line);
		if (end <= start)
			continue;   /* no line starts here: a long line spans it */
		PyObject *t = Py_BuildValue("(KKK)", (unsigned long long)start,
					    (unsigned long long)end, (unsigned long long)start_line);
		if (t == NULL || PyList_Append(list, t) != 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
		start = end;
		start_line = end_line;
	}
	if (list && PyList_GET_SIZE(list) == 0) {
		PyObject *t = Py_BuildValue("(KKK)", (unsigned long long)sc->size,
					    (unsigned long long)sc->size, (unsigned long long)body_line);
		if (t == NULL || PyList_Append(list, t) != 0)
			Py_CLEAR(list);
		Py_XDECREF(t);
	}
	return list;
}

/* The first quote against RFC 4180, as a file offset, or -1. */
static int64_t first_bad_quote(const struct scan *sc, size_t nblocks)
{
	int state = 0;

	for (size_t i = 0; i < nblocks; i++) {
		if (sc->b[i].bad[state] >= 0)
			return (int64_t)(i * sc->block_size) + sc->b[i].bad[state];
		state ^= (int)(sc->b[i].quotes & 1);
	}
	return state ? (int64_t)sc->size : -1; /* a quote left open at the end */
}

/* Raise ValueError: "cowrun.csv_parts('PATH'): WHY: read it whole
 * (pd.read_csv(path))". */
static PyObject *refuse(const char *path, const char *why)
{
	return PyErr_Format(PyExc_ValueError, "cowrun.csv_parts('%s'): %s: its parts cannot be "
			    "cut exactly; read it whole (pd.read_csv(path))", path, why);
}

/* The keyword arguments read_csv would take that a cut cannot honour. */
static PyObject *check_options(const char *path, const PyObject *escapechar,
			       PyObject *compression, PyObject *header, const char *encoding)
{
	if (escapechar != Py_None)
		return refuse(path, "escapechar: an escaped quote or line end hides from the "
			      "quote-parity cut");
	const char *how = compression != Py_None && PyUnicode_Check(compression)
		? PyUnicode_AsUTF8(compression) : NULL;
	if (compression != Py_None && !(how != NULL && strcmp(how, "infer") == 0))
		return refuse(path, "compression: a compressed file has no byte offsets of lines");
	if (header == Py_None)
		return refuse(path, "header=None: every part repeats the file's header line, and "
			      "this file has none");
	/* header=0, the default (NULL: not given). */
	if (header != NULL && (!PyLong_Check(header) || PyLong_AsLong(header) != 0))
		return refuse(path, "header: only a header on the first line (header=0)");
	PyObject *f = PyDict_GetItemString(parts_ns, "ascii_compatible"); /* borrowed */
	PyObject *r = f ? PyObject_CallFunction(f, "s", encoding) : NULL;
	int yes = r != NULL && PyObject_IsTrue(r) == 1;
	Py_XDECREF(r);
	if (r == NULL)
		return NULL;
	if (!yes) {
		char why[160];
		snprintf(why, sizeof why, "encoding '%.60s' is not ASCII-compatible (a comma, a "
			 "quote or a line end is not one byte of its own)", encoding);
		return refuse(path, why);
	}
	Py_RETURN_NONE;
}

static int compile_parts(void)
{
	PyObject *d = PyDict_New(), *code;

	if (d == NULL)
		return -1;
	PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins());
	PyObject *name = PyUnicode_FromString("cowrun");
	if (name == NULL || PyDict_SetItemString(d, "__name__", name) != 0) {
		Py_XDECREF(name);
		Py_DECREF(d);
		return -1;
	}
	Py_DECREF(name);
	if ((code = PyRun_String(parts_source, Py_file_input, d, d)) == NULL) {
		Py_DECREF(d);
		return -1;
	}
	Py_DECREF(code);
	parts_ns = d;
	return 0;
}

/* The file open, regular, not empty, not compressed: its descriptor, or
 * -1 with the exception set. */
static int open_csv(const char *path, uint64_t *size)
{
	struct stat st;
	unsigned char magic[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path), -1;
	if (fstat(fd, &st) != 0) {
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		refuse(path, "not a regular file (a pipe, a device): it has no offsets to cut at");
		return -1;
	}
	*size = (uint64_t)st.st_size;
	ssize_t n = pread(fd, magic, sizeof magic, 0);
	const char *why = n <= 0 ? "an empty file: no header line" : refused_by_magic(magic, (size_t)n);
	if (why != NULL) {
		close(fd);
		refuse(path, why);
		return -1;
	}
	return fd;
}

/* The header line's bytes, with a line end (the file's last line may lack
 * one): a new reference, or NULL with the exception set. */
static PyObject *header_bytes(int fd, uint64_t body, const char *path)
{
	PyObject *h = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)body + 1);

	if (h == NULL)
		return NULL;
	char *p = PyBytes_AS_STRING(h);
	if (read_at(fd, p, (size_t)body, 0) != 0) {
		Py_DECREF(h);
		return PyErr_Format(PyExc_OSError, "cowrun.csv_parts('%s'): %s", path,
				    strerror(errno));
	}
	if (body > 0 && p[body - 1] == '\n')
		_PyBytes_Resize(&h, (Py_ssize_t)body);
	else
		p[body] = '\n';
	return h;
}

/* The parts of a scanned file, the hash handed over: a list, or NULL. */
static PyObject *make_parts(struct scan *sc, size_t nblocks, size_t per, const char *path)
{
	uint64_t body_line = 1, body = line_start_from(sc, nblocks, 0, 0, 0, &body_line);
	int64_t bad = first_bad_quote(sc, nblocks);

	if (bad >= 0) {
		char why[200];
		snprintf(why, sizeof why, "%s at byte %lld is not RFC 4180 (a field's quotes open "
			 "it, close it before a comma or a line end, or are doubled)",
			 bad == (int64_t)sc->size ? "a quote left open" : "the quote",
			 (long long)bad);
		return refuse(path, why);
	}
	if (sc->block_size == COWRUN_INPUT_BLOCK) {
		uint64_t *h = malloc((nblocks ? nblocks : 1) * sizeof *h);
		if (h == NULL)
			return PyErr_NoMemory();
		for (size_t i = 0; i < nblocks; i++)
			h[i] = sc->b[i].hash;
		cowrun_input_hash(sc->fd, cowrun_hash64(h, nblocks * sizeof *h, sc->size));
		free(h);
	}
	PyObject *c = cuts(sc, nblocks, per, body, body_line);
	PyObject *header = c ? header_bytes(sc->fd, body, path) : NULL;
	PyObject *make = PyDict_GetItemString(parts_ns, "make"); /* borrowed */
	/* The parts' source owns a descriptor of its own (it closes it when
	 * collected, even if make() fails half-way); the caller closes sc->fd. */
	int own = header && make ? fcntl(sc->fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (header && make && own < 0)
		PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
	PyObject *parts = own >= 0 ? PyObject_CallFunction(make, "isOO", own, path, header, c)
				   : NULL;
	Py_XDECREF(c);
	Py_XDECREF(header);
	return parts;
}

PyObject *py_csv_parts(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = { "path", "blocks", "encoding", "escapechar", "compression",
			      "header", NULL };
	PyObject *path_obj, *escapechar = Py_None, *compression = Py_None, *header = NULL;
	PyObject *fs = NULL, *r = NULL;
	Py_ssize_t per = 1;
	const char *encoding = "utf-8";

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$nsOOO:csv_parts", kw, &path_obj, &per,
					 &encoding, &escapechar, &compression, &header))
		return NULL;
	if (py_parallel_refused("csv_parts") != 0)
		return NULL;
	if (per < 1)
		return PyErr_Format(PyExc_ValueError, "cowrun.csv_parts(): blocks=%zd: 1 or more", per);
	if (!PyUnicode_FSConverter(path_obj, &fs))
		return NULL;
	const char *path = PyBytes_AS_STRING(fs);
	if (parts_ns == NULL && compile_parts() != 0)
		goto out;
	PyObject *ok = check_options(path, escapechar, compression, header, encoding);
	if (ok == NULL)
		goto out;
	Py_DECREF(ok);
	/* The file is an input of the run: declared before it is read. */
	if (py_declare_input(path) != 0)
		goto out;
	struct scan sc = { .fd = -1, .block_size = block_size() };
	if ((sc.fd = open_csv(path, &sc.size)) < 0)
		goto out;
	size_t nblocks = (size_t)((sc.size + sc.block_size - 1) / sc.block_size);
	if (scan_file(&sc, nblocks, path) == 0)
		r = make_parts(&sc, nblocks, (size_t)per, path);
	free(sc.b);
	if (sc.fd >= 0)
		close(sc.fd);
out:
	Py_DECREF(fs);
	return r;
}

int py_csv_part_where(PyObject *item, char *buf, size_t size)
{
	PyObject *cls = parts_ns ? PyDict_GetItemString(parts_ns, "CsvPart") : NULL; /* borrowed */

	if (cls == NULL || PyObject_IsInstance(item, cls) != 1) {
		PyErr_Clear();
		return 0;
	}
	PyObject *w = PyObject_CallMethod(item, "where", NULL);
	const char *text = w ? PyUnicode_AsUTF8(w) : NULL;
	snprintf(buf, size, "%s", text ? text : "a CSV part");
	Py_XDECREF(w);
	PyErr_Clear();
	return 1;
}
