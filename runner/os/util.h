/*
 * util.h - small helpers every runner module uses: complete writes,
 * monotonic time, strict number parsing, signal names, messages.
 */
#ifndef COWRUN_UTIL_H
#define COWRUN_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

/* The program name used in every message ("cowrun"). */
extern const char *progname;

/* Print "cowrun: <message>" on stderr, one line: control characters are
 * shown as '?', and a message over about 1000 bytes has the values it
 * quotes ('...') shortened in their middle, never its reason. */
void warnx_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* From now on, begin each warnx_() line with the time, ISO 8601 in UTC
 * to the millisecond, and "run=RUN_ID" (copied):
 * "2026-11-24T06:15:00.123Z run=20261124T061500Z-1a2b3c4d cowrun: ...". */
void warnx_log_time(const char *run_id);

/* Write all `len` bytes to fd, retrying short writes and EINTR.
 * Returns 0, or -1 with errno set. */
int write_all(int fd, const void *buf, size_t len);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

/* Wall clock (epoch) in seconds, with sub-second precision. */
double epoch_seconds(void);

/* Parse a whole string as a base-10 integer in [min, max].
 * Returns 0, or -1 (errno EINVAL: not a number; ERANGE: out of bounds). */
int parse_ll(const char *text, long long min, long long max, long long *out);

/* Parse a whole string as a finite double in [min, max]; as parse_ll. */
int parse_double(const char *text, double min, double max, double *out);

/* "SIGSEGV" for SIGSEGV; "signal 77" for an unknown number.  Returns a
 * pointer to a static buffer for unknown numbers: not thread-safe then. */
const char *signal_name(int sig);

/* Signal number for "SEGV", "SIGSEGV", "sigsegv" or "11"; -1 if unknown. */
int signal_from_name(const char *name);

/* Wait for the child `child` to end and reap it (EINTR retried); its
 * status in *status unless NULL.  Returns child, or -1 with errno (not
 * our child: nothing to reap). */
pid_t reap_child(pid_t child, int *status);

/* In a process forked to wait for work (a spare leader, a standby
 * worker): make now the private pages the work will write first, so that
 * it meets no page fault on the request's path: stack_kb below the
 * current stack, heap_kb where malloc() will carve its next blocks, and
 * the writable data of every loaded object (the program's, the
 * libraries') whose segment is at most small_kb.  Each page is a copy of
 * the parent's (copy-on-write) or a new one.  Errors are ignored: this
 * only moves work earlier.  Single-threaded callers only (before Linux
 * 5.14 a data page is faulted by writing its own byte back). */
void prefault_private_pages(size_t stack_kb, size_t heap_kb, size_t small_kb);

/* What a spare leader and a standby worker make ready while they wait.
 * On the 2-core VM, from a warm 1 GiB setup (interleaved A/B): a served
 * request 0.12 ms sooner, for 0.16 ms more of the server's CPU per
 * request and 132 KiB more private memory in each (188 KiB, was 56). */
#define PREFAULT_STACK_KB 64
#define PREFAULT_HEAP_KB 64
#define PREFAULT_SMALL_KB 64

/* Describe a waitpid() status: "exited with status 3", "killed by SIGKILL
 * (Killed)".  Writes into buf, returns buf. */
char *describe_wait_status(int status, char *buf, size_t size);

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

/* CPUs this run may use, at least 1 (cpus.c): the smallest of the
 * affinity mask, the cgroup's CPU quota (rounded up) and
 * SLURM_CPUS_PER_TASK.  Counted once. */
int cpu_count(void);

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
