/*
 * fileops.c - files and directories as cowrun names them: temporary names
 * beside the final one, files created new and committed, directories
 * opened, made and removed.  See fileops.h.
 */
#define _GNU_SOURCE
#include "fileops.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

const char *host_tag(void)
{
	static char tag[256];

	if (tag[0] != '\0')
		return tag;
	if (gethostname(tag, sizeof tag - 1) != 0 || tag[0] == '\0')
		snprintf(tag, sizeof tag, "localhost");
	for (char *c = tag; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			*c = '_';
	return tag;
}

void random_tag(char *out)
{
	uint64_t r = 0;

	/* getrandom() of 8 bytes never blocks once the pool is seeded and is
	 * never short; a failure (ENOSYS, a seccomp filter) falls back to the
	 * clock, still unknown to another process before it happens. */
	if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
		r = now_ns() ^ ((uint64_t)getpid() << 32);
	snprintf(out, 17, "%016llx", (unsigned long long)r);
}

int temp_name_beside(char *temp, size_t size, const char *path)
{
	char tag[17];

	random_tag(tag);
	int n = snprintf(temp, size, "%s.%s.%ld.%s.tmp", path, host_tag(), (long)getpid(), tag);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int create_new_at(int dirfd, const char *path, int flags, mode_t mode)
{
	return openat(dirfd, path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* The directory a path's last name is in: "a/b" -> "a", "b" -> ".",
 * "/b" -> "/".  Returns 0, or -1 (ENAMETOOLONG). */
static int directory_of(char *dir, size_t size, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);

	if (n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, slash == NULL ? "." : path, n);
	dir[n] = '\0';
	return 0;
}

int create_unnamed_beside(const char *path, int flags, mode_t mode)
{
	char dir[PATH_MAX];

	if (directory_of(dir, sizeof dir, path) != 0)
		return -1;
	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc link
	 * does not, but needs /proc. */
	if (access("/proc/self/fd", X_OK) != 0) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return open(dir, flags | O_TMPFILE | O_CLOEXEC, mode);
}

int name_unnamed(int fd, const char *path)
{
	char proc[64], temp[PATH_MAX];

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (temp_name_beside(temp, sizeof temp, path) != 0 ||
	    linkat(AT_FDCWD, proc, AT_FDCWD, temp, AT_SYMLINK_FOLLOW) != 0)
		return -1;
	return commit_rename_at(AT_FDCWD, temp, path);
}

int commit_rename_at(int dirfd, const char *temp, const char *path)
{
	if (renameat(dirfd, temp, dirfd, path) != 0) {
		int saved = errno;
		unlinkat(dirfd, temp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/* Remove temp after the failure `err`.  Returns -1 with
 * errno = err. */
static int commit_failed(int dirfd, const char *temp, int err)
{
	unlinkat(dirfd, temp, 0);   /* what was written is not kept */
	errno = err;
	return -1;
}

int commit_fd_at(int dirfd, int fd, const char *temp, const char *path, int flags)
{
	int err = (flags & COMMIT_FSYNC) && fsync(fd) != 0 ? errno : 0;

	if (close(fd) != 0 && err == 0)
		err = errno;
	return err != 0 ? commit_failed(dirfd, temp, err) : commit_rename_at(dirfd, temp, path);
}

int commit_stream_at(int dirfd, FILE *f, const char *temp, const char *path, int flags)
{
	int err = 0;

	if (fflush(f) != 0 || ferror(f))
		err = errno ? errno : EIO;
	if (err == 0 && (flags & COMMIT_FSYNC) && fsync(fileno(f)) != 0)
		err = errno;
	if (fclose(f) != 0 && err == 0)
		err = errno;
	return err != 0 ? commit_failed(dirfd, temp, err) : commit_rename_at(dirfd, temp, path);
}

int create_temp_beside_at(int dirfd, const char *path, char *temp, size_t size, mode_t mode)
{
	return temp_name_beside(temp, size, path) == 0 ? create_new_at(dirfd, temp, O_WRONLY, mode)
						       : -1;
}

int commit_new_file_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode,
		       int flags)
{
	char temp[PATH_MAX];
	int fd = create_temp_beside_at(dirfd, path, temp, sizeof temp, mode);

	if (fd < 0)
		return -1;   /* nothing of ours to remove */
	if (write_all(fd, data, size) != 0) {
		int err = errno;
		close(fd);
		return commit_failed(dirfd, temp, err);
	}
	return commit_fd_at(dirfd, fd, temp, path, flags);
}

int open_dir_nofollow(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int hold_standard_fds(void)
{
	int closed = 0;

	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		closed |= 1 << fd;
		/* Read-only: a write to it fails (EBADF) as it would on the
		 * closed descriptor, in this process and in those it hands
		 * the descriptor to (a served batch's leader). */
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0 && null != fd) {
			dup2(null, fd);
			close(null);
		}
	}
	return closed;
}

int absolute_path(const char *path, char *buf, size_t size)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL ||
	    (size_t)snprintf(buf, size, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd,
			     strncmp(path, "./", 2) == 0 ? path + 2 : path) >= size) {
		snprintf(buf, size, "%s", path);
		return path[0] == '/' ? 0 : -1;
	}
	return 0;
}

int make_dirs(const char *path)
{
	return make_dirs_noting(path, NULL, 0);
}

int make_dirs_noting(const char *path, char *first_made, size_t size)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (first_made != NULL && size > 0)
		first_made[0] = '\0';
	if (len == 0 || len >= sizeof buf) {
		errno = len ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(buf, path, len + 1);
	/* Create each prefix ending before a '/', then the whole path. */
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		int made = mkdir(buf, 0777) == 0;
		if (!made && errno != EEXIST)
			return -1;
		if (made && first_made != NULL && size > 0 && !first_made[0])
			snprintf(first_made, size, "%s", buf);
		*p = saved;
		if (saved == '\0')
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

void remove_made_dirs(const char *path, const char *first_made)
{
	char buf[PATH_MAX];
	size_t top = strlen(first_made);

	if (top == 0 || snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf ||
	    strncmp(buf, first_made, top) != 0)
		return;
	for (;;) {
		size_t len = strlen(buf);
		while (len > top && buf[len - 1] == '/')
			buf[--len] = '\0';   /* "out/" is "out" */
		if (rmdir(buf) != 0 || len <= top)
			return;
		char *slash = strrchr(buf, '/');
		if (slash == NULL || (size_t)(slash - buf) < top)
			return;
		*slash = '\0';
	}
}

int remove_flat_dir_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Only files: a command that made a directory in it leaves it, and
	 * the rmdir below fails. */
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(fd, e->d_name, 0);
	closedir(d);
	return unlinkat(dirfd, name, AT_REMOVEDIR);
}
