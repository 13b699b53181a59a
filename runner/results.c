/*
 * results.c - writing and reading saved-results files.  See results.h.
 */
#define _GNU_SOURCE
#include "results.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RESULTS_MAGIC_LINE "cowrun results 1\n"

char *results_identity(const char *workload, int argc, char **argv, size_t ntasks)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	fprintf(f, RESULTS_MAGIC_LINE "workload %s\ntasks %zu\n", workload, ntasks);
	for (int i = 1; i < argc; i++)
		fprintf(f, "arg %s\n", argv[i]);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int results_create(struct results_writer *w, const char *path, const char *identity)
{
	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", path);
	snprintf(w->temp, sizeof w->temp, "%s.%ld.tmp", path, (long)getpid());
	w->fd = open(w->temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0) {
		warnx_("cannot create '%s': %s", w->temp, strerror(errno));
		return -1;
	}
	if (wire_writer_init(&w->out, w->fd, 1 << 16) != 0 ||
	    wire_put(&w->out, WIRE_IDENTITY, 0, identity, strlen(identity)) != 0) {
		warnx_("cannot write '%s': %s", w->temp, strerror(errno));
		results_abort(w);
		return -1;
	}
	return 0;
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
	int rc = close(w->fd);
	w->fd = -1;
	if (rc != 0 || rename(w->temp, w->final) != 0) {
		warnx_("cannot save '%s': %s", w->final, strerror(errno));
		unlink(w->temp);
		rc = -1;
	}
	wire_writer_free(&w->out);
	return rc;
}

void results_abort(struct results_writer *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		unlink(w->temp);
	}
	w->fd = -1;
	wire_writer_free(&w->out);
}

/* "sales --rows 10 (64 tasks)" from an identity text, for messages. */
static void describe_identity(const char *identity, size_t length, char *buf, size_t size)
{
	char text[1024];
	size_t n = length < sizeof text - 1 ? length : sizeof text - 1;
	char *save = NULL, *line, *out = buf;
	const char *tasks = "?";

	memcpy(text, identity, n);
	text[n] = '\0';
	buf[0] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t room = size - (size_t)(out - buf);
		if (strncmp(line, "workload ", 9) == 0 || strncmp(line, "arg ", 4) == 0)
			out += snprintf(out, room, "%s%s", out == buf ? "" : " ",
					strchr(line, ' ') + 1);
		else if (strncmp(line, "tasks ", 6) == 0)
			tasks = line + 6;
		if ((size_t)(out - buf) >= size - 1)
			return;
	}
	snprintf(out, size - (size_t)(out - buf), " (%s tasks)", tasks);
}

/* Check the first frame is this run's identity. */
static int check_identity(const char *context, const char *path, const struct wire_frame *f,
			  const char *identity)
{
	char saved[512], ours[512];

	if (f->type != WIRE_IDENTITY || f->length < strlen(RESULTS_MAGIC_LINE) ||
	    memcmp(f->payload, RESULTS_MAGIC_LINE, strlen(RESULTS_MAGIC_LINE)) != 0) {
		warnx_("%s: '%s' is not a cowrun results file", context, path);
		return -1;
	}
	if (f->length == strlen(identity) && memcmp(f->payload, identity, f->length) == 0)
		return 0;
	describe_identity((const char *)f->payload, f->length, saved, sizeof saved);
	describe_identity(identity, strlen(identity), ours, sizeof ours);
	warnx_("%s: '%s' was saved by '%s', not by this run's '%s'", context, path, saved, ours);
	return -1;
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
	results_take_fn *take;
	void *ctx;
};

/* The frames of one file, in order: identity, tasks, END. */
static int load_frame(void *ctx, const struct wire_frame *f)
{
	struct saved_file *s = ctx;

	if (s->ended) {
		warnx_("merge: '%s' has data after its end marker", s->path);
		return -1;
	}
	if (s->frames == 0 && f->type != WIRE_IDENTITY)
		return check_identity("merge", s->path, f, s->identity);
	switch (f->type) {
	case WIRE_IDENTITY:
		if (s->frames > 0) {
			warnx_("merge: '%s' has a second identity frame", s->path);
			return -1;
		}
		s->frames++;
		return check_identity("merge", s->path, f, s->identity);
	case WIRE_END:
		if (f->task != s->frames - 1) {
			warnx_("merge: '%s' ends after %llu tasks but says %llu", s->path,
			       (unsigned long long)(s->frames - 1), (unsigned long long)f->task);
			return -1;
		}
		s->ended = 1;
		return 0;
	case WIRE_RESULT:
	case WIRE_FAILED:
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

int results_load(const char *path, const char *identity, results_take_fn *take, void *ctx)
{
	struct wire_reader r;
	struct saved_file s = { path, identity, 0, 0, take, ctx };
	int rc = -1, fd = open_frames("merge", "", path, &r);

	if (fd < 0)
		return -1;
	switch (read_frames(fd, &r, load_frame, &s)) {
	case READ_STOPPED:
		break;
	case READ_CORRUPT:
		warnx_("merge: '%s' is corrupt or not a cowrun results file", path);
		break;
	case READ_ERROR:
		warnx_("merge: cannot read '%s': %s", path, strerror(errno));
		break;
	case READ_EOF:
		rc = check_complete(&s, &r);
		break;
	}
	wire_reader_free(&r);
	close(fd);
	return rc;
}

/* ---- the journal ---- */

int journal_open(struct results_writer *w, const char *path, const char *identity,
		 long long keep)
{
	memset(w, 0, sizeof *w);
	snprintf(w->final, sizeof w->final, "%s", path);
	snprintf(w->temp, sizeof w->temp, "%s", path);
	w->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (keep > 0 ? 0 : O_TRUNC), 0666);
	if (w->fd < 0) {
		warnx_("cannot open results journal '%s': %s", path, strerror(errno));
		return -1;
	}
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
	warnx_("cannot write results journal '%s': %s", path, strerror(errno));
	close(w->fd);
	w->fd = -1;
	wire_writer_free(&w->out);
	return -1;
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

/* A journal being read: how much of it is complete frames so far. */
struct journal_file {
	const char *path, *identity;
	long long consumed;
	results_take_fn *take;
	void *ctx;
};

/* The identity frame, then every task frame to the taker. */
static int journal_frame(void *ctx, const struct wire_frame *f)
{
	struct journal_file *j = ctx;

	if (j->consumed == 0 && check_identity("--resume", j->path, f, j->identity) != 0)
		return -1;
	if (j->consumed > 0 && (f->type == WIRE_RESULT || f->type == WIRE_FAILED) &&
	    j->take(j->ctx, f) != 0)
		return -1;
	j->consumed += (long long)(sizeof(struct wire_header) + f->length);
	return 0;
}

int journal_load(const char *path, const char *identity, results_take_fn *take, void *ctx,
		 long long *keep)
{
	struct wire_reader r;
	struct journal_file j = { path, identity, 0, take, ctx };
	int rc = -1, fd = open_frames("--resume", "results journal ", path, &r);

	if (fd < 0)
		return -1;
	/* A torn or garbled tail (the parent died mid-write) is dropped. */
	if (read_frames(fd, &r, journal_frame, &j) == READ_STOPPED)
		goto out;
	if (j.consumed == 0)
		warnx_("--resume: '%s' is not a cowrun results journal", path);
	else
		rc = 0;
	*keep = j.consumed;
out:
	wire_reader_free(&r);
	close(fd);
	return rc;
}
