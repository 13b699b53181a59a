/*
 * test_inputid.c - unit tests for runner/files/inputid.c and runid.c: an
 * input's content hash is cowrun.h's definition (block hashes of
 * COWRUN_INPUT_BLOCK bytes combined, seeded with the size) at every size
 * around the block and read-piece boundaries, on any number of threads and
 * on this one; a hash handed over by a workload is taken only for the file
 * in the state it was hashed in; identities compare as promised (spelling
 * and where-lines ignored by a merge, compared by a resume; an input that
 * changed named with what changed).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cowrun.h"
#include "files/inputid.h"
#include "files/runid.h"
#include "os/parallel.h"

/* cowrun.h's definition, spelled out. */
static uint64_t reference_hash(const unsigned char *data, size_t size)
{
	size_t nblocks = (size + COWRUN_INPUT_BLOCK - 1) / COWRUN_INPUT_BLOCK;
	uint64_t *block = calloc(nblocks + 1, sizeof *block);

	for (size_t i = 0; i < nblocks; i++) {
		size_t len = size - i * COWRUN_INPUT_BLOCK;
		block[i] = cowrun_hash64(data + i * COWRUN_INPUT_BLOCK,
					 len < COWRUN_INPUT_BLOCK ? len : COWRUN_INPUT_BLOCK, 0);
	}
	uint64_t h = cowrun_hash64(block, nblocks * sizeof *block, size);
	free(block);
	return h;
}

static void test_hash_is_the_definition(void **state)
{
	static const size_t sizes[] = {
		0, 1, 240, 241, (256 << 10) - 1, 256 << 10, (256 << 10) + 1,
		COWRUN_INPUT_BLOCK - 1, COWRUN_INPUT_BLOCK, COWRUN_INPUT_BLOCK + 1,
		2 * COWRUN_INPUT_BLOCK + 12345,
	};
	size_t max = 2 * COWRUN_INPUT_BLOCK + 12345;
	unsigned char *data = malloc(max);
	int fd = memfd_create("input", 0);

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < max; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, max), (ssize_t)max);
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		uint64_t want = reference_hash(data, sizes[s]), got = 0;
		for (unsigned threads = 1; threads <= 3; threads++) {
			setup_threads_set(threads);
			assert_int_equal(inputid_hash_fd(fd, sizes[s], 1, &got), 0);
			assert_true(got == want);
		}
		assert_int_equal(inputid_hash_fd(fd, sizes[s], 0, &got), 0);
		assert_true(got == want);
	}
	/* A file shorter than it was said to be: EAGAIN, never a hash. */
	uint64_t got;
	assert_int_equal(inputid_hash_fd(fd, max + 1, 0, &got), -1);
	close(fd);
	free(data);
}

static void test_reported_hash_only_for_that_state(void **state)
{
	char path[] = "/tmp/test_inputid.XXXXXX";
	int fd = mkstemp(path);
	struct inputid id;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc\n", 4), 4);
	inputid_forget_reported();
	cowrun_input_hash(fd, 0x1234);
	inputid_stat(&id, path);
	assert_int_equal(id.kind, INPUT_FILE);
	assert_true(inputid_take_reported(&id));
	assert_true(id.hash == 0x1234);
	/* Written again after it was hashed: that hash is not this file's. */
	assert_int_equal(write(fd, "d", 1), 1);
	inputid_stat(&id, path);
	assert_false(inputid_take_reported(&id));
	inputid_forget_reported();
	close(fd);
	unlink(path);
}

#define HEAD "cowrun results 5\ncowrun 0.3.0\nworkload w\nabi 3\nseed 0\ntasks 2\nnames 00000000000000ab\n"
#define ARGS "arg --input\narg-input 1\n"

static int check(const char *saved, const char *ours, int flags)
{
	return runid_check("merge", "x.res", saved, strlen(saved), ours, flags);
}

static void test_identities_compare(void **state)
{
	const char *a = HEAD "input 1 --input file 10 00000000000000aa\n"
		"input-at 1 1:2 3.000000000 /d/in.csv\n" ARGS;
	const char *moved = HEAD "input 1 --input file 10 00000000000000aa\n"
		"input-at 1 1:9 4.000000000 /e/in.csv\n" ARGS;
	const char *other = HEAD "input 1 --input file 10 00000000000000bb\n"
		"input-at 1 1:2 3.000000000 /d/in.csv\n" ARGS;
	const char *unknown = HEAD "input 1 --input file 10 -\n"
		"input-at 1 1:2 3.000000000 /d/in.csv\n" ARGS;

	(void)state;
	assert_int_equal(check(a, a, 0), 0);
	assert_int_equal(check(a, moved, 0), 0);            /* a merge: size and hash */
	assert_int_equal(check(a, moved, RUNID_RESUME), -1); /* a resume: where, too */
	assert_int_equal(check(a, other, 0), -1);
	assert_int_equal(check(a, other, RUNID_RESUME | RUNID_EARLY), -1);
	assert_int_equal(check(a, unknown, RUNID_RESUME | RUNID_EARLY), 0);
	/* Before the setup only an input is refused. */
	assert_int_equal(check(a, HEAD "input 1 --input file 10 -\n"
			       "input-at 1 1:2 3.000000000 /d/in.csv\narg --input\narg-input 1\narg x\n",
			       RUNID_RESUME | RUNID_EARLY), 0);
}

/* runid_check()'s verdict, and its message into buf. */
static int check_said(const char *context, const char *saved, const char *ours, int flags,
		      char *buf, size_t size)
{
	FILE *tmp = tmpfile();
	int saved_fd = dup(2), rc;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = runid_check(context, "x.res", saved, strlen(saved), ours, flags);
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(tmp);
	n = fread(buf, 1, size - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return rc;
}

/* A file the setup declares (cowrun_input) comes after the arguments'
 * inputs; before the setup it is not known yet, and those before it are
 * still compared. */
static void test_declared_input_known_after_setup(void **state)
{
	const char *in1 = "input 1 script file 10 00000000000000aa\n"
		"input-at 1 1:2 3.000000000 /d/r.py\n";
	const char *in2 = "input 2 cowrun_input file 20 00000000000000cc\n"
		"input-at 2 1:5 3.000000000 /d/data.csv\n";
	const char *args = "arg r.py\narg-input 1\n";
	char saved[1024], early[1024], changed[1024], after[1024], other[1024], said[1024];

	(void)state;
	snprintf(saved, sizeof saved, HEAD "%s%s%s", in1, in2, args);
	snprintf(early, sizeof early, HEAD "%s%s", in1, args);
	snprintf(changed, sizeof changed, HEAD "input 1 script file 11 -\n"
		 "input-at 1 1:2 4.000000000 /d/r.py\n%s", args);
	snprintf(after, sizeof after, HEAD "%s%s%s", in1, in2, args);
	snprintf(other, sizeof other, HEAD "%sinput 2 cowrun_input file 21 00000000000000dd\n"
		 "input-at 2 1:5 4.000000000 /d/data.csv\n%s", in1, args);
	assert_int_equal(check(saved, early, RUNID_RESUME | RUNID_EARLY), 0);
	assert_int_equal(check_said("--resume", saved, changed, RUNID_RESUME | RUNID_EARLY, said,
				    sizeof said), -1);
	assert_non_null(strstr(said, "input '/d/r.py' (script) changed"));
	assert_int_equal(check(saved, after, RUNID_RESUME), 0);
	assert_int_equal(check_said("--resume", saved, other, RUNID_RESUME, said, sizeof said), -1);
	assert_non_null(strstr(said, "input '/d/data.csv' (cowrun_input) changed"));
}

/* Results of another workload ABI (an older cowrun) are refused, the
 * upgrade named. */
static void test_abi_upgrade_named(void **state)
{
	const char *old = "cowrun results 5\ncowrun 0.4.0\nworkload w\nabi 3\nseed 0\ntasks 2\narg x\n";
	const char *now = "cowrun results 5\ncowrun 0.5.1\nworkload w\nabi 4\nseed 0\ntasks 2\narg x\n";
	char said[1024];

	(void)state;
	assert_int_equal(check_said("merge", old, now, 0, said, sizeof said), -1);
	assert_non_null(strstr(said, "cowrun 0.4.0, ABI 3"));
	assert_non_null(strstr(said, "results do not cross a workload ABI upgrade (3 to 4): save "
				     "them again with this cowrun"));
	assert_int_equal(check_said("--resume", old, now, RUNID_RESUME, said, sizeof said), -1);
	assert_non_null(strstr(said, "(3 to 4): run the batch again without --resume"));
}

/* Another --seed is refused first, even before the setup, naming both
 * seeds; as many tasks of other names after the setup only. */
static void test_seed_and_names(void **state)
{
	const char *base = "cowrun results 5\ncowrun 0.5.1\nworkload w\nabi 4\n";
	char saved[512], seven[512], names[512], early[512], early7[512], said[1024];

	(void)state;
	snprintf(saved, sizeof saved, "%sseed 0\ntasks 2\nnames 00000000000000ab\narg x\n", base);
	snprintf(seven, sizeof seven, "%sseed 7\ntasks 2\nnames 00000000000000ab\narg x\n", base);
	snprintf(names, sizeof names, "%sseed 0\ntasks 2\nnames 00000000000000cd\narg x\n", base);
	snprintf(early, sizeof early, "%sseed 0\ntasks 0\narg x\n", base);
	snprintf(early7, sizeof early7, "%sseed 7\ntasks 0\narg x\n", base);
	assert_int_equal(check(saved, saved, RUNID_RESUME), 0);
	assert_int_equal(check_said("merge", saved, seven, 0, said, sizeof said), -1);
	assert_non_null(strstr(said, "merge: 'x.res' was saved with --seed 0, not this run's "
				     "--seed 7: its tasks drew other numbers: merge with --seed 0"));
	assert_int_equal(check(saved, early, RUNID_RESUME | RUNID_EARLY), 0);
	assert_int_equal(check_said("--resume", saved, early7, RUNID_RESUME | RUNID_EARLY, said,
				    sizeof said), -1);
	assert_non_null(strstr(said, "--resume: 'x.res' was saved with --seed 0, not this run's "
				     "--seed 7: resume with --seed 0, or run again without --resume"));
	assert_int_equal(check_said("merge", saved, names, 0, said, sizeof said), -1);
	assert_non_null(strstr(said, "was saved for other task names than this run's (2 tasks; "
				     "names hash 00000000000000ab there, 00000000000000cd here"));
	assert_int_equal(check_said("--resume", saved, names, RUNID_RESUME, said, sizeof said), -1);
	assert_non_null(strstr(said, "): run again without --resume"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_is_the_definition),
		cmocka_unit_test(test_reported_hash_only_for_that_state),
		cmocka_unit_test(test_identities_compare),
		cmocka_unit_test(test_declared_input_known_after_setup),
		cmocka_unit_test(test_abi_upgrade_named),
		cmocka_unit_test(test_seed_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
