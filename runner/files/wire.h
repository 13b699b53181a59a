/*
 * wire.h - the framing of result records on a worker's pipe (and, later,
 * in saved-results files).
 *
 * A frame is a fixed 32-byte header followed by `length` payload bytes:
 *
 *   uint32 type     WIRE_RESULT (payload: the task's result record),
 *                   WIRE_FAILED (payload: the error message, no NUL),
 *                   WIRE_TIMING (payload: struct wire_timing),
 *                   WIRE_IDENTITY (first frame of a saved-results file:
 *                   who saved it; task 0), or
 *                   WIRE_END (last frame of a saved-results file; task =
 *                   number of task frames before it; no payload), or
 *                   WIRE_STATS (a worker's last frame: struct worker_stats),
 *                   WIRE_RESULT_TO_COMMIT (below)
 *   uint32 magic    WIRE_MAGIC, to catch a desynchronised stream early
 *   uint64 task     task index
 *   uint64 length   payload bytes
 *   uint64 checksum XXH3-64 of the payload, seeded with the XXH3-64 of the
 *                   four fields above: any changed bit of a frame, header
 *                   or payload, fails it (wire_checksum())
 *
 * in the host's byte order: both ends run on the same machine.  Payloads
 * may be far larger than a pipe buffer; the reader reassembles them.  The
 * reader checks every frame's checksum, on pipes as in files: it costs
 * well under a millisecond per MB (README: measured), and a frame that passes is the frame that was put.
 */
#ifndef COWRUN_WIRE_H
#define COWRUN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAGIC 0x636f7752u /* "Rwoc" */
#define WIRE_MAX_PAYLOAD ((uint64_t)1 << 40)

enum wire_type {
	WIRE_RESULT = 1,
	WIRE_FAILED = 2,
	WIRE_TIMING = 3,
	WIRE_IDENTITY = 4,
	WIRE_END = 5,
	WIRE_STATS = 6,
	WIRE_CONTEXT = 7,  /* saved results: the workload's merge context */
	/* On a worker's pipe only: a task's result (payload: the record)
	 * whose report the worker closed under its temporary name, for the
	 * parent to fsync and rename (engine/commits.c). */
	WIRE_RESULT_TO_COMMIT = 8,
	WIRE_TYPE_MAX = WIRE_RESULT_TO_COMMIT,
};

/* When and where a task ran (CLOCK_MONOTONIC, which every process on the
 * machine shares), for --timeline. */
struct wire_timing {
	uint64_t start_ns, end_ns;
	uint32_t worker;
	int32_t ok;
};

struct wire_header {
	uint32_t type;
	uint32_t magic;
	uint64_t task;
	uint64_t length;
	uint64_t checksum;
};

/* The checksum of a frame with header h (its checksum field ignored) and
 * these payload bytes. */
uint64_t wire_checksum(const struct wire_header *h, const void *payload, size_t length);

/* Why wire_reader_next() or wire_parse() found a frame corrupt. */
struct wire_fault {
	enum {
		WIRE_OK = 0,
		WIRE_BAD_HEADER,   /* bad magic, type or length: not a frame */
		WIRE_BAD_CHECKSUM, /* a frame whose bytes changed */
	} kind;
	uint32_t type;             /* WIRE_BAD_CHECKSUM: what its header says */
	uint64_t task;
};

/* One decoded frame.  `payload` points into the reader's buffer and is
 * valid until the next wire_reader_fill() or wire_reader_free(). */
struct wire_frame {
	enum wire_type type;
	uint64_t task;
	const unsigned char *payload;
	size_t length;
};

/* ---- writing (worker side) ---- */

/* Buffers small frames so a run of quick tasks costs one write(). */
struct wire_writer {
	int fd;
	unsigned char *buf;
	size_t len, cap;
};

/* Returns 0 or -1 (ENOMEM).  The writer does not own fd. */
int wire_writer_init(struct wire_writer *w, int fd, size_t capacity);

/* Queue one frame; frames larger than the buffer go out at once.
 * Returns 0 or -1 with errno (a write error such as EPIPE). */
int wire_put(struct wire_writer *w, enum wire_type type, uint64_t task,
	     const void *payload, size_t length);

/* Write out everything queued.  Returns 0 or -1 with errno. */
int wire_flush(struct wire_writer *w);

void wire_writer_free(struct wire_writer *w);

/* ---- reading (parent side) ---- */

struct wire_reader {
	unsigned char *buf;
	size_t start;  /* first unconsumed byte */
	size_t end;    /* one past the last byte read */
	size_t cap;
	uint64_t max_payload; /* larger claims are corrupt (default WIRE_MAX_PAYLOAD;
			       * a file reader lowers it to the file's size) */
	struct wire_fault fault; /* why wire_reader_next() last returned -1 */
};

int wire_reader_init(struct wire_reader *r, size_t capacity);

/*
 * One read() from fd into the buffer (growing it so a large frame's payload
 * is read in place, without another copy).  Retries EINTR.  Returns the
 * number of bytes read, 0 at end of file, or -1 with errno (EAGAIN on an
 * empty non-blocking pipe).  Invalidates earlier frames' payload pointers.
 * Take every complete frame with wire_reader_next() before calling it
 * again: a full buffer of complete frames fails with EPROTO.
 */
long wire_reader_fill(struct wire_reader *r, int fd);

/*
 * Take the next complete frame.  Returns 1 and fills *frame, 0 if more
 * bytes are needed, -1 if the stream is corrupt (bad magic or type, or a
 * length over max_payload: r->fault.kind WIRE_BAD_HEADER; a frame whose
 * checksum fails: WIRE_BAD_CHECKSUM, with the type and task its header
 * names in r->fault).  A corrupt frame is not consumed.
 */
int wire_reader_next(struct wire_reader *r, struct wire_frame *frame);

/*
 * Decode the frame at the start of buf[0..avail) as wire_reader_next()
 * does, for a reader holding a whole file in memory: 1 (*frame filled,
 * its payload pointing into buf; the frame takes sizeof(struct
 * wire_header) + frame->length bytes), 0 (buf ends inside the frame) or
 * -1 (corrupt; *fault says why, as in struct wire_reader).
 */
int wire_parse(const unsigned char *buf, size_t avail, uint64_t max_payload,
	       struct wire_frame *frame, struct wire_fault *fault);

/* Bytes received but not yet returned as a frame (a partial frame). */
size_t wire_reader_pending(const struct wire_reader *r);

void wire_reader_free(struct wire_reader *r);

#endif
