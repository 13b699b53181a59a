/*
 * fileops.h - files and directories as cowrun names them: a temporary
 * name beside the final one, a file created new (never through a link)
 * and committed (renamed into place), the standard descriptors held,
 * directories opened without following a link, made and removed.
 */
#ifndef COWRUN_FILEOPS_H
#define COWRUN_FILEOPS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* This host's name as it goes into temporary file names
 * (".NAME.HOST.PID.tmp"): gethostname() with every character but letters,
 * digits, '-' and '_' made '_', so HOST holds no '.' and one host's
 * pattern never matches another's; "localhost" if it has none.  A static
 * buffer, filled on the first call (make it before forking threads). */
const char *host_tag(void);

/* 16 hex digits from getrandom(): the part of a temporary name nobody
 * else can predict.  out holds at least 17 bytes. */
void random_tag(char *out);

/* A side file's temporary name beside `path`: "PATH.HOST.PID.RANDOM.tmp"
 * (random_tag()).  Returns 0, or -1 (ENAMETOOLONG) if it does not fit. */
int temp_name_beside(char *temp, size_t size, const char *path);

/* Open `path` (relative to dirfd, or AT_FDCWD) as a new file, with
 * flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC: never an existing
 * file, never through a symbolic link.  Every file cowrun names itself
 * is created this way, then renamed into place.  Returns the descriptor
 * (the caller closes it), or -1 with errno (EEXIST: something is there). */
int create_new_at(int dirfd, const char *path, int flags, mode_t mode);

/* The two above together: a new file under a temporary name beside
 * `path` (its name into temp, `size` bytes), relative to dirfd, open for
 * writing.  Returns the descriptor, or -1 with errno. */
int create_temp_beside_at(int dirfd, const char *path, char *temp, size_t size, mode_t mode);

/* An unnamed regular file (O_TMPFILE) in the directory `path`'s last
 * name is in, opened flags | O_TMPFILE | O_CLOEXEC (flags: O_WRONLY or
 * O_RDWR; never O_EXCL, so it can be named), mode & ~umask: it has no
 * name, so nothing is left of it if this process dies, even by SIGKILL.
 * Returns the descriptor (the caller closes it), or -1 with errno:
 * EOPNOTSUPP, EISDIR or EINVAL where the kernel or the file system has no
 * O_TMPFILE, EOPNOTSUPP too without /proc (name_unnamed() could not name
 * it): the caller then creates a named temporary instead. */
int create_unnamed_beside(const char *path, int flags, mode_t mode);

/* Give the unnamed file `fd` (create_unnamed_beside(path, ...)) the name
 * `path`, replacing what is there in one step: linked through
 * /proc/self/fd under a fresh temporary name beside it
 * (temp_name_beside(): never through a link planted there, EEXIST), then
 * renamed over `path`.  Returns 0, or -1 with errno (nothing left under
 * the temporary name). */
int name_unnamed(int fd, const char *path);

/*
 * Committing a file: it is written under a temporary name beside its
 * final one (temp_name_beside(), create_new_at()), then renamed over the
 * final name, so that a reader sees the old file or the whole new one.
 * Each function below ends the temporary file either way: under the final
 * name on success, removed on failure.  Paths are relative to dirfd (or
 * AT_FDCWD); errno is the first failure's; the directory is not fsync'd.
 */
#define COMMIT_FSYNC 1   /* fsync the file before the rename: durable */

/* Rename `temp` over `path`; on failure remove `temp`.  Returns 0 or -1
 * with errno. */
int commit_rename_at(int dirfd, const char *temp, const char *path);

/* fsync `fd` (with COMMIT_FSYNC in flags), close it, then
 * commit_rename_at().  The descriptor is closed either way.  Returns 0 or
 * -1 with errno. */
int commit_fd_at(int dirfd, int fd, const char *temp, const char *path, int flags);

/* The same for a stream: fflush(), no error on it (EIO where errno says
 * none), fsync (COMMIT_FSYNC), fclose(), the rename.  `f` is closed
 * either way.  Returns 0 or -1 with errno. */
int commit_stream_at(int dirfd, FILE *f, const char *temp, const char *path, int flags);

/* Write size bytes of data as the whole new file `path`, mode & ~umask,
 * committed (flags as for commit_fd_at()).  Returns 0 or -1 with errno;
 * nothing is left under a temporary name. */
int commit_new_file_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode,
		       int flags);

/* Open /dev/null, read-only, on any of descriptors 0, 1 and 2 that is
 * closed, so no file the run opens later takes its place (a joblog
 * receiving the summary) and writes to it still fail.  Returns a bit mask
 * of those that were closed (1 << fd). */
int hold_standard_fds(void);

/* Open the directory `path` for openat() and friends, its last component
 * not followed if it is a symbolic link (O_DIRECTORY | O_NOFOLLOW; ELOOP
 * or ENOTDIR then).  Returns the descriptor, or -1 with errno. */
int open_dir_nofollow(const char *path);

/* Remove the directory `name` in dirfd (not followed if a link) and the
 * files in it.  Returns 0, or -1 with errno. */
int remove_flat_dir_at(int dirfd, const char *name);

/* `path` made absolute against the working directory now (".." and
 * links left as they are: the same file the path names now), for a path
 * the run uses after its setup, which may change the working directory.
 * Written into buf; returns 0, or -1 (no working directory, or too long:
 * buf then holds path as given). */
int absolute_path(const char *path, char *buf, size_t size);

/* mkdir -p: create dir and its missing parents (mode 0777 & ~umask).
 * Returns 0, or -1 with errno set. */
int make_dirs(const char *path);

/* make_dirs(), noting in first_made (size bytes) the first level this
 * call created ("" if none): what remove_made_dirs() takes back. */
int make_dirs_noting(const char *path, char *first_made, size_t size);

/* Remove path and its parents up to first_made (as make_dirs_noting()
 * noted it), each only if empty; stops at the first that is not.  For a
 * run refused after its directories were made: it leaves none behind. */
void remove_made_dirs(const char *path, const char *first_made);

#endif
