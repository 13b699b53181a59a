/*
 * test_wire.c - unit tests for runner/files/wire.c: frames round-trip through a
 * real pipe (a forked writer child), partial reads reassemble frames,
 * corrupt headers are refused, end of file mid-frame leaves bytes pending.
 *
 * A writer child never calls a cmocka assertion (that would longjmp back
 * into the test runner inside the child): it checks its own calls and
 * reports through its exit status, which the parent asserts on.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files/wire.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define WRITER_CAP (64 * KIB)

/* Exit codes of a writer child. */
enum { CHILD_OK = 0, CHILD_INIT = 10, CHILD_PUT = 11, CHILD_FLUSH = 12, CHILD_NOSIG = 13 };

/* ---- deterministic payloads ---- */

/* A pseudo-random byte pattern (xorshift32, so no short period: a payload
 * shifted by any offset does not match), big enough for the largest
 * frame plus the per-frame offset. */
#define PATTERN_SLACK 4096
static unsigned char *pattern;
static size_t pattern_size;

static uint32_t xorshift32(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void pattern_ensure(size_t size)
{
	if (pattern_size >= size + PATTERN_SLACK)
		return;
	free(pattern);
	pattern_size = size + PATTERN_SLACK;
	pattern = malloc(pattern_size);
	assert_non_null(pattern);
	uint32_t s = 0x12345678u;
	for (size_t i = 0; i < pattern_size; i += 4) {
		uint32_t v = xorshift32(&s);
		size_t n = pattern_size - i < 4 ? pattern_size - i : 4;
		memcpy(pattern + i, &v, n);
	}
}

/* Frame j's payload: a slice of the pattern starting at a j-dependent
 * offset, so two frames of equal length still differ. */
static const unsigned char *payload_of(uint64_t task)
{
	return pattern + (task * 977u + 13u) % PATTERN_SLACK;
}

/* Fail with the first differing offset (assert_memory_equal is slow and
 * verbose on tens of megabytes). */
static void assert_bytes(const unsigned char *got, const unsigned char *want,
			 size_t len, uint64_t task)
{
	if (len == 0 || memcmp(got, want, len) == 0)
		return;
	size_t i = 0;
	while (got[i] == want[i])
		i++;
	fail_msg("task %llu: payload differs at byte %zu of %zu (0x%02x, want 0x%02x)",
		 (unsigned long long)task, i, len, got[i], want[i]);
}

/* ---- the frames a test expects ---- */

struct frame_spec {
	enum wire_type type;
	uint64_t task;
	size_t length;
	const char *message; /* WIRE_FAILED: payload is this text (no NUL) */
};

static const void *spec_payload(const struct frame_spec *f)
{
	return f->message ? (const void *)f->message : (const void *)payload_of(f->task);
}

static size_t spec_length(const struct frame_spec *f)
{
	return f->message ? strlen(f->message) : f->length;
}

static void check_frame(const struct wire_frame *got, const struct frame_spec *want)
{
	assert_int_equal(got->type, want->type);
	assert_int_equal(got->task, want->task);
	assert_int_equal(got->length, spec_length(want));
	if (got->length > 0)
		assert_non_null(got->payload);
	assert_bytes(got->payload, spec_payload(want), got->length, want->task);
}

/* Encode frames by hand from the documented layout (header fields in host
 * order, then the payload) into a malloc'd buffer. */
static unsigned char *encode(const struct frame_spec *f, size_t n, size_t *total)
{
	size_t size = 0;
	for (size_t i = 0; i < n; i++)
		size += sizeof(struct wire_header) + spec_length(&f[i]);
	unsigned char *buf = malloc(size ? size : 1);
	assert_non_null(buf);
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		struct wire_header h = { f[i].type, WIRE_MAGIC, f[i].task, spec_length(&f[i]), 0 };
		h.checksum = wire_checksum(&h, spec_payload(&f[i]), spec_length(&f[i]));
		memcpy(buf + at, &h, sizeof h);
		at += sizeof h;
		memcpy(buf + at, spec_payload(&f[i]), spec_length(&f[i]));
		at += spec_length(&f[i]);
	}
	*total = size;
	return buf;
}

/* ---- a forked writer child, cleaned up even when an assertion fails ---- */

static pid_t child_pid = -1;
static int child_fd = -1;

static int teardown_child(void **state)
{
	(void)state;
	if (child_fd >= 0) {
		close(child_fd);
		child_fd = -1;
	}
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		while (waitpid(child_pid, NULL, 0) < 0 && errno == EINTR)
			;
		child_pid = -1;
	}
	return 0;
}

static void child_write(int fd, const struct frame_spec *f, size_t n)
{
	struct wire_writer w;

	if (wire_writer_init(&w, fd, WRITER_CAP) != 0)
		_exit(CHILD_INIT);
	for (size_t i = 0; i < n; i++)
		if (wire_put(&w, f[i].type, f[i].task, spec_payload(&f[i]),
			     spec_length(&f[i])) != 0)
			_exit(CHILD_PUT);
	if (wire_flush(&w) != 0)
		_exit(CHILD_FLUSH);
	wire_writer_free(&w);
	_exit(CHILD_OK);
}

/* Fork a child that writes frames f[0..n) with a 64 KiB wire_writer;
 * the read end is left in child_fd. */
static void start_writer(const struct frame_spec *f, size_t n)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child_write(p[1], f, n);
	}
	close(p[1]);
	child_pid = pid;
	child_fd = p[0];
}

static void wait_writer_ok(void)
{
	int status;
	pid_t r;

	while ((r = waitpid(child_pid, &status, 0)) < 0 && errno == EINTR)
		;
	assert_int_equal(r, child_pid);
	child_pid = -1;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), CHILD_OK);
}

/* Read frames from child_fd until end of file with a reader of initial
 * capacity `cap`, checking each against f[0..n) in order. */
static void read_and_check(const struct frame_spec *f, size_t n, size_t cap)
{
	struct wire_reader r;
	struct wire_frame got;
	size_t seen = 0;
	long nread;
	int rc;

	assert_int_equal(wire_reader_init(&r, cap), 0);
	while ((nread = wire_reader_fill(&r, child_fd)) != 0) {
		assert_true(nread > 0);
		while ((rc = wire_reader_next(&r, &got)) == 1) {
			assert_true(seen < n);
			check_frame(&got, &f[seen]);
			seen++;
		}
		assert_int_equal(rc, 0);
	}
	assert_int_equal(wire_reader_next(&r, &got), 0);
	assert_int_equal(seen, n);
	assert_int_equal(wire_reader_pending(&r), 0);
	wire_reader_free(&r);
	assert_null(r.buf);
}

static void round_trip(const struct frame_spec *f, size_t n, size_t reader_cap)
{
	size_t biggest = 0;
	for (size_t i = 0; i < n; i++)
		if (f[i].length > biggest)
			biggest = f[i].length;
	pattern_ensure(biggest);
	start_writer(f, n);
	read_and_check(f, n, reader_cap);
	close(child_fd);
	child_fd = -1;
	wait_writer_ok();
}

/* ---- round trips through a pipe ---- */

static const size_t sizes[] = {
	0, 1, 23, 24, 4095, 65536, 1 * MIB, 64 * MIB,
	/* around the writer's buffer: exactly fills it, one byte over */
	WRITER_CAP - sizeof(struct wire_header), WRITER_CAP - sizeof(struct wire_header) + 1,
};

/* One frame of the given size, between two small frames, so a frame that
 * bypasses the writer's buffer must still come out in order. */
static void test_round_trip_size(void **state)
{
	size_t size = *(const size_t *)*state;
	struct frame_spec f[] = {
		{ WIRE_RESULT, 7, 5, NULL },
		{ WIRE_RESULT, 0x123456789abcdefull, size, NULL },
		{ WIRE_RESULT, 9, 3, NULL },
	};
	round_trip(f, 3, 4096);
}

/* Every size in one stream, read with a small initial reader buffer. */
static void test_round_trip_all_sizes_one_stream(void **state)
{
	(void)state;
	struct frame_spec f[2 * sizeof sizes / sizeof sizes[0]];
	size_t n = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		f[n++] = (struct frame_spec){ WIRE_RESULT, 100 + i, sizes[i], NULL };
		f[n++] = (struct frame_spec){ WIRE_RESULT, 200 + i, sizes[i] % 97, NULL };
	}
	round_trip(f, n, 64);
}

/* Many small frames: the writer batches them into few writes, the reader
 * splits frames that straddle read boundaries. */
static void test_round_trip_many_small(void **state)
{
	(void)state;
	enum { N = 5000 };
	struct frame_spec *f = calloc(N, sizeof *f);
	assert_non_null(f);
	uint32_t s = 42;
	for (size_t i = 0; i < N; i++)
		f[i] = (struct frame_spec){ WIRE_RESULT, i, xorshift32(&s) % 300, NULL };
	round_trip(f, N, 1000);
	free(f);
}

static void test_round_trip_failed_frame(void **state)
{
	(void)state;
	struct frame_spec f[] = {
		{ WIRE_RESULT, 0, 10, NULL },
		{ WIRE_FAILED, 1, 0, "cannot read 'x.csv': No such file or directory" },
		{ WIRE_FAILED, 2, 0, "" },
		{ WIRE_RESULT, 3, 0, NULL },
	};
	round_trip(f, 4, 4096);
}

/* Bytes waiting in a pipe. */
static size_t pipe_bytes(int fd)
{
	int n = -1;
	assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
	assert_true(n >= 0);
	return (size_t)n;
}

/* Frames written while a timer signal keeps interrupting the writer (no
 * SA_RESTART), so writes come back short and must be finished. */
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void start_interrupted_writer(const struct frame_spec *f, size_t n)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		struct itimerval every = { { 0, 50 }, { 0, 50 } };
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sigemptyset(&sa.sa_mask);
		close(p[0]);
		if (sigaction(SIGALRM, &sa, NULL) != 0 ||
		    setitimer(ITIMER_REAL, &every, NULL) != 0)
			_exit(CHILD_INIT);
		child_write(p[1], f, n);
	}
	close(p[1]);
	child_pid = pid;
	child_fd = p[0];
}

static void test_round_trip_interrupted_writer(void **state)
{
	(void)state;
	struct frame_spec f[64];
	size_t n = 0;
	for (size_t i = 0; i < 16; i++) {
		f[n++] = (struct frame_spec){ WIRE_RESULT, n, 4 * MIB - i * 4099, NULL };
		f[n++] = (struct frame_spec){ WIRE_RESULT, n, 70 * KIB + i, NULL };
		f[n++] = (struct frame_spec){ WIRE_RESULT, n, i * 3, NULL };
		f[n++] = (struct frame_spec){ WIRE_FAILED, n, 0, "interrupted" };
	}
	pattern_ensure(4 * MIB);
	start_interrupted_writer(f, n);
	read_and_check(f, n, 4096);
	close(child_fd);
	child_fd = -1;
	wait_writer_ok();
}

/*
 * A frame's header itself cut short: the pipe is filled so that exactly 10
 * bytes fit (the kernel merges the first 10 header bytes into the last,
 * partly filled page), then the parent interrupts the blocked writev with
 * a signal, so it returns 10 and the writer must finish the header.
 */
static volatile sig_atomic_t *usr1_seen; /* in memory shared with the child */

static void on_usr1(int sig)
{
	(void)sig;
	*usr1_seen = 1;
}

static void test_writer_short_header_write(void **state)
{
	(void)state;
	int p[2];
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* header + payload = 32 pages + 10: the first writev merges 10 bytes */
	struct frame_spec f[] = {
		{ WIRE_RESULT, 77, 32 * page + 10 - sizeof(struct wire_header), NULL },
		{ WIRE_RESULT, 78, 5, NULL },
	};

	pattern_ensure(f[0].length);
	void *shared = mmap(NULL, sizeof *usr1_seen, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED);
	usr1_seen = shared;
	*usr1_seen = 0;
	assert_int_equal(pipe(p), 0);
	int cap = fcntl(p[1], F_GETPIPE_SZ);
	assert_true(cap >= (int)page);
	size_t filler = (size_t)cap - 10;
	unsigned char *junk = calloc(filler, 1);
	assert_non_null(junk);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_usr1; /* no SA_RESTART */
		sigemptyset(&sa.sa_mask);
		close(p[0]);
		if (sigaction(SIGUSR1, &sa, NULL) != 0 ||
		    write(p[1], junk, filler) != (ssize_t)filler)
			_exit(CHILD_INIT);
		struct wire_writer w;
		if (wire_writer_init(&w, p[1], WRITER_CAP) != 0)
			_exit(CHILD_INIT);
		for (size_t i = 0; i < 2; i++)
			if (wire_put(&w, f[i].type, f[i].task, spec_payload(&f[i]), f[i].length) != 0)
				_exit(CHILD_PUT);
		if (wire_flush(&w) != 0)
			_exit(CHILD_FLUSH);
		_exit(*usr1_seen ? CHILD_OK : CHILD_NOSIG);
	}
	close(p[1]);
	child_pid = pid;
	child_fd = p[0];
	/* wait for the pipe to be full: filler + 10 header bytes */
	for (int tries = 0; pipe_bytes(p[0]) < (size_t)cap; tries++) {
		assert_true(tries < 5000);
		usleep(1000);
	}
	assert_int_equal(pipe_bytes(p[0]), (size_t)cap);
	usleep(2000);
	assert_int_equal(kill(pid, SIGUSR1), 0);
	/* the handler runs once writev has returned its 10 bytes; read only
	 * then, or the writer would go on with the room the read makes */
	for (int tries = 0; !*usr1_seen; tries++) {
		assert_true(tries < 5000);
		usleep(1000);
	}
	size_t got = 0;
	while (got < filler) {
		ssize_t n = read(p[0], junk, filler - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	free(junk);
	read_and_check(f, 2, 4096);
	close(child_fd);
	child_fd = -1;
	wait_writer_ok();
	munmap(shared, sizeof *usr1_seen);
	usr1_seen = NULL;
}

/* ---- the writer ---- */

/* The bytes wire_put sends are exactly the documented layout. */
static void test_writer_layout(void **state)
{
	(void)state;
	int p[2];
	struct wire_writer w;
	struct frame_spec f[] = {
		{ WIRE_RESULT, 0x0102030405060708ull, 31, NULL },
		{ WIRE_FAILED, 3, 0, "boom" },
		{ WIRE_RESULT, 4, 0, NULL },
	};
	size_t total;

	pattern_ensure(0);
	unsigned char *want = encode(f, 3, &total);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(wire_writer_init(&w, p[1], 256), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(wire_put(&w, f[i].type, f[i].task, spec_payload(&f[i]),
					  spec_length(&f[i])), 0);
	assert_int_equal(wire_flush(&w), 0);
	assert_int_equal(pipe_bytes(p[0]), total);
	unsigned char *got = malloc(total);
	assert_non_null(got);
	assert_int_equal(read(p[0], got, total), (ssize_t)total);
	assert_memory_equal(got, want, total);
	free(got);
	free(want);
	wire_writer_free(&w);
	close(p[0]);
	close(p[1]);
}

/* Small frames wait in the buffer until flushed; a frame larger than the
 * buffer first flushes what is queued, then goes out at once. */
static void test_writer_buffering(void **state)
{
	(void)state;
	int p[2];
	struct wire_writer w;
	const size_t hdr = sizeof(struct wire_header);

	pattern_ensure(0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(wire_writer_init(&w, p[1], 100), 0);
	assert_int_equal(wire_put(&w, WIRE_RESULT, 0, payload_of(0), 10), 0);
	assert_int_equal(pipe_bytes(p[0]), 0);
	assert_int_equal(wire_put(&w, WIRE_RESULT, 1, payload_of(1), 20), 0);
	assert_int_equal(pipe_bytes(p[0]), 0);
	/* 34 + 44 queued; 34 more does not fit: the queue goes out first */
	assert_int_equal(wire_put(&w, WIRE_RESULT, 2, payload_of(2), 10), 0);
	assert_int_equal(pipe_bytes(p[0]), 2 * hdr + 30);
	/* larger than the whole buffer: queue flushed, then this frame */
	assert_int_equal(wire_put(&w, WIRE_RESULT, 3, payload_of(3), 500), 0);
	assert_int_equal(pipe_bytes(p[0]), 4 * hdr + 540);
	assert_int_equal(wire_flush(&w), 0);
	assert_int_equal(wire_flush(&w), 0); /* nothing queued: no-op */
	assert_int_equal(pipe_bytes(p[0]), 4 * hdr + 540);
	close(p[1]);

	struct frame_spec f[] = {
		{ WIRE_RESULT, 0, 10, NULL }, { WIRE_RESULT, 1, 20, NULL },
		{ WIRE_RESULT, 2, 10, NULL }, { WIRE_RESULT, 3, 500, NULL },
	};
	child_fd = p[0];
	read_and_check(f, 4, 64);
	close(child_fd);
	child_fd = -1;
	wire_writer_free(&w);
	assert_null(w.buf);
}

/* A write error (EPIPE: no reader) comes back as -1 with errno. */
static void test_writer_epipe(void **state)
{
	(void)state;
	int p[2];
	struct wire_writer w;
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);

	pattern_ensure(0);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(wire_writer_init(&w, p[1], 128), 0);
	assert_int_equal(wire_put(&w, WIRE_RESULT, 0, payload_of(0), 8), 0); /* queued */
	errno = 0;
	assert_int_equal(wire_flush(&w), -1);
	assert_int_equal(errno, EPIPE);
	errno = 0;
	assert_int_equal(wire_put(&w, WIRE_RESULT, 1, payload_of(1), 1000), -1);
	assert_int_equal(errno, EPIPE);
	wire_writer_free(&w);
	close(p[1]);
	signal(SIGPIPE, old);
}

/* ---- partial reads ---- */

/* Feed `stream` into a pipe in chunks (sizes from `next_chunk`), calling
 * wire_reader_fill and draining wire_reader_next after every chunk, and
 * check frames come out whole, in order, with pending = the bytes of the
 * frame in progress. */
static void dribble(const struct frame_spec *f, size_t n, size_t reader_cap,
		    size_t (*next_chunk)(uint32_t *), uint32_t seed)
{
	int p[2];
	size_t total, sent = 0, received = 0, consumed = 0, seen = 0;
	struct wire_reader r;
	struct wire_frame got;
	int rc;

	unsigned char *stream = encode(f, n, &total);
	assert_int_equal(pipe(p), 0);
	child_fd = p[0];
	assert_int_equal(wire_reader_init(&r, reader_cap), 0);
	while (sent < total) {
		size_t chunk = next_chunk(&seed);
		if (chunk > total - sent)
			chunk = total - sent;
		assert_int_equal(write(p[1], stream + sent, chunk), (ssize_t)chunk);
		sent += chunk;
		while (received < sent) {
			long got_bytes = wire_reader_fill(&r, p[0]);
			assert_true(got_bytes > 0);
			received += (size_t)got_bytes;
			assert_true(received <= sent);
			while ((rc = wire_reader_next(&r, &got)) == 1) {
				assert_true(seen < n);
				check_frame(&got, &f[seen]);
				consumed += sizeof(struct wire_header) + got.length;
				seen++;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(wire_reader_pending(&r), received - consumed);
			/* a whole frame never stays pending */
			if (seen < n)
				assert_true(received - consumed <
					    sizeof(struct wire_header) + spec_length(&f[seen]));
			else
				assert_int_equal(received, consumed);
		}
	}
	assert_int_equal(seen, n);
	assert_int_equal(consumed, total);
	assert_int_equal(wire_reader_pending(&r), 0);
	wire_reader_free(&r);
	free(stream);
	close(p[1]);
	close(p[0]);
	child_fd = -1;
}

static size_t one_byte(uint32_t *seed)
{
	(void)seed;
	return 1;
}

static size_t random_chunk(uint32_t *seed)
{
	return 1 + xorshift32(seed) % 3000;
}

static const struct frame_spec mixed[] = {
	{ WIRE_RESULT, 0, 0, NULL },
	{ WIRE_RESULT, 1, 1, NULL },
	{ WIRE_RESULT, 2, 23, NULL },
	{ WIRE_FAILED, 3, 0, "task 3 failed: division by zero" },
	{ WIRE_RESULT, 4, 24, NULL },
	{ WIRE_RESULT, 5, 3000, NULL }, /* larger than the reader's buffer */
	{ WIRE_RESULT, UINT64_MAX, 0, NULL },
	{ WIRE_RESULT, 0x100000007ull, 25, NULL },
	{ WIRE_RESULT, 8, 4095, NULL },
};

static void test_dribble_one_byte(void **state)
{
	(void)state;
	pattern_ensure(0);
	dribble(mixed, sizeof mixed / sizeof mixed[0], 32, one_byte, 0);
}

static void test_dribble_one_byte_big_buffer(void **state)
{
	(void)state;
	pattern_ensure(0);
	dribble(mixed, sizeof mixed / sizeof mixed[0], 64 * KIB, one_byte, 0);
}

static void test_dribble_random_chunks(void **state)
{
	(void)state;
	enum { N = 400 };
	struct frame_spec *f = calloc(N, sizeof *f);
	assert_non_null(f);
	uint32_t s = 2024;
	pattern_ensure(0);
	for (size_t i = 0; i < N; i++) {
		uint32_t v = xorshift32(&s);
		size_t len = v % 8 == 0 ? v % 4000 : v % 60;
		f[i] = (struct frame_spec){ WIRE_RESULT, i, len, NULL };
		if (v % 13 == 0)
			f[i] = (struct frame_spec){ WIRE_FAILED, i, 0, "worker said no" };
	}
	dribble(f, N, 48, random_chunk, 7);
	dribble(f, N, 4096, random_chunk, 99);
	free(f);
}

/* An empty non-blocking pipe: -1 with EAGAIN, nothing pending. */
static void test_fill_eagain(void **state)
{
	(void)state;
	int p[2];
	struct wire_reader r;
	struct wire_frame got;

	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(wire_reader_init(&r, 64), 0);
	errno = 0;
	assert_int_equal(wire_reader_fill(&r, p[0]), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(wire_reader_pending(&r), 0);
	assert_int_equal(wire_reader_next(&r, &got), 0);
	wire_reader_free(&r);
	close(p[0]);
	close(p[1]);
}

/* ---- end of file mid-frame ---- */

/* Write the first `cut` bytes of the frames, close, read to EOF: the
 * complete frames come out, then no frame and `cut - complete` pending. */
static void eof_after(size_t cut, size_t want_frames, size_t want_pending)
{
	static const struct frame_spec f[] = {
		{ WIRE_RESULT, 10, 40, NULL },
		{ WIRE_RESULT, 11, 100, NULL },
	};
	size_t total, seen = 0;
	int p[2];
	struct wire_reader r;
	struct wire_frame got;
	long n;

	pattern_ensure(0);
	unsigned char *stream = encode(f, 2, &total);
	assert_true(cut <= total);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], stream, cut), (ssize_t)cut);
	close(p[1]);
	assert_int_equal(wire_reader_init(&r, 32), 0);
	while ((n = wire_reader_fill(&r, p[0])) > 0)
		while (wire_reader_next(&r, &got) == 1)
			check_frame(&got, &f[seen++]);
	assert_int_equal(n, 0);
	assert_int_equal(wire_reader_next(&r, &got), 0);
	assert_int_equal(seen, want_frames);
	assert_int_equal(wire_reader_pending(&r), want_pending);
	/* EOF again: still nothing, still pending */
	assert_int_equal(wire_reader_fill(&r, p[0]), 0);
	assert_int_equal(wire_reader_next(&r, &got), 0);
	assert_int_equal(wire_reader_pending(&r), want_pending);
	wire_reader_free(&r);
	free(stream);
	close(p[0]);
}

/* The header's size (32 bytes: four fields and the checksum). */
#define HDR sizeof(struct wire_header)

static void test_eof_mid_payload(void **state)
{
	(void)state;
	eof_after(HDR + 40 + HDR + 60, 1, HDR + 60);
}

static void test_eof_mid_header(void **state)
{
	(void)state;
	eof_after(HDR + 40 + 10, 1, 10);
	eof_after(5, 0, 5);
	eof_after(HDR, 0, HDR); /* a header with no payload yet */
}

static void test_eof_on_boundary(void **state)
{
	(void)state;
	eof_after(HDR + 40, 1, 0);
	eof_after(HDR + 40 + HDR + 100, 2, 0);
	eof_after(0, 0, 0);
}

/* ---- corrupt headers ---- */

/* Feed raw bytes (a good frame, then `bad`) and expect the good frame,
 * then -1. */
/* A good frame, then the header `bad` (with a checksum that holds where
 * its 7-byte payload is whole, so only the field under test is wrong):
 * the first decodes, then the reader says corrupt, and stays so. */
static void expect_corrupt(const struct wire_header *given)
{
	struct frame_spec good = { WIRE_RESULT, 1, 17, NULL };
	struct wire_header fixed = *given;
	const struct wire_header *bad = &fixed;

	if (fixed.length == 7)
		fixed.checksum = wire_checksum(&fixed, "payload", 7);
	size_t total;
	int p[2];
	struct wire_reader r;
	struct wire_frame got;

	pattern_ensure(0);
	unsigned char *stream = encode(&good, 1, &total);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], stream, total), (ssize_t)total);
	assert_int_equal(write(p[1], bad, sizeof *bad), (ssize_t)sizeof *bad);
	assert_int_equal(write(p[1], "payload", 7), 7);
	close(p[1]);
	assert_int_equal(wire_reader_init(&r, 4096), 0);
	assert_true(wire_reader_fill(&r, p[0]) > 0);
	assert_int_equal(wire_reader_next(&r, &got), 1);
	check_frame(&got, &good);
	assert_int_equal(wire_reader_next(&r, &got), -1);
	assert_int_equal(wire_reader_next(&r, &got), -1); /* stays corrupt */
	wire_reader_free(&r);
	free(stream);
	close(p[0]);
}

static void test_corrupt_bad_magic(void **state)
{
	(void)state;
	struct wire_header h = { WIRE_RESULT, WIRE_MAGIC ^ 1u, 2, 7, 0 };
	expect_corrupt(&h);
	h.magic = 0;
	expect_corrupt(&h);
	h.magic = __builtin_bswap32(WIRE_MAGIC); /* other byte order */
	expect_corrupt(&h);
}

static void test_corrupt_bad_type(void **state)
{
	(void)state;
	struct wire_header h = { 0, WIRE_MAGIC, 2, 7, 0 };
	expect_corrupt(&h);
	h.type = WIRE_TYPE_MAX + 1;
	expect_corrupt(&h);
	h.type = 0xffffffffu;
	expect_corrupt(&h);
}

static void test_corrupt_length(void **state)
{
	(void)state;
	struct wire_header h = { WIRE_RESULT, WIRE_MAGIC, 2, WIRE_MAX_PAYLOAD + 1, 0 };
	expect_corrupt(&h);
	h.length = UINT64_MAX;
	expect_corrupt(&h);
}

/* A corrupt header is only recognised once it is complete: before that,
 * wire_reader_next just asks for more bytes. */
static void test_corrupt_partial_header(void **state)
{
	(void)state;
	struct wire_header h = { 9, 0xdeadbeefu, 0, 0, 0 };
	struct wire_reader r;
	struct wire_frame got;
	int p[2];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(wire_reader_init(&r, 64), 0);
	for (size_t i = 0; i < sizeof h; i++) {
		assert_int_equal(write(p[1], (const char *)&h + i, 1), 1);
		assert_int_equal(wire_reader_fill(&r, p[0]), 1);
		assert_int_equal(wire_reader_next(&r, &got), i + 1 < sizeof h ? 0 : -1);
	}
	wire_reader_free(&r);
	close(p[0]);
	close(p[1]);
}

/* ---- checksums ---- */

/* A good frame, then the same frame with byte `at` xor `mask`, then a good
 * one: the first decodes, the damaged one fails its checksum (naming the
 * task its header says), byte by byte as well as at once. */
static void expect_checksum_fails(size_t at, unsigned char mask, uint64_t want_task)
{
	static const struct frame_spec f[] = {
		{ WIRE_RESULT, 1, 17, NULL },
		{ WIRE_RESULT, 2, 50, NULL },
		{ WIRE_RESULT, 3, 9, NULL },
	};
	size_t total, first = HDR + 17;
	int p[2];
	struct wire_reader r;
	struct wire_frame got;

	pattern_ensure(0);
	unsigned char *stream = encode(f, 3, &total);
	stream[first + at] ^= mask;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(wire_reader_init(&r, 16), 0);
	int frames = 0, rc = 0;
	/* One byte at a time: a partial damaged frame only asks for more. */
	for (size_t i = 0; i < total && rc >= 0; i++) {
		assert_int_equal(write(p[1], stream + i, 1), 1);
		assert_int_equal(wire_reader_fill(&r, p[0]), 1);
		while ((rc = wire_reader_next(&r, &got)) == 1)
			check_frame(&got, &f[frames++]);
		if (rc < 0)
			assert_int_equal(i, first + HDR + 50 - 1); /* at its last byte */
	}
	assert_int_equal(frames, 1);
	assert_int_equal(rc, -1);
	assert_int_equal(r.fault.kind, WIRE_BAD_CHECKSUM);
	assert_int_equal(r.fault.task, want_task);
	assert_int_equal(wire_reader_next(&r, &got), -1); /* not consumed */
	/* The same from memory. */
	struct wire_fault fault;
	assert_int_equal(wire_parse(stream, total, WIRE_MAX_PAYLOAD, &got, &fault), 1);
	assert_int_equal(wire_parse(stream + first, total - first, WIRE_MAX_PAYLOAD, &got,
				    &fault), -1);
	assert_int_equal(fault.kind, WIRE_BAD_CHECKSUM);
	wire_reader_free(&r);
	free(stream);
	close(p[0]);
	close(p[1]);
}

static void test_checksum_payload_byte(void **state)
{
	(void)state;
	expect_checksum_fails(HDR, 0x01, 2);      /* first payload byte */
	expect_checksum_fails(HDR + 25, 0x80, 2); /* a middle one */
	expect_checksum_fails(HDR + 49, 0xff, 2); /* the last */
}

static void test_checksum_header_byte(void **state)
{
	(void)state;
	/* The task field: the header stays plausible, the checksum catches it. */
	expect_checksum_fails(offsetof(struct wire_header, task), 0x04, 6);
	expect_checksum_fails(offsetof(struct wire_header, task) + 7, 0x10, 2 | (1ull << 60));
	/* The type, still a valid type (RESULT -> FAILED). */
	expect_checksum_fails(offsetof(struct wire_header, type), 0x03, 2);
}

static void test_checksum_field(void **state)
{
	(void)state;
	for (size_t i = 0; i < 8; i++)
		expect_checksum_fails(offsetof(struct wire_header, checksum) + i,
				      (unsigned char)(1u << i), 2);
}

/* Every single-bit flip of a frame: never a frame that decodes. */
static void test_checksum_every_bit(void **state)
{
	(void)state;
	static const struct frame_spec f = { WIRE_FAILED, 7, 0, "a failure message" };
	size_t total;
	struct wire_frame got;
	struct wire_fault fault;

	unsigned char *stream = encode(&f, 1, &total);
	assert_int_equal(wire_parse(stream, total, 1000, &got, &fault), 1);
	for (size_t bit = 0; bit < total * 8; bit++) {
		stream[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		/* -1, or 0 where a longer length now asks for more bytes */
		assert_true(wire_parse(stream, total, 1000, &got, &fault) <= 0);
		stream[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	assert_int_equal(wire_parse(stream, total, 1000, &got, &fault), 1);
	free(stream);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		{ "test_round_trip_size_0", test_round_trip_size, NULL, teardown_child, (void *)&sizes[0] },
		{ "test_round_trip_size_1", test_round_trip_size, NULL, teardown_child, (void *)&sizes[1] },
		{ "test_round_trip_size_23", test_round_trip_size, NULL, teardown_child, (void *)&sizes[2] },
		{ "test_round_trip_size_24", test_round_trip_size, NULL, teardown_child, (void *)&sizes[3] },
		{ "test_round_trip_size_4095", test_round_trip_size, NULL, teardown_child, (void *)&sizes[4] },
		{ "test_round_trip_size_64KiB", test_round_trip_size, NULL, teardown_child, (void *)&sizes[5] },
		{ "test_round_trip_size_1MiB", test_round_trip_size, NULL, teardown_child, (void *)&sizes[6] },
		{ "test_round_trip_size_64MiB", test_round_trip_size, NULL, teardown_child, (void *)&sizes[7] },
		{ "test_round_trip_size_64KiB_minus_header", test_round_trip_size, NULL, teardown_child, (void *)&sizes[8] },
		{ "test_round_trip_size_64KiB_minus_header_plus_1", test_round_trip_size, NULL, teardown_child, (void *)&sizes[9] },
		cmocka_unit_test_teardown(test_round_trip_all_sizes_one_stream, teardown_child),
		cmocka_unit_test_teardown(test_round_trip_many_small, teardown_child),
		cmocka_unit_test_teardown(test_round_trip_failed_frame, teardown_child),
		cmocka_unit_test_teardown(test_round_trip_interrupted_writer, teardown_child),
		cmocka_unit_test_teardown(test_writer_short_header_write, teardown_child),
		cmocka_unit_test(test_writer_layout),
		cmocka_unit_test_teardown(test_writer_buffering, teardown_child),
		cmocka_unit_test(test_writer_epipe),
		cmocka_unit_test_teardown(test_dribble_one_byte, teardown_child),
		cmocka_unit_test_teardown(test_dribble_one_byte_big_buffer, teardown_child),
		cmocka_unit_test_teardown(test_dribble_random_chunks, teardown_child),
		cmocka_unit_test(test_fill_eagain),
		cmocka_unit_test(test_eof_mid_payload),
		cmocka_unit_test(test_eof_mid_header),
		cmocka_unit_test(test_eof_on_boundary),
		cmocka_unit_test(test_corrupt_bad_magic),
		cmocka_unit_test(test_corrupt_bad_type),
		cmocka_unit_test(test_corrupt_length),
		cmocka_unit_test(test_corrupt_partial_header),
		cmocka_unit_test(test_checksum_payload_byte),
		cmocka_unit_test(test_checksum_header_byte),
		cmocka_unit_test(test_checksum_field),
		cmocka_unit_test(test_checksum_every_bit),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	free(pattern);
	return failed;
}
