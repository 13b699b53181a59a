/*
 * util.c - small helpers every runner module uses.  See util.h.
 */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

const char *progname = "cowrun";

/* A message longer than this has its quoted values shortened in their
 * middle; each keeps at least MESSAGE_KEEP bytes. */
#define MESSAGE_MAX 1000
#define MESSAGE_KEEP 80

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The quote that opens a value: not inside a word (as in "joblog's").
 * The one that closes it: not followed by a letter or digit. */
static char *opening_quote(const char *line, char *from)
{
	for (char *q = strchr(from, '\''); q != NULL; q = strchr(q + 1, '\''))
		if (q == line || !word_char(q[-1]))
			return q;
	return NULL;
}

static char *closing_quote(char *from)
{
	for (char *q = strchr(from, '\''); q != NULL; q = strchr(q + 1, '\''))
		if (!word_char(q[1]))
			return q;
	return NULL;
}

/* The longest value a message quotes ('...'), or NULL if none is long
 * enough to lose more than "..." takes. */
static char *longest_quoted(char *line, size_t *length)
{
	char *best = NULL, *open = opening_quote(line, line);

	*length = MESSAGE_KEEP + 3;
	while (open != NULL) {
		char *close = closing_quote(open + 1);
		if (close == NULL)
			break;
		if ((size_t)(close - open - 1) > *length) {
			best = open + 1;
			*length = (size_t)(close - open - 1);
		}
		open = opening_quote(line, close + 1);
	}
	return best;
}

/* Fit a message into MESSAGE_MAX bytes by shortening the values it quotes
 * in their middle ('/aaaa...aaaa/x.csv'), longest first, so the reason
 * that follows a value is never cut; a message quoting nothing long is
 * shortened in its own middle. */
static void shorten_message(char *line)
{
	size_t len = strlen(line), n;

	while (len > MESSAGE_MAX) {
		char *value = longest_quoted(line, &n);
		if (value == NULL) {
			value = line;
			n = len;
		}
		size_t cut = len - MESSAGE_MAX + 3;
		if (cut > n - MESSAGE_KEEP)
			cut = n - MESSAGE_KEEP;
		if (cut <= 3)
			break;
		size_t head = (n - cut) / 2;
		memcpy(value + head, "...", 3);
		memmove(value + head + 3, value + head + cut, len - (size_t)(value - line) - head - cut + 1);
		len -= cut - 3;
	}
}

/* --log-time: the run id on every line; "" off. */
static char log_run_id[64];

void warnx_log_time(const char *run_id)
{
	snprintf(log_run_id, sizeof log_run_id, "%s", run_id);
}

/* Now, as "2026-11-24T06:15:00.123Z", in buf. */
static const char *iso_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
	return buf;
}

void warnx_(const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", progname, fmt); /* out of memory: the bare format */
		return;
	}
	shorten_message(line);
	/* Messages quote input (a CSV header, a saved failure): keep them one
	 * line, and keep control characters away from the terminal. */
	for (unsigned char *c = (unsigned char *)line; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
	/* One fprintf, so lines from several processes do not interleave. */
	if (log_run_id[0]) {
		char when[40];
		fprintf(stderr, "%s run=%s %s: %s\n", iso_now(when, sizeof when), log_run_id,
			progname, line);
	} else {
		fprintf(stderr, "%s: %s\n", progname, line);
	}
	free(line);
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double epoch_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Strict: an optional '-', then digits (or a decimal number); no spaces,
 * no '+', no hexadecimal. */
static int plain_number(const char *text)
{
	if (*text == '-')
		text++;
	return (*text >= '0' && *text <= '9') || *text == '.';
}

int parse_ll(const char *text, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!plain_number(text)) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || *end != '\0' || errno == EINVAL) {
		errno = EINVAL;
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int parse_double(const char *text, double min, double max, double *out)
{
	char *end;
	double v;

	if (!plain_number(text) || strpbrk(text, "xX") != NULL) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtod(text, &end);
	if (end == text || *end != '\0' || isnan(v)) {
		errno = EINVAL;
		return -1;
	}
	/* Overflow (inf) and underflow are out of range, not "not a number". */
	if (!isfinite(v) || (errno == ERANGE && v != 0.0) || v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

const char *signal_name(int sig)
{
	static char known[40];
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev == NULL) {
		static char unknown[32];
		snprintf(unknown, sizeof unknown, "signal %d", sig);
		return unknown;
	}
	snprintf(known, sizeof known, "SIG%s", abbrev);
	return known;
}

int signal_from_name(const char *name)
{
	long long number;

	if (parse_ll(name, 1, NSIG - 1, &number) == 0)
		return (int)number;
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev != NULL && strcasecmp(abbrev, name) == 0)
			return sig;
	}
	return -1;
}

pid_t reap_child(pid_t child, int *status)
{
	pid_t got;

	while ((got = waitpid(child, status, 0)) < 0 && errno == EINTR)
		;
	return got;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older C library headers lack it */
#endif

/* Write-fault [start, end), writable private pages, now, as the first
 * writes would (page-aligned bounds).  MADV_POPULATE_WRITE; a kernel
 * older than 5.14 refuses it (EINVAL): then each page is read and its
 * byte written back, which only a single-threaded caller may do (no
 * other thread's write can fall between).  Raw pages, not objects: out of
 * AddressSanitizer's sight (its redzones between globals are bytes too). */
static void __attribute__((no_sanitize_address))
prefault_range(uintptr_t start, uintptr_t end, uintptr_t page)
{
	if (start >= end || madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0 ||
	    errno != EINVAL)
		return;
	for (volatile char *p = (volatile char *)start; (uintptr_t)p < end; p += page)
		*p = *p;   // cppcheck-suppress selfAssignment ; volatile: a read, then a write
}

/* The stack below the caller's frame: a frame of stack_kb, written. */
static void __attribute__((noinline)) prefault_stack(size_t stack_kb)
{
	volatile char below[stack_kb * 1024];

	for (size_t i = 0; i < sizeof below; i += 4096)
		below[i] = 0;
}

/* Where the next allocations come from: a block of heap_kb written and
 * given back (under malloc's mmap threshold, so from the heap itself). */
static void prefault_heap(size_t heap_kb)
{
	volatile char *block = malloc(heap_kb * 1024);

	for (size_t i = 0; block != NULL && i < heap_kb * 1024; i += 4096)
		block[i] = 0;
	free((void *)block);
}

/* dl_iterate_phdr()'s callback: each loaded object's writable segment
 * (its data and bss) of at most *(size_t *)limit bytes, less the part
 * made read-only after relocation (RELRO), which no write may touch. */
static int prefault_object(struct dl_phdr_info *info, size_t size, void *limit)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
			relro_end = (info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
				     info->dlpi_phdr[i].p_memsz) & ~(page - 1);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
		uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
		if (end - start > *(const size_t *)limit)
			continue;
		/* RELRO is the start of a writable segment, when it is in one */
		prefault_range(relro_end > start ? relro_end : start, end, page);
	}
	return 0;
}

void prefault_private_pages(size_t stack_kb, size_t heap_kb, size_t small_kb)
{
	size_t limit = small_kb * 1024;

	prefault_stack(stack_kb);
	prefault_heap(heap_kb);
	dl_iterate_phdr(prefault_object, &limit);
}

char *describe_wait_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by %s (%s)%s",
			 signal_name(WTERMSIG(status)),
			 strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "stopped with wait status 0x%x", status);
	return buf;
}

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

int commit_new_file_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode,
		       int flags)
{
	char temp[PATH_MAX];
	int fd = temp_name_beside(temp, sizeof temp, path) == 0
		? create_new_at(dirfd, temp, O_WRONLY, mode) : -1;

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
