/*
 * fuzz_wire.c - libFuzzer harness for the parent's side of the result-record
 * framing (runner/files/wire.c): wire_reader_fill() and wire_reader_next() on a
 * non-blocking pipe, as pool.c reads a worker's pipe.
 *
 * Input: byte 0 sets the reader's initial capacity, byte 1 the size of the
 * chunks the stream is written in (so frames arrive split anywhere, and
 * the reader sees partial headers and payloads); the rest is the stream.
 * The reader's frames are checked against a plain reference decoder: the
 * same frames, in order, with the same bytes; a corrupt stream (a bad
 * header, or a checksum that fails, computed here from wire.h's words
 * with xxHash itself) reported where the reference finds it; a partial
 * frame left pending.
 *
 * Build and run: make fuzz (see the Makefile); seeds in corpus/wire/.
 */
#define _GNU_SOURCE
#include "files/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A frame header may claim up to WIRE_MAX_PAYLOAD (1 TiB): on a worker's
 * pipe the reader then grows its buffer to fit, by design (the worker is
 * ours).  Exercising that only exercises the allocator, so inputs whose
 * frames claim more than this are rejected. */
#define MAX_CLAIMED (1u << 20)

/* The reference: the frame at data[*off], if the stream holds all of it.
 * Returns 1 (frame, *off advanced), 0 (partial: more bytes needed), or -1
 * (corrupt header, or a checksum that fails). */
static int ref_next(const uint8_t *data, size_t size, size_t *off, struct wire_header *h)
{
	if (size - *off < sizeof *h)
		return 0;
	memcpy(h, data + *off, sizeof *h);
	if (h->magic != WIRE_MAGIC || h->length > WIRE_MAX_PAYLOAD ||
	    h->type < WIRE_RESULT || h->type > WIRE_TYPE_MAX)
		return -1;
	if (size - *off - sizeof *h < h->length)
		return 0;
	/* XXH3-64 of the payload, seeded with XXH3-64 of the first 24 bytes. */
	if (XXH3_64bits_withSeed(data + *off + sizeof *h, (size_t)h->length,
				 XXH3_64bits(data + *off, 24)) != h->checksum)
		return -1;
	*off += sizeof *h + h->length;
	return 1;
}

/* True if some frame the reader will look at claims more than MAX_CLAIMED. */
static int claims_too_much(const uint8_t *data, size_t size)
{
	struct wire_header h;
	size_t off = 0;
	int r;

	while ((r = ref_next(data, size, &off, &h)) == 1)
		;
	if (size - off >= sizeof h) {
		memcpy(&h, data + off, sizeof h);
		return h.magic == WIRE_MAGIC && h.length > MAX_CLAIMED;
	}
	return 0;
}

struct check {
	const uint8_t *stream;
	size_t size, off;  /* reference position */
	int corrupt;       /* the reader said -1 */
};

/* Take every frame the reader has; compare each with the reference. */
static void take_frames(struct wire_reader *r, struct check *c)
{
	struct wire_frame f;
	struct wire_header h;
	int got;

	while (!c->corrupt && (got = wire_reader_next(r, &f)) != 0) {
		size_t at = c->off;
		int want = ref_next(c->stream, c->size, &c->off, &h);
		if (got < 0) {
			if (want != -1)
				abort(); /* corrupt where the reference sees none */
			c->corrupt = 1;
			return;
		}
		if (want != 1 || f.type != (enum wire_type)h.type || f.task != h.task ||
		    f.length != h.length ||
		    memcmp(f.payload, c->stream + at + sizeof h, f.length) != 0)
			abort(); /* a frame the reference does not have */
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_reader r;
	struct check c = { 0 };
	struct wire_header h;
	int fds[2];

	if (size < 2 || claims_too_much(data + 2, size - 2))
		return -1;
	size_t capacity = data[0] + 1u, chunk = data[1] ? data[1] : 4096;
	c.stream = data + 2;
	c.size = size - 2;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
		abort();
	if (wire_reader_init(&r, capacity) != 0)
		abort();
	/* Write a chunk, read all that is there, repeat: at most 4 KiB is in
	 * the pipe at a time, so writing never blocks. */
	for (size_t done = 0; done < c.size && !c.corrupt; done += chunk) {
		size_t n = c.size - done < chunk ? c.size - done : chunk;
		if (write(fds[1], c.stream + done, n) != (ssize_t)n)
			abort();
		while (!c.corrupt) {
			long got = wire_reader_fill(&r, fds[0]);
			if (got < 0 && errno == EAGAIN)
				break;
			if (got <= 0)
				break; /* EPROTO: the next call reports the corrupt frame */
			take_frames(&r, &c);
		}
		take_frames(&r, &c);
	}
	close(fds[1]);
	if (!c.corrupt) {
		if (wire_reader_fill(&r, fds[0]) > 0)
			abort(); /* nothing was left in the pipe */
		take_frames(&r, &c);
		/* The reference stops where the reader does: on a partial
		 * frame (left pending) or a corrupt header. */
		size_t at = c.off;
		int want = ref_next(c.stream, c.size, &at, &h);
		if (want == 1 || (want == 0 && wire_reader_pending(&r) != c.size - c.off))
			abort();
		if (want == -1 && wire_reader_next(&r, &(struct wire_frame){ 0 }) != -1)
			abort();
	}
	close(fds[0]);
	wire_reader_free(&r);
	return 0;
}
