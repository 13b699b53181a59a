/*
 * wire.c - result-record framing: a buffered writer for workers and an
 * incremental reader for the parent.  See wire.h for the frame layout.
 */
#include "wire.h"
#include "cowrun.h"
#include "os/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
/* xxHash compiled in (its header has the whole of it): no library to load
 * at every start of cowrun. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* The header's first four fields: everything but the checksum. */
#define WIRE_HEADER_SUMMED offsetof(struct wire_header, checksum)

uint64_t wire_checksum(const struct wire_header *h, const void *payload, size_t length)
{
	XXH64_hash_t seed = XXH3_64bits(h, WIRE_HEADER_SUMMED);

	return XXH3_64bits_withSeed(payload, length, seed);
}

int wire_writer_init(struct wire_writer *w, int fd, size_t capacity)
{
	w->fd = fd;
	w->len = 0;
	w->cap = capacity;
	w->buf = malloc(capacity);
	return w->buf ? 0 : -1;
}

/* Write header and payload with one writev, then finish any short write. */
static int write_frame_now(int fd, const struct wire_header *h,
			   const void *payload, size_t length)
{
	struct iovec iov[2] = {
		{ (void *)h, sizeof *h },
		{ (void *)payload, length },
	};
	ssize_t n;

	do
		n = writev(fd, iov, 2);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	size_t done = (size_t)n;
	if (done < sizeof *h) {
		if (write_all(fd, (const char *)h + done, sizeof *h - done) != 0)
			return -1;
		done = sizeof *h;
	}
	return write_all(fd, (const char *)payload + (done - sizeof *h),
			 length - (done - sizeof *h));
}

int wire_put(struct wire_writer *w, enum wire_type type, uint64_t task,
	     const void *payload, size_t length)
{
	struct wire_header h = { type, WIRE_MAGIC, task, length, 0 };
	size_t need = sizeof h + length;

	if (w->len + need > w->cap && wire_flush(w) != 0)
		return -1;
	h.checksum = wire_checksum(&h, payload, length);
	if (need > w->cap)
		return write_frame_now(w->fd, &h, payload, length);
	memcpy(w->buf + w->len, &h, sizeof h);
	if (length > 0)
		memcpy(w->buf + w->len + sizeof h, payload, length);
	w->len += need;
	return 0;
}

int wire_flush(struct wire_writer *w)
{
	if (w->len == 0)
		return 0;
	if (write_all(w->fd, w->buf, w->len) != 0)
		return -1;
	w->len = 0;
	return 0;
}

void wire_writer_free(struct wire_writer *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

int wire_reader_init(struct wire_reader *r, size_t capacity)
{
	/* The buffer grows to fit a frame once its header is in: it must
	 * hold a header to begin with. */
	if (capacity < sizeof(struct wire_header))
		capacity = sizeof(struct wire_header);
	r->start = r->end = 0;
	r->cap = capacity;
	r->max_payload = WIRE_MAX_PAYLOAD;
	memset(&r->fault, 0, sizeof r->fault);
	r->buf = malloc(capacity);
	return r->buf ? 0 : -1;
}

/* Bytes the frame starting at r->start needs in total, if its header is
 * complete and sane; 0 otherwise. */
static size_t frame_size_needed(const struct wire_reader *r)
{
	struct wire_header h;

	if (r->end - r->start < sizeof h)
		return 0;
	memcpy(&h, r->buf + r->start, sizeof h);
	if (h.magic != WIRE_MAGIC || h.length > r->max_payload)
		return 0;
	return sizeof h + (size_t)h.length;
}

/* Make room to read: drop consumed bytes, and grow the buffer so that a
 * large pending frame fits whole. */
static int make_room(struct wire_reader *r)
{
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	size_t need = frame_size_needed(r);
	if (need > r->cap) {
		unsigned char *bigger = realloc(r->buf, need);
		if (bigger == NULL)
			return -1;
		r->buf = bigger;
		r->cap = need;
	}
	return 0;
}

long wire_reader_fill(struct wire_reader *r, int fd)
{
	ssize_t n;

	if (make_room(r) != 0)
		return -1;
	if (r->end == r->cap) {
		/* A corrupt header (wire_reader_next reports it), or a
		 * caller that did not take the complete frames first. */
		errno = EPROTO;
		return -1;
	}
	do
		n = read(fd, r->buf + r->end, r->cap - r->end);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		r->end += (size_t)n;
	return (long)n;
}

int wire_parse(const unsigned char *buf, size_t avail, uint64_t max_payload,
	       struct wire_frame *frame, struct wire_fault *fault)
{
	struct wire_header h;

	fault->kind = WIRE_OK;
	if (avail < sizeof h)
		return 0;
	memcpy(&h, buf, sizeof h);
	if (h.magic != WIRE_MAGIC || h.length > max_payload ||
	    h.type < WIRE_RESULT || h.type > WIRE_TYPE_MAX) {
		fault->kind = WIRE_BAD_HEADER;
		return -1;
	}
	if (avail - sizeof h < h.length)
		return 0;
	if (wire_checksum(&h, buf + sizeof h, (size_t)h.length) != h.checksum) {
		fault->kind = WIRE_BAD_CHECKSUM;
		fault->type = h.type;
		fault->task = h.task;
		return -1;
	}
	frame->type = (enum wire_type)h.type;
	frame->task = h.task;
	frame->payload = buf + sizeof h;
	frame->length = (size_t)h.length;
	return 1;
}

int wire_reader_next(struct wire_reader *r, struct wire_frame *frame)
{
	int got = wire_parse(r->buf + r->start, r->end - r->start, r->max_payload, frame,
			     &r->fault);

	if (got == 1)
		r->start += sizeof(struct wire_header) + frame->length;
	return got;
}

size_t wire_reader_pending(const struct wire_reader *r)
{
	return r->end - r->start;
}

void wire_reader_free(struct wire_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->start = r->end = r->cap = 0;
}

/* The workload API's hash (cowrun.h): the same XXH3 as the frames'. */
uint64_t cowrun_hash64(const void *data, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(data, len, seed);
}
