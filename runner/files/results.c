/*
 * results.c - writing and reading saved-results files.  See results.h.
 */
#define _GNU_SOURCE
#include "results.h"
#include "runid.h"
#include "os/util.h"
#include "os/fileops.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The format version (RESULTS_FORMAT): 2 added the frames' checksums and
 * the identity's cowrun and abi lines; 3 the merge context (its frame
 * after the identity, its hash in the identity); 4 the identity of each
 * input file (runid.h), and arguments that change no result left out; 5
 * the run seed and the hash of the task names.  A file of an older format
 * is recognised and refused. */
#define STRINGIFY(x) #x
#define MAGIC_LINE(format) "cowrun results " STRINGIFY(format) "\n"
#define RESULTS_MAGIC_LINE MAGIC_LINE(RESULTS_FORMAT)
#define RESULTS_V1_MAGIC_LINE "cowrun results 1\n"
#define RESULTS_V1_HEADER 24 /* format 1's frame header: no checksum */

struct results_context results_context_of(const struct cowrun_workload *w, const void *state)
{
	struct results_context c = { NULL, 0 };

	if (w != NULL && w->merge_context != NULL)
		c.bytes = w->merge_context(state, &c.len);
	if (c.bytes == NULL)
		c.len = 0;
	return c;
}

/* The identity's line for a merge context: its hash, as hex. */
#define CONTEXT_KEY "context"
static void context_hash_text(const void *bytes, size_t len, char *buf, size_t size)
{
	snprintf(buf, size, "%016" PRIx64, cowrun_hash64(bytes, len, 0));
}

uint64_t results_names_hash(const struct cowrun_workload *w, const void *state, size_t ntasks)
{
	uint64_t h = 0;

	/* Each name with its NUL, chained: ("ab", "c") is not ("a", "bc"). */
	for (size_t k = 0; k < ntasks; k++) {
		char name[COWRUN_NAME_MAX];
		name[0] = '\0';
		w->task_name(state, k, name, sizeof name);
		h = cowrun_hash64(name, strnlen(name, sizeof name - 1) + 1, h);
	}
	return h;
}

char *results_identity(const char *version, const struct cowrun_workload *w, uint64_t seed,
		       const char *body, size_t ntasks, const uint64_t *names,
		       struct results_context context)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	fprintf(f, RESULTS_MAGIC_LINE "cowrun %s\nworkload %s\nabi %d\nseed %" PRIu64
		"\ntasks %zu\n", version, w->name, w->abi_version, seed, ntasks);
	if (names != NULL)
		fprintf(f, "names %016" PRIx64 "\n", *names);
	if (context.len > 0) {
		char hash[32];
		context_hash_text(context.bytes, context.len, hash, sizeof hash);
		fprintf(f, CONTEXT_KEY " %s\n", hash);
	}
	fputs(body, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The identity, then the merge context if there is one, into w->fd.
 * Returns 0 or -1 after a message (the file aborted). */
static int results_start(struct results_writer *w, const char *identity,
			 struct results_context context)
{
	if (wire_writer_init(&w->out, w->fd, 1 << 16) != 0 ||
	    wire_put(&w->out, WIRE_IDENTITY, 0, identity, strlen(identity)) != 0 ||
	    (context.len > 0 &&
	     wire_put(&w->out, WIRE_CONTEXT, 0, context.bytes, context.len) != 0)) {
		warnx_("cannot write '%s': %s", w->temp, strerror(errno));
		results_abort(w);
		return -1;
	}
	return 0;
}

int results_create(struct results_writer *w, const char *path, const char *identity,
		   struct results_context context)
{
	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", path);
	w->fd = create_temp_beside_at(AT_FDCWD, path, w->temp, sizeof w->temp, 0666);
	if (w->fd < 0) {
		warnx_("cannot create '%s': %s", w->temp, strerror(errno));
		return -1;
	}
	return results_start(w, identity, context);
}

int results_create_fd(struct results_writer *w, int fd, const char *name, const char *identity,
		      struct results_context context)
{
	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", name);
	snprintf(w->temp, sizeof w->temp, "%s", name);
	w->fd = fd;
	w->by_fd = 1;
	return results_start(w, identity, context);
}

int results_put(struct results_writer *w, enum wire_type type, size_t task,
		const void *bytes, size_t length)
{
	if (w->fd < 0)
		return -1; /* an earlier write failed and said so */
	if (wire_put(&w->out, type, task, bytes, length) != 0) {
		warnx_("cannot write '%s': %s", w->temp, strerror(errno));
		results_abort(w);
		return -1;
	}
	w->frames++;
	return 0;
}

int results_commit(struct results_writer *w)
{
	if (w->fd < 0)
		return -1;
	if (wire_put(&w->out, WIRE_END, w->frames, NULL, 0) != 0 ||
	    wire_flush(&w->out) != 0 || fsync(w->fd) != 0) {
		warnx_("cannot write '%s': %s", w->temp, strerror(errno));
		results_abort(w);
		return -1;
	}
	/* fsync'd above: a failure there is the temporary's, one here the
	 * final name's. */
	int rc = w->by_fd ? close(w->fd) : commit_fd_at(AT_FDCWD, w->fd, w->temp, w->final, 0);
	w->fd = -1;
	if (rc != 0)
		warnx_("cannot save '%s': %s", w->final, strerror(errno));
	wire_writer_free(&w->out);
	return rc;
}

void results_abort(struct results_writer *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		if (!w->by_fd)
			unlink(w->temp);
	}
	w->fd = -1;
	wire_writer_free(&w->out);
}

/* The format of an identity frame of an older format (2 .. this one's
 * minus 1; format 1 has other frame headers), else 0. */
static int older_format(const struct wire_frame *f)
{
	static const char magic[] = "cowrun results ";
	size_t n = sizeof magic - 1;

	if (f->type != WIRE_IDENTITY || f->length < n + 2 || memcmp(f->payload, magic, n) != 0 ||
	    f->payload[n + 1] != '\n' || f->payload[n] < '2' || f->payload[n] >= '0' + RESULTS_FORMAT)
		return 0;
	return f->payload[n] - '0';
}

/* Check the first frame is this run's identity (runid_check()'s flags:
 * RUNID_RESUME for a journal). */
static int check_identity(const char *context, const char *path, const struct wire_frame *f,
			  const char *identity, int flags)
{
	if (f->type != WIRE_IDENTITY || f->length < strlen(RESULTS_MAGIC_LINE) ||
	    memcmp(f->payload, RESULTS_MAGIC_LINE, strlen(RESULTS_MAGIC_LINE)) != 0) {
		int format = older_format(f);
		if (format > 0)
			warnx_("%s: '%s' is in results format %d, of an older cowrun; this one reads "
			       "format %d (%s): %s", context, path, format, RESULTS_FORMAT,
			       RESULTS_FORMAT_NEWS, strcmp(context, "merge") == 0
			       ? "save the results again" : "run again without --resume");
		else
			warnx_("%s: '%s' is not a cowrun results file", context, path);
		return -1;
	}
	if (f->length == strlen(identity) && memcmp(f->payload, identity, f->length) == 0)
		return 0;
	return runid_check(context, path, (const char *)f->payload, f->length, identity, flags);
}

/* A frame in a file cannot be longer than the file: a corrupt length is
 * found before the reader allocates for it. */
static void limit_to_file_size(struct wire_reader *r, int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		r->max_payload = (uint64_t)st.st_size;
}

/* Open a file of frames and its reader, limited to the file's size.
 * Returns the descriptor, or -1 after a message ("CONTEXT: cannot open
 * WHAT'PATH'"); on success the caller frees the reader and closes it. */
static int open_frames(const char *context, const char *what, const char *path,
		       struct wire_reader *r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		warnx_("%s: cannot open %s'%s': %s", context, what, path, strerror(errno));
		return -1;
	}
	if (wire_reader_init(r, 1 << 16) != 0) {
		warnx_("%s: out of memory reading '%s'", context, path);
		close(fd);
		return -1;
	}
	limit_to_file_size(r, fd);
	return fd;
}

/* How reading a file of frames ended. */
enum read_end { READ_EOF, READ_STOPPED, READ_CORRUPT, READ_ERROR };

/* The reader both loaders share: every complete frame of fd, in order, to
 * each(), until the end of the file (READ_EOF), each() refusing a frame
 * (READ_STOPPED), a corrupt frame (READ_CORRUPT) or a read error
 * (READ_ERROR, errno kept). */
static enum read_end read_frames(int fd, struct wire_reader *r,
				 int (*each)(void *ctx, const struct wire_frame *f), void *ctx)
{
	struct wire_frame f;
	long n;

	while ((n = wire_reader_fill(r, fd)) > 0) {
		int got;
		while ((got = wire_reader_next(r, &f)) == 1)
			if (each(ctx, &f) != 0)
				return READ_STOPPED;
		if (got < 0)
			return READ_CORRUPT;
	}
	return n < 0 ? READ_ERROR : READ_EOF;
}

/* A saved-results file being read: where it is in its frames. */
struct saved_file {
	const char *path, *identity;
	uint64_t frames;         /* identity and task frames so far */
	int ended;               /* END was read */
	int context_seen;        /* the CONTEXT frame was read */
	results_take_fn *take;
	void *ctx;
};

/* Does the identity expect a merge context?  (It has a context line.) */
static int expects_context(const struct saved_file *s)
{
	char hash[32];

	runid_field(s->identity, strlen(s->identity), CONTEXT_KEY, hash, sizeof hash);
	return strcmp(hash, "?") != 0;
}

/* The CONTEXT frame: right after the identity, once, and the one whose
 * hash the identity names. */
static int check_context(struct saved_file *s, const struct wire_frame *f)
{
	char want[32], got[32];

	runid_field(s->identity, strlen(s->identity), CONTEXT_KEY, want, sizeof want);
	context_hash_text(f->payload, f->length, got, sizeof got);
	if (s->frames != 1 || s->context_seen || f->task != 0 || strcmp(want, got) != 0) {
		warnx_("merge: '%s' holds a malformed merge context frame", s->path);
		return -1;
	}
	s->context_seen = 1;
	return 0;
}

/* Before the first task frame, and at the end: the context is there if
 * the identity says there is one. */
static int check_context_seen(const struct saved_file *s)
{
	if (s->context_seen || !expects_context(s))
		return 0;
	warnx_("merge: '%s' holds no merge context, though its identity names one", s->path);
	return -1;
}

/* The frames of one file, in order: identity, context, tasks, END. */
static int load_frame(void *ctx, const struct wire_frame *f)
{
	struct saved_file *s = ctx;

	if (s->ended) {
		warnx_("merge: '%s' has data after its end marker", s->path);
		return -1;
	}
	if (s->frames == 0 && f->type != WIRE_IDENTITY)
		return check_identity("merge", s->path, f, s->identity, 0);
	if (f->type == WIRE_END && f->length != 0) {
		warnx_("merge: '%s' holds a malformed end marker", s->path);
		return -1;
	}
	switch (f->type) {
	case WIRE_IDENTITY:
		if (s->frames > 0) {
			warnx_("merge: '%s' has a second identity frame", s->path);
			return -1;
		}
		s->frames++;
		if (check_identity("merge", s->path, f, s->identity, 0) != 0)
			return -1;
		if (f->task != 0) {
			warnx_("merge: '%s' holds a malformed identity frame", s->path);
			return -1;
		}
		return 0;
	case WIRE_CONTEXT:
		return check_context(s, f);
	case WIRE_END:
		if (check_context_seen(s) != 0)
			return -1;
		if (f->task != s->frames - 1) {
			warnx_("merge: '%s' ends after %llu tasks but says %llu", s->path,
			       (unsigned long long)(s->frames - 1), (unsigned long long)f->task);
			return -1;
		}
		s->ended = 1;
		return 0;
	case WIRE_RESULT:
	case WIRE_FAILED:
		if (check_context_seen(s) != 0)
			return -1;
		s->frames++;
		return s->take(s->ctx, f);
	default:
		warnx_("merge: '%s' holds an unexpected frame", s->path);
		return -1;
	}
}

/* The whole file was read: was it whole?  Returns 0 or -1 after a message. */
static int check_complete(const struct saved_file *s, const struct wire_reader *r)
{
	if (s->frames == 0) {
		warnx_(wire_reader_pending(r) ? "merge: '%s' is truncated or not a cowrun results file"
					      : "merge: '%s' is empty", s->path);
		return -1;
	}
	if (!s->ended || wire_reader_pending(r) > 0) {
		warnx_("merge: '%s' is truncated (no end marker)", s->path);
		return -1;
	}
	return 0;
}

/* Does fd hold a file of results format 1 (24-byte headers, no
 * checksums)?  Read with pread: the file offset stays where it was. */
static int is_format_1(int fd)
{
	unsigned char head[RESULTS_V1_HEADER + sizeof RESULTS_V1_MAGIC_LINE - 1];
	uint32_t type, magic;

	if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head)
		return 0;
	memcpy(&type, head, sizeof type);
	memcpy(&magic, head + 4, sizeof magic);
	return type == WIRE_IDENTITY && magic == WIRE_MAGIC &&
	       memcmp(head + RESULTS_V1_HEADER, RESULTS_V1_MAGIC_LINE,
		      sizeof RESULTS_V1_MAGIC_LINE - 1) == 0;
}

/* "its identity frame", "its end marker" or "frame of task 17": the frame
 * whose checksum failed, as its (possibly damaged) header says. */
static const char *describe_bad_frame(const struct wire_fault *fault, uint64_t frames_before,
				      char *buf, size_t size)
{
	if (frames_before == 0)
		return "its identity frame";
	if (fault->type == WIRE_CONTEXT)
		return "its merge context";
	if (fault->type == WIRE_END)
		return "its end marker";
	snprintf(buf, size, "frame of task %llu", (unsigned long long)fault->task);
	return buf;
}

int results_load(const char *path, const char *identity, results_take_fn *take, void *ctx)
{
	struct wire_reader r;
	struct saved_file s = { path, identity, 0, 0, 0, take, ctx };
	char what[64];
	int rc = -1, fd = open_frames("merge", "", path, &r);

	if (fd < 0)
		return -1;
	if (is_format_1(fd)) {
		warnx_("merge: '%s' is in results format 1, of an older cowrun; this one reads "
		       "format %d (%s): save the results again", path, RESULTS_FORMAT,
		       RESULTS_FORMAT_NEWS);
		goto out;
	}
	switch (read_frames(fd, &r, load_frame, &s)) {
	case READ_STOPPED:
		break;
	case READ_CORRUPT:
		if (r.fault.kind == WIRE_BAD_CHECKSUM)
			warnx_("merge: '%s': %s fails its checksum (the file is damaged)", path,
			       describe_bad_frame(&r.fault, s.frames, what, sizeof what));
		else
			warnx_("merge: '%s' is corrupt or not a cowrun results file", path);
		break;
	case READ_ERROR:
		warnx_("merge: cannot read '%s': %s", path, strerror(errno));
		break;
	case READ_EOF:
		rc = check_complete(&s, &r);
		break;
	}
out:
	wire_reader_free(&r);
	close(fd);
	return rc;
}

/* results_read_context() and results_read_identity(): the first two
 * frames of a file. */
struct peek {
	uint64_t frames;
	int want_context;
	char *identity;  /* a copy of the identity's text, malloc'd */
	void *bytes;     /* a copy of the context's, malloc'd */
	size_t len;
};

static int peek_frame(void *ctx, const struct wire_frame *f)
{
	struct peek *p = ctx;

	if (p->frames++ == 0) {
		if (f->type != WIRE_IDENTITY || f->length < strlen(RESULTS_MAGIC_LINE) ||
		    memcmp(f->payload, RESULTS_MAGIC_LINE, strlen(RESULTS_MAGIC_LINE)) != 0)
			return -1;
		if (!p->want_context && (p->identity = malloc(f->length + 1)) != NULL) {
			memcpy(p->identity, f->payload, f->length);
			p->identity[f->length] = '\0';
		}
		return p->want_context ? 0 : -1;
	}
	if (f->type == WIRE_CONTEXT && (p->bytes = malloc(f->length ? f->length : 1)) != NULL) {
		memcpy(p->bytes, f->payload, f->length);
		p->len = f->length;
	}
	return -1; /* the second frame is all it needs */
}

/* Read the first frame or two of `path` into p. */
static void peek(const char *path, struct peek *p)
{
	struct wire_reader r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (wire_reader_init(&r, 1 << 16) == 0) {
		limit_to_file_size(&r, fd);
		if (!is_format_1(fd))
			read_frames(fd, &r, peek_frame, p);
		wire_reader_free(&r);
	}
	close(fd);
}

int results_read_context(const char *path, struct results_context *context)
{
	struct peek p = { 0, 1, NULL, NULL, 0 };

	peek(path, &p);
	*context = (struct results_context){ p.bytes, p.len };
	return p.bytes ? 0 : -1;
}

int results_read_identity(const char *path, char **identity)
{
	struct peek p = { 0, 0, NULL, NULL, 0 };

	peek(path, &p);
	*identity = p.identity;
	return p.identity ? 0 : -1;
}

/* ---- the journal ---- */

/* The journal's start on w->fd: cut back to `keep` bytes and appended
 * to, or a fresh identity frame.  Returns 0 or -1 after a message (the
 * descriptor then closed). */
static int journal_start(struct results_writer *w, const char *identity, long long keep)
{
	if (wire_writer_init(&w->out, w->fd, 1 << 16) != 0)
		goto fail;
	if (keep > 0) {
		/* Drop a torn last frame, then append after the good ones. */
		if (ftruncate(w->fd, keep) != 0 || lseek(w->fd, keep, SEEK_SET) < 0)
			goto fail;
	} else if (wire_put(&w->out, WIRE_IDENTITY, 0, identity, strlen(identity)) != 0 ||
		   wire_flush(&w->out) != 0) {
		goto fail;
	}
	w->synced_ns = now_ns();
	return 0;
fail:
	warnx_("cannot write results journal '%s': %s", w->final, strerror(errno));
	close(w->fd);
	w->fd = -1;
	wire_writer_free(&w->out);
	return -1;
}

int journal_open(struct results_writer *w, const char *path, const char *identity,
		 long long keep)
{
	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", path);
	snprintf(w->temp, sizeof w->temp, "%s", path);
	/* FILE.res is a name cowrun picks beside the joblog: never through a
	 * symbolic link planted there. */
	w->fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (keep > 0 ? 0 : O_TRUNC), 0666);
	if (w->fd < 0) {
		warnx_("cannot open results journal '%s': %s", path, strerror(errno));
		return -1;
	}
	return journal_start(w, identity, keep);
}

int journal_open_fd(struct results_writer *w, int fd, const char *name, const char *identity,
		    long long keep)
{
	struct stat st;

	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", name);
	snprintf(w->temp, sizeof w->temp, "%s", name);
	w->fd = fd;
	if (keep == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0)) {
		warnx_("cannot write results journal '%s': %s", name, strerror(errno));
		close(fd);
		w->fd = -1;
		return -1;
	}
	return journal_start(w, identity, keep);
}

int journal_put(struct results_writer *w, enum wire_type type, size_t task,
		const void *bytes, size_t length)
{
	if (w->fd < 0)
		return -1;
	if (wire_put(&w->out, type, task, bytes, length) != 0 || wire_flush(&w->out) != 0) {
		warnx_("cannot write results journal '%s': %s", w->final, strerror(errno));
		return -1;
	}
	/* Durable within about a second without an fsync per task. */
	if (now_ns() - w->synced_ns > 1000000000u) {
		fdatasync(w->fd);
		w->synced_ns = now_ns();
	}
	return 0;
}

int journal_close(struct results_writer *w)
{
	int rc = 0;

	if (w->fd < 0)
		return 0;
	if (wire_flush(&w->out) != 0 || fsync(w->fd) != 0 || close(w->fd) != 0) {
		warnx_("cannot write results journal '%s': %s", w->final, strerror(errno));
		rc = -1;
	}
	w->fd = -1;
	wire_writer_free(&w->out);
	return rc;
}

/* A journal being read, whole, from memory. */
struct journal_file {
	const char *path, *identity;
	unsigned char *data;
	size_t size;
	size_t records;          /* task frames taken */
	results_take_fn *take;
	void *ctx;
};

/* Read all of fd into *data (malloc'd; the caller frees it).  Returns 0,
 * or -1 with errno. */
static int read_whole(int fd, unsigned char **data, size_t *size)
{
	struct stat st;
	size_t got = 0;

	*data = NULL;
	if (fstat(fd, &st) != 0)
		return -1;
	*data = malloc((size_t)st.st_size + 1);
	if (*data == NULL)
		return -1;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrank while read: what is there is the journal */
		got += (size_t)n;
	}
	*size = got;
	return 0;
}

/* The frame at `at`: 1 good (*f filled), else 0 or -1 as wire_parse(). */
static int journal_frame_at(const struct journal_file *j, size_t at, struct wire_frame *f,
			    struct wire_fault *fault)
{
	return wire_parse(j->data + at, j->size - at, j->size, f, fault);
}

/* The first good frame that starts after `at`, or j->size if none: is the
 * damage at `at` the tail, or in the middle? */
static size_t next_good_frame(const struct journal_file *j, size_t at)
{
	const uint32_t magic = WIRE_MAGIC;
	struct wire_frame f;
	struct wire_fault fault;

	for (size_t from = at + 1 + 4; from + 4 <= j->size; from++) {
		const unsigned char *hit = memmem(j->data + from, j->size - from, &magic, 4);
		if (hit == NULL)
			break;
		from = (size_t)(hit - j->data);
		if (journal_frame_at(j, from - 4, &f, &fault) == 1)
			return from - 4;
	}
	return j->size;
}

/* A task frame to the taker (other types are skipped). */
static int journal_take(struct journal_file *j, const struct wire_frame *f)
{
	if (f->type != WIRE_RESULT && f->type != WIRE_FAILED)
		return 0;
	j->records++;
	return j->take(j->ctx, f);
}

/* A damaged record at `at` with good frames from `next` on: refused, or
 * (rerun) dropped.  Its task then has no record, or an earlier FAILED one
 * (a task is journaled again only when it failed), so it runs again.
 * Returns 0 or -1 after a message. */
static int journal_damaged(const struct journal_file *j, size_t at, size_t next,
			   const struct wire_fault *fault, int rerun)
{
	char what[96];

	if (fault->kind == WIRE_BAD_CHECKSUM)
		snprintf(what, sizeof what, "the record of task %llu (byte %zu) fails its checksum",
			 (unsigned long long)fault->task, at);
	else
		snprintf(what, sizeof what, "the record at byte %zu is not a frame", at);
	if (!rerun) {
		warnx_("--resume: '%s': %s, and good records follow it (the journal is damaged); "
		       "--resume-failed drops it and runs its task again", j->path, what);
		return -1;
	}
	warnx_("--resume-failed: '%s': %s: dropped (%zu bytes), its task runs again", j->path,
	       what, next - at);
	return 0;
}

/* Write the journal's good frames (j->data[0..size), damaged bytes
 * already cut out) to a temporary file and rename it over the journal.
 * Returns 0 or -1 after a message. */
static int journal_rewrite(const struct journal_file *j, size_t size)
{
	if (commit_new_file_at(AT_FDCWD, j->path, j->data, size, 0666, COMMIT_FSYNC) != 0) {
		warnx_("--resume: cannot repair results journal '%s': %s", j->path,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* Walk the frames: the identity, then the task frames, cutting damaged
 * middle records out of j->data when rerun.  Sets *good to the length of
 * the good part (after any cut) and *cut to the bytes cut.  Returns 0 or
 * -1 after a message. */
static int journal_walk(struct journal_file *j, int rerun, size_t *good, size_t *cut)
{
	struct wire_frame f;
	struct wire_fault fault = { 0 };
	size_t at = 0;

	*cut = 0;
	while (at < j->size) {
		if (journal_frame_at(j, at, &f, &fault) != 1) {
			size_t next = next_good_frame(j, at);
			if (at == 0 || next == j->size)
				break; /* a bad identity, or the tail */
			if (journal_damaged(j, at, next, &fault, rerun) != 0)
				return -1;
			memmove(j->data + at, j->data + next, j->size - next);
			j->size -= next - at;
			*cut += next - at;
			continue;
		}
		if (at == 0 ? check_identity("--resume", j->path, &f, j->identity, RUNID_RESUME) != 0
			    : journal_take(j, &f) != 0)
			return -1;
		at += sizeof(struct wire_header) + f.length;
	}
	*good = at;
	if (at == 0) {
		if (fault.kind == WIRE_BAD_CHECKSUM)
			warnx_("--resume: '%s': its identity frame fails its checksum (the "
			       "journal is damaged)", j->path);
		else
			warnx_("--resume: '%s' is not a cowrun results journal", j->path);
		return -1;
	}
	return 0;
}

/* Cut the damaged bytes out of the caller's journal in place: the good
 * frames written from its start, the rest cut off.  Returns 0 or -1 after
 * a message. */
static int journal_rewrite_fd(const struct journal_file *j, int fd, size_t size)
{
	if (lseek(fd, 0, SEEK_SET) < 0 || write_all(fd, j->data, size) != 0 ||
	    ftruncate(fd, (off_t)size) != 0 ||
	    fsync(fd) != 0) {
		warnx_("--resume: cannot repair results journal '%s': %s", j->path,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* journal_load()'s body on an open descriptor (`own`: read from the
 * caller's, which is repaired in place; else repaired by rename). */
static int journal_load_from(int fd, int own, const char *path, const char *identity,
			     int rerun_damaged, results_take_fn *take, void *ctx, long long *keep)
{
	struct journal_file j = { path, identity, NULL, 0, 0, take, ctx };
	size_t good = 0, cut = 0;
	int rc = -1;

	if (own && lseek(fd, 0, SEEK_SET) < 0) {
		warnx_("--resume: cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (read_whole(fd, &j.data, &j.size) != 0) {
		warnx_("--resume: cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (is_format_1(fd)) {
		warnx_("--resume: '%s' is in results format 1, of an older cowrun; this one "
		       "reads format %d (%s): run again without --resume", path, RESULTS_FORMAT,
		       RESULTS_FORMAT_NEWS);
		goto out;
	}
	if (journal_walk(&j, rerun_damaged, &good, &cut) != 0)
		goto out;
	if (good < j.size)
		warnx_("--resume: '%s': kept %zu records, dropped a torn or damaged tail of "
		       "%zu bytes", path, j.records, j.size - good);
	if (cut > 0 && (own ? journal_rewrite_fd(&j, fd, good) : journal_rewrite(&j, good)) != 0)
		goto out;
	*keep = (long long)good;
	rc = 0;
out:
	free(j.data);
	return rc;
}

int journal_load(const char *path, const char *identity, int rerun_damaged,
		 results_take_fn *take, void *ctx, long long *keep)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		warnx_("--resume: cannot open results journal '%s': %s", path, strerror(errno));
		return -1;
	}
	int rc = journal_load_from(fd, 0, path, identity, rerun_damaged, take, ctx, keep);
	close(fd);
	return rc;
}

int journal_load_fd(int fd, const char *name, const char *identity, int rerun_damaged,
		    results_take_fn *take, void *ctx, long long *keep)
{
	return journal_load_from(fd, 1, name, identity, rerun_damaged, take, ctx, keep);
}
