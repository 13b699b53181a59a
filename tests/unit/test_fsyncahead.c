/*
 * test_fsyncahead.c - unit tests for runner/os/fsyncahead.c: every queued
 * fsync ends once, with its tag and its outcome; the eventfd says so; no
 * thread runs before the first job, none is left after close; a full
 * queue and a descriptor fsync refuses are told apart from success.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "os/fsyncahead.h"

/* Threads of this process, as /proc/self/task lists them. */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A new file with a few bytes in it, open; unlinked at once. */
static int scratch_file(void)
{
	char path[] = "/tmp/test_fsyncahead.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, "report\n", 7), 7);
	return fd;
}

/* Collect until `want` jobs have ended; each tag once. */
static void collect(struct fsync_ahead *a, unsigned want, int *seen, int *errs_by_tag)
{
	unsigned got = 0;

	while (got < want) {
		uint64_t tags[4];
		int errs[4];
		unsigned n = fsync_ahead_ended(a, tags, errs, 4, 1);
		assert_true(n > 0);
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(seen[tags[i]], 0);
			seen[tags[i]] = 1;
			errs_by_tag[tags[i]] = errs[i];
		}
		got += n;
	}
}

static void every_job_ends_once_with_its_tag(void **state)
{
	(void)state;
	struct fsync_ahead *a = fsync_ahead_open(2, 32);
	int fds[20], seen[20] = { 0 }, errs[20];

	assert_non_null(a);
	assert_int_equal(thread_count(), 1);   /* none before the first job */
	for (int i = 0; i < 20; i++) {
		fds[i] = scratch_file();
		assert_int_equal(fsync_ahead_start(a, fds[i], (uint64_t)i), 1);
	}
	assert_int_equal(thread_count(), 3);
	struct pollfd p = { fsync_ahead_fd(a), POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 10000), 1);   /* the eventfd says one ended */
	collect(a, 20, seen, errs);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(errs[i], 0);
		close(fds[i]);
	}
	assert_int_equal(fsync_ahead_pending(a), 0);
	uint64_t tag;
	int err;
	assert_int_equal(fsync_ahead_ended(a, &tag, &err, 1, 1), 0);   /* nothing left to wait for */
	fsync_ahead_close(a);
	assert_int_equal(thread_count(), 1);
}

static void a_refused_fsync_comes_back_with_its_errno(void **state)
{
	(void)state;
	struct fsync_ahead *a = fsync_ahead_open(1, 4);
	int pipe_fds[2], seen[2] = { 0 }, errs[2];

	assert_int_equal(pipe(pipe_fds), 0);
	int fd = scratch_file();
	assert_int_equal(fsync_ahead_start(a, pipe_fds[0], 0), 1);   /* fsync(pipe): EINVAL */
	assert_int_equal(fsync_ahead_start(a, fd, 1), 1);
	collect(a, 2, seen, errs);
	assert_int_equal(errs[0], EINVAL);
	assert_int_equal(errs[1], 0);
	fsync_ahead_close(a);
	close(fd);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void a_full_queue_refuses_and_close_lets_jobs_end(void **state)
{
	(void)state;
	struct fsync_ahead *a = fsync_ahead_open(1, 3);
	int fds[4];

	for (int i = 0; i < 4; i++)
		fds[i] = scratch_file();
	for (int i = 0; i < 3; i++)
		assert_int_equal(fsync_ahead_start(a, fds[i], (uint64_t)i), 1);
	/* Queued or ended, none collected: no room for a fourth. */
	assert_int_equal(fsync_ahead_start(a, fds[3], 3), 0);
	assert_int_equal(fsync_ahead_pending(a), 3);
	fsync_ahead_close(a);   /* waits for the three, joins the thread */
	assert_int_equal(thread_count(), 1);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_job_ends_once_with_its_tag),
		cmocka_unit_test(a_refused_fsync_comes_back_with_its_errno),
		cmocka_unit_test(a_full_queue_refuses_and_close_lets_jobs_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
