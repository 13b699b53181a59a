/*
 * test_commit.c - committing a file (os/util.h's commit_*): the whole new
 * file under its final name on success, in place of what was there; on
 * any failure nothing left under the temporary name, the final name
 * untouched, errno the failure's.
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
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os/util.h"
#include "os/fileops.h"
#include "scratch.h"

struct fixture {
	char dir[PATH_MAX];
	int dirfd;
};

static int setup(void **state)
{
	static struct fixture f;

	if (scratch_make(f.dir, sizeof f.dir, "commit") != 0)
		return -1;
	f.dirfd = open(f.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = &f;
	return f.dirfd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->dirfd);
	return scratch_remove(f->dir);
}

/* How many names the directory holds, "." and ".." aside. */
static int entries(int dirfd)
{
	DIR *d = fdopendir(dup(dirfd));
	const struct dirent *e;
	int n = 0;

	assert_non_null(d);
	rewinddir(d);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* The file's whole text, relative to dirfd. */
static const char *text_of(int dirfd, const char *name)
{
	static char buf[256];
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n >= 0 ? buf : NULL;
}

/* A new temporary file beside `name` in dirfd, its name in temp. */
static int new_temp(int dirfd, const char *name, char *temp, size_t size)
{
	assert_int_equal(temp_name_beside(temp, size, name), 0);
	int fd = create_new_at(dirfd, temp, O_WRONLY, 0666);
	assert_true(fd >= 0);
	return fd;
}

static void new_file_replaces_the_old(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(commit_new_file_at(f->dirfd, "pid", "1\n", 2, 0644, 0), 0);
	assert_int_equal(commit_new_file_at(f->dirfd, "pid", "22\n", 3, 0644, COMMIT_FSYNC), 0);
	assert_string_equal(text_of(f->dirfd, "pid"), "22\n");
	assert_int_equal(entries(f->dirfd), 1);
	assert_int_equal(unlinkat(f->dirfd, "pid", 0), 0);
}

static void fd_committed_relative_to_dirfd(void **state)
{
	struct fixture *f = *state;
	char temp[NAME_MAX + 64];
	int fd = new_temp(f->dirfd, "out", temp, sizeof temp);

	assert_int_equal(write_all(fd, "whole", 5), 0);
	assert_int_equal(commit_fd_at(f->dirfd, fd, temp, "out", COMMIT_FSYNC), 0);
	assert_string_equal(text_of(f->dirfd, "out"), "whole");
	assert_int_equal(entries(f->dirfd), 1);
	assert_int_equal(unlinkat(f->dirfd, "out", 0), 0);
}

/* A directory under the final name: the rename fails, the temporary goes. */
static void failed_rename_leaves_no_temp(void **state)
{
	struct fixture *f = *state;
	char temp[NAME_MAX + 64];

	assert_int_equal(mkdirat(f->dirfd, "taken", 0755), 0);
	assert_int_equal(mkdirat(f->dirfd, "taken/inside", 0755), 0);
	int fd = new_temp(f->dirfd, "taken", temp, sizeof temp);
	assert_int_equal(commit_fd_at(f->dirfd, fd, temp, "taken", 0), -1);
	assert_true(errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST);
	assert_int_equal(entries(f->dirfd), 1);

	FILE *s = fdopen(new_temp(f->dirfd, "taken", temp, sizeof temp), "w");
	assert_non_null(s);
	fputs("text", s);
	assert_int_equal(commit_stream_at(f->dirfd, s, temp, "taken", COMMIT_FSYNC), -1);
	assert_int_equal(entries(f->dirfd), 1);

	assert_int_equal(commit_new_file_at(f->dirfd, "taken", "x", 1, 0644, 0), -1);
	assert_int_equal(entries(f->dirfd), 1);
	assert_int_equal(unlinkat(f->dirfd, "taken/inside", AT_REMOVEDIR), 0);
	assert_int_equal(unlinkat(f->dirfd, "taken", AT_REMOVEDIR), 0);
}

/* A stream whose buffered text cannot be written: not renamed, the final
 * name keeps what it had, errno says why. */
static void stream_write_error_not_committed(void **state)
{
	struct fixture *f = *state;
	char temp[NAME_MAX + 64];

	assert_int_equal(commit_new_file_at(f->dirfd, "kept", "old", 3, 0644, 0), 0);
	FILE *s = fdopen(new_temp(f->dirfd, "kept", temp, sizeof temp), "w");
	assert_non_null(s);
	fputs("new", s);
	int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_true(dup2(ro, fileno(s)) >= 0);   /* the flush now fails: EBADF */
	close(ro);
	assert_int_equal(commit_stream_at(f->dirfd, s, temp, "kept", 0), -1);
	assert_int_equal(errno, EBADF);
	assert_string_equal(text_of(f->dirfd, "kept"), "old");
	assert_int_equal(entries(f->dirfd), 1);
	assert_int_equal(unlinkat(f->dirfd, "kept", 0), 0);
}

/* commit_rename_at() alone: a failed rename removes the temporary. */
static void rename_alone_removes_on_failure(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(commit_new_file_at(f->dirfd, "t", "x", 1, 0644, 0), 0);
	assert_int_equal(mkdirat(f->dirfd, "d", 0755), 0);
	assert_int_equal(mkdirat(f->dirfd, "d/e", 0755), 0);
	assert_int_equal(commit_rename_at(f->dirfd, "t", "d"), -1);
	assert_int_equal(faccessat(f->dirfd, "t", F_OK, 0), -1);
	assert_int_equal(unlinkat(f->dirfd, "d/e", AT_REMOVEDIR), 0);
	assert_int_equal(unlinkat(f->dirfd, "d", AT_REMOVEDIR), 0);
	assert_int_equal(entries(f->dirfd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(new_file_replaces_the_old),
		cmocka_unit_test(fd_committed_relative_to_dirfd),
		cmocka_unit_test(failed_rename_leaves_no_temp),
		cmocka_unit_test(stream_write_error_not_committed),
		cmocka_unit_test(rename_alone_removes_on_failure),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
