/*
 * no-tmpfile.c - an LD_PRELOAD shim whose open() and openat() refuse
 * O_TMPFILE with EOPNOTSUPP, as a file system without it does, so a test
 * can take the named temporary files' path (cowrun submit's side files).
 * Everything else goes to the system call unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

static int shim_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

/* The mode is there only with O_CREAT or O_TMPFILE. */
int open(const char *path, int flags, ...)
{
	va_list ap;

	va_start(ap, flags);
	mode_t mode = flags & (O_CREAT | __O_TMPFILE) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return shim_openat(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;

	va_start(ap, flags);
	mode_t mode = flags & (O_CREAT | __O_TMPFILE) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return shim_openat(dirfd, path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));
