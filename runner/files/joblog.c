/*
 * joblog.c - the GNU Parallel-format joblog.  See joblog.h.
 */
#define _GNU_SOURCE
#include "joblog.h"
#include "os/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define JOBLOG_HEADER "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

/* The pid holding a flock() on the file `fd` is open on, from
 * /proc/locks; 0 if it cannot be found. */
static long lock_holder(int fd)
{
	struct stat st;
	char line[256], kind[16];
	unsigned maj, min;
	unsigned long ino;
	long pid, found = 0;
	FILE *f;

	if (fstat(fd, &st) != 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return 0;
	while (found == 0 && fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &pid, &maj, &min,
			   &ino) == 5 && strcmp(kind, "FLOCK") == 0 && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && ino == (unsigned long)st.st_ino)
			found = pid;
	fclose(f);
	return found;
}

/* Open the joblog without truncating it, creating it if missing (and
 * saying so in j->created).  Returns the descriptor or -1 (errno). */
static int open_untruncated(struct joblog *j)
{
	int fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);

	struct stat st;

	j->created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(j->path, O_RDWR | O_CLOEXEC);
	/* A symbolic link to a file not there yet: O_EXCL refuses it. */
	if (fd < 0 && errno == ENOENT) {
		fd = open(j->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		j->created = fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0;
	}
	if (fd < 0 && errno == EACCES)
		fd = open(j->path, O_WRONLY | O_CLOEXEC);
	return fd;
}

/* Is `fd` still the file at j->path (not removed or replaced while this
 * run waited for its lock)? */
static int still_there(const struct joblog *j, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(j->path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Take the lock on j->fd, polling until `deadline` (now_ns()).  Returns 0,
 * 1 when another run holds it, or -1 (errno). */
static int lock_until(int fd, uint64_t deadline)
{
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (now_ns() >= deadline)
			return 1;
		usleep(50000);
	}
}

int joblog_lock(struct joblog *j, const char *path, double wait_s)
{
	uint64_t deadline = now_ns() + (uint64_t)(wait_s * 1e9);
	struct stat st;
	int rc = -1;

	j->path = path[0] == '+' ? path + 1 : path;
	for (int tries = 0; tries < 10; tries++) {
		if ((j->fd = open_untruncated(j)) < 0)
			break;
		/* A device or a pipe (/dev/null) is no file two runs share. */
		if (fstat(j->fd, &st) != 0 || !S_ISREG(st.st_mode))
			return 0;
		if ((rc = lock_until(j->fd, deadline)) != 0 || still_there(j, j->fd))
			break;
		close(j->fd); /* replaced while we waited: lock the new one */
		j->fd = -1;
		rc = -1;
	}
	if (rc == 0)
		return 0;
	if (rc == 1) {
		long pid = lock_holder(j->fd);
		char holder[40] = "";
		if (pid > 0)
			snprintf(holder, sizeof holder, " (pid %ld)", pid);
		warnx_("--joblog: '%s' is in use by another cowrun run%s: gave up after %g s",
		       j->path, holder, wait_s);
	} else {
		warnx_("--joblog: cannot open '%s': %s", j->path, strerror(errno));
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	j->created = 0;
	return -1;
}

int joblog_lock_fd(struct joblog *j, int fd, const char *name, double wait_s)
{
	struct stat st;
	int rc = 0;

	j->path = name[0] == '+' ? name + 1 : name;
	j->fd = fd;
	j->created = 0;
	/* A device or a pipe (/dev/null) is no file two runs share. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		rc = lock_until(fd, now_ns() + (uint64_t)(wait_s * 1e9));
	if (rc == 0)
		return 0;
	if (rc == 1)
		warnx_("--joblog: '%s' is in use by another cowrun run: gave up after %g s", j->path,
		       wait_s);
	else
		warnx_("--joblog: cannot lock '%s': %s", j->path, strerror(errno));
	close(fd);
	j->fd = -1;
	return -1;
}

int joblog_open(struct joblog *j, int append, int resume)
{
	struct stat st;
	off_t size = resume ? j->keep : 0;

	j->epoch_minus_monotonic = epoch_seconds() - (double)now_ns() / 1e9;
	j->written = 1;
	if (fstat(j->fd, &st) != 0 ||
	    (S_ISREG(st.st_mode) && (resume || !append) && ftruncate(j->fd, size) != 0) ||
	    (j->f = fdopen(j->fd, "a")) == NULL) {
		warnx_("--joblog: cannot write '%s': %s", j->path, strerror(errno));
		return -1;
	}
	j->fd = -1; /* the FILE owns it now */
	if (!S_ISREG(st.st_mode) || lseek(fileno(j->f), 0, SEEK_END) == 0)
		fputs(JOBLOG_HEADER, j->f);
	if (fflush(j->f) != 0) {
		warnx_("--joblog: cannot write '%s': %s", j->path, strerror(errno));
		return -1;
	}
	return 0;
}

void joblog_write(struct joblog *j, const struct attempt *a, const char *workload,
		  const char *name)
{
	if (j == NULL || j->f == NULL)
		return;
	double start = (double)a->start_ns / 1e9 + j->epoch_minus_monotonic;
	double runtime = a->end_ns > a->start_ns ? (double)(a->end_ns - a->start_ns) / 1e9 : 0.0;
	fprintf(j->f, "%zu\t:\t%.3f\t%10.3f\t0\t%zu\t%d\t%d\t%s %s\n", a->task + 1, start,
		runtime, a->received, a->exitval, a->signal, workload, name);
	/* Flushed per line: a parent that dies loses no finished attempt. */
	fflush(j->f);
}

/* ---- reading it back for --resume ---- */

static const char *const field_names[] = { "Seq", "Host", "Starttime", "JobRuntime", "Send",
					   "Receive", "Exitval", "Signal", "Command" };

/* Split a line (newline dropped) into GNU Parallel's 9 fields; the 9th is
 * the rest of the line.  Returns how many fields it has (at most 9). */
static int split_fields(char *line, char *field[9])
{
	int n = 1;

	field[0] = line;
	for (char *tab; n < 9 && (tab = strchr(field[n - 1], '\t')) != NULL; n++) {
		*tab = '\0';
		field[n] = tab + 1;
	}
	return n;
}

/* A number as GNU Parallel writes one: spaces first (the runtime is
 * padded), an optional '-', digits, and with `decimal` a fraction. */
static int is_number(const char *s, int negative, int decimal)
{
	while (*s == ' ')
		s++;
	if (negative && *s == '-')
		s++;
	if (*s < '0' || *s > '9')
		return 0;
	s += strspn(s, "0123456789");
	if (decimal && *s == '.' && s[1] >= '0' && s[1] <= '9')
		s += 1 + strspn(s + 1, "0123456789");
	return *s == '\0';
}

/* Check one line (a task's, not the header) of a joblog.  Returns 0, or
 * -1 with `why` saying what is wrong. */
static int check_line(char *line, const char *workload, char *why, size_t size)
{
	static const signed char kind[8] = { 0, -1, 2, 2, 0, 0, 1, 0 }; /* 1 signed, 2 decimal */
	char *field[9];
	int n = split_fields(line, field);
	size_t len = strlen(workload);

	if (n < 9) {
		snprintf(why, size, "expected 9 tab-separated fields, found %d", n);
		return -1;
	}
	for (int i = 0; i < 8; i++)
		if (kind[i] >= 0 && !is_number(field[i], kind[i] == 1, kind[i] == 2)) {
			snprintf(why, size, "%s is '%.40s', not a number", field_names[i], field[i]);
			return -1;
		}
	if (strtoul(field[0], NULL, 10) == 0) {
		snprintf(why, size, "Seq is 0: tasks count from 1");
		return -1;
	}
	if (strncmp(field[8], workload, len) != 0 || field[8][len] != ' ') {
		snprintf(why, size, "WORKLOAD");
		return -1;
	}
	return 0;
}

/* The lines of a joblog, read one at a time with where each began. */
struct line_reader {
	FILE *f;
	char *line;
	size_t cap;
	ssize_t len;
	long long at, next;
	int number;
};

static int next_line(struct line_reader *r)
{
	r->at = r->next;
	r->len = getline(&r->line, &r->cap, r->f);
	if (r->len <= 0)
		return 0;
	r->next += r->len;
	r->number++;
	return 1;
}

/* Is the line just read the last one, cut off: no newline at its end, or
 * (also at the end) fewer than 9 fields? */
static int cut_off(struct line_reader *r)
{
	if (r->line[r->len - 1] != '\n')
		return 1;
	int c = getc(r->f);
	if (c != EOF) {
		ungetc(c, r->f);
		return 0;
	}
	int tabs = 0;
	for (ssize_t i = 0; i < r->len; i++)
		tabs += r->line[i] == '\t';
	return r->number > 1 && tabs < 8;
}

static int check_lines(struct joblog *j, struct line_reader *r, const char *workload)
{
	char why[128];

	while (next_line(r)) {
		if (cut_off(r)) {
			warnx_("--resume: '%s': line %d was cut off (a write that did not finish, "
			       "as on a full disk): dropped it; its task runs again unless the "
			       "results journal kept its outcome", j->path, r->number);
			return 0;
		}
		r->line[r->len - 1] = '\0';
		if (r->number == 1 && ((size_t)r->len != sizeof JOBLOG_HEADER - 1 ||
					strncmp(r->line, JOBLOG_HEADER, (size_t)r->len - 1) != 0)) {
			warnx_("--resume: '%s': line 1: expected GNU Parallel's joblog header "
			       "(Seq Host Starttime ...)", j->path);
			return -1;
		}
		if (r->number == 1)
			continue;
		if (check_line(r->line, workload, why, sizeof why) == 0)
			continue;
		if (strcmp(why, "WORKLOAD") == 0)
			warnx_("--joblog: '%s' line %d is not a %s task: this joblog is another "
			       "workload's", j->path, r->number, workload);
		else
			warnx_("--resume: '%s': line %d: %s", j->path, r->number, why);
		return -1;
	}
	return 0;
}

int joblog_read(struct joblog *j, const char *workload)
{
	struct line_reader r = { 0 };
	int fd = j->fd >= 0 ? dup(j->fd) : open(j->path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
	if (fd < 0 || (r.f = fdopen(fd, "r")) == NULL) {
		if (fd >= 0)
			close(fd);
		if (errno == ENOENT)
			return 0;
		warnx_("--resume: cannot read '%s': %s", j->path, strerror(errno));
		return -1;
	}
	rc = check_lines(j, &r, workload);
	if (rc == 0 && ferror(r.f)) {
		warnx_("--resume: cannot read '%s': %s", j->path, strerror(errno));
		rc = -1;
	}
	j->keep = r.at;
	free(r.line);
	fclose(r.f);
	return rc;
}

int joblog_is_empty(const char *path)
{
	FILE *f = fopen(path[0] == '+' ? path + 1 : path, "re");
	int c = EOF;

	if (f == NULL)
		return 1;
	while ((c = getc(f)) != EOF && c != '\n')
		;
	fclose(f);
	return c != '\n';
}

int joblog_is_empty_fd(int fd)
{
	char buf[4096];
	off_t at = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof buf, at)) > 0) {
		if (memchr(buf, '\n', (size_t)n) != NULL)
			return 0;
		at += n;
	}
	return 1;
}

int joblog_close(struct joblog *j)
{
	int rc = 0;

	if (j->f != NULL) {
		rc = ferror(j->f) | fclose(j->f);
		if (rc != 0)
			warnx_("--joblog: a write failed: the joblog is incomplete");
	}
	/* A run refused before it wrote leaves no joblog it created. */
	if (j->created && !j->written && j->fd >= 0)
		unlink(j->path);
	if (j->fd >= 0)
		close(j->fd);
	j->f = NULL;
	j->fd = -1;
	j->created = 0;
	return rc ? -1 : 0;
}
