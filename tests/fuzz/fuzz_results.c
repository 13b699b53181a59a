/*
 * fuzz_results.c - libFuzzer harness for reading saved results
 * (runner/files/results.c): results_load() into a batch (merge_load_file()), as
 * --merge does, and journal_load(), as --resume does, on a file holding
 * the fuzz input.
 *
 * The file is a memfd opened by its /proc/self/fd path.  The run's identity
 * is that of `cowrun selftest --tasks 4`, so files saved by real runs make
 * the seeds (corpus/results/).  The workload is a stand-in named selftest
 * whose merge() takes 8-byte records and refuses others.  Checks, besides
 * memory errors: a file loaded once cannot be loaded again into the same
 * batch if it held any task; every frame journal_load() hands over lies in
 * the file; the complete part it measures is no longer than the file; and
 * a file results_load() accepts round-trips: its identity and the records
 * it handed over, written again by wire_put() with an END frame, are the
 * input byte for byte (so every byte of an accepted file was checked).
 *
 * Build and run: make fuzz (see the Makefile).
 */
#define _GNU_SOURCE
#include "engine/batch.h"
#include "run/merge.h"
#include "files/results.h"
#include "engine/task.h"
#include "os/workmsg.h"
#include "files/wire.h"
#include "run/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NTASKS 4

static void fake_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "task-%06zu", k);
}

static int fake_merge(void *state, size_t k, const void *record, size_t len)
{
	(void)state;
	(void)record;
	if (len == 8)
		return 0;
	cowrun_error("task %zu: record of %zu bytes, expected 8", k, len);
	return -1;
}

static const struct cowrun_workload fake = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "selftest",
	.summary = "stand-in for the results fuzzer",
	.task_name = fake_name,
	.merge = fake_merge,
};

static char *identity;

struct journal_check {
	const uint8_t *data;
	size_t size;
	size_t frames;
};

static volatile unsigned char sink;

static int take(void *ctx, const struct wire_frame *f)
{
	struct journal_check *c = ctx;
	unsigned char sum = 0;

	if (f->type != WIRE_RESULT && f->type != WIRE_FAILED)
		abort();
	if (f->length > c->size)
		abort();
	for (size_t i = 0; i < f->length; i++)
		sum += f->payload[i]; /* every byte readable */
	sink = sum;
	c->frames++;
	return 0;
}

/* The records results_load() hands over, re-encoded as it goes. */
struct round_trip {
	struct wire_writer out;
	uint64_t frames;
};

static int re_encode(void *ctx, const struct wire_frame *f)
{
	struct round_trip *t = ctx;

	if (wire_put(&t->out, f->type, f->task, f->payload, f->length) != 0)
		abort();
	t->frames++;
	return 0;
}

/* An accepted file is exactly its identity, records and END frame. */
static void check_round_trip(const char *path, const uint8_t *data, size_t size)
{
	struct round_trip t = { .frames = 0 };
	int fd = memfd_create("again.res", MFD_CLOEXEC);

	if (fd < 0 || wire_writer_init(&t.out, fd, 1 << 12) != 0 ||
	    wire_put(&t.out, WIRE_IDENTITY, 0, identity, strlen(identity)) != 0)
		abort();
	if (results_load(path, identity, re_encode, &t) == 0) {
		if (wire_put(&t.out, WIRE_END, t.frames, NULL, 0) != 0 || wire_flush(&t.out) != 0)
			abort();
		off_t again = lseek(fd, 0, SEEK_END);
		unsigned char *copy = malloc(size + 1);
		if (again != (off_t)size || copy == NULL || pread(fd, copy, size, 0) != (ssize_t)size ||
		    memcmp(copy, data, size) != 0)
			abort(); /* accepted, yet not what its records say */
		free(copy);
	}
	wire_writer_free(&t.out);
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	workmsg_set_workload("selftest");
	/* The identity a real `cowrun selftest --tasks 4` saves: the default
	 * seed (0) and its task names. */
	uint64_t names = results_names_hash(&fake, NULL, NTASKS);
	identity = results_identity(COWRUN_VERSION, &fake, 0, "arg --tasks\narg 4\n", NTASKS,
				    &names, (struct results_context){ NULL, 0 });
	if (identity == NULL)
		abort();
	return 0;
}

/* Load the file into a fresh batch; then again, which must fail if the
 * file held a task. */
static void load_twice(const char *path)
{
	struct batch b = { 0 };

	b.workload = &fake;
	b.ntasks = NTASKS;
	b.outdir = "/nonexistent";
	if (batch_init(&b) != 0)
		abort();
	if (merge_load_file(&b, path, identity) == 0) {
		size_t pending = 0;
		for (size_t k = 0; k < NTASKS; k++)
			pending += batch_pending(&b, k) != 0;
		if (merge_load_file(&b, path, identity) == 0 && pending < NTASKS)
			abort(); /* the same tasks loaded twice */
	}
	batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	long long keep = -1;
	struct journal_check c = { data, size, 0 };

	int fd = memfd_create("fuzz.res", MFD_CLOEXEC);
	if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	load_twice(path);
	check_round_trip(path, data, size);
	if (journal_load(path, identity, 0, take, &c, &keep) == 0 &&
	    (keep < 0 || (size_t)keep > size))
		abort();
	close(fd);
	return 0;
}
