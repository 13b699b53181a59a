/*
 * lineprinter.c - cowrun-lineprinter, a simulated line printer: the device
 * that the printer story's --report-to drives, one printer per worker slot.
 *
 *   cowrun-lineprinter --spool DIR --printer N [--job NAME] [--lpm LPM]
 *
 * It prints the job on its standard input on printer N of the spool
 * directory DIR, and records what it printed so that a test can check it:
 *
 *   DIR/printer-N.lock   held (flock) while a job prints: the printer is
 *                        busy, and a second job at once exits 75 saying so
 *   DIR/printer-N.paper  the paper: per job a banner "==== job NAME ====",
 *                        the job's bytes as read, a trailer "==== end of
 *                        NAME: L lines, B bytes ====" and a form feed line
 *   DIR/printer-N.log    one line per job printed whole:
 *                        "NAME L B FNV1A64 START END" (CLOCK_REALTIME, s.ns)
 *
 * At --lpm lines a minute (0, the default: as fast as it can) each line
 * reaches the paper at the end of its print cycle, on a grid of absolute
 * deadlines, so a late wake-up delays one line and never the ones after it.
 *
 * Exit status: 0 printed; 1 an error (one line on stderr); 2 bad options;
 * 75 (EX_TEMPFAIL) the printer was busy.  It changes no signal's
 * disposition: whoever runs it can stop it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#define PROG            "cowrun-lineprinter"
#define EXIT_USAGE      2
#define PRINTER_MAX     9999
#define LPM_MAX         60000000.0
#define JOB_NAME_MAX    255      /* a file name's length: {} fits */
#define PAPER_BUFFER    65536
#define FNV_OFFSET      0xcbf29ce484222325ULL
#define FNV_PRIME       0x100000001b3ULL

static const char usage_line[] =
	"usage: " PROG " --spool DIR --printer N [--job NAME] [--lpm LINES_PER_MINUTE]";

struct options {
	const char *spool;
	long printer;           /* 1 to PRINTER_MAX */
	const char *job;
	double lpm;             /* 0: no pacing */
};

/* What was printed of a job: the log line's fields. */
struct job {
	uint64_t lines, bytes, hash;
	struct timespec start, end;
};

/* The paper: an O_APPEND descriptor and a buffer in front of it, emptied
 * after every line when the printer is paced (the line is on the paper at
 * its deadline) and only when full otherwise.  The first failed write is
 * kept in err and stops every later one: the caller says it once. */
struct paper {
	int fd;
	int err;
	size_t len;
	char buf[PAPER_BUFFER];
};

/* The print mechanism's clock: cycles of cycle_ns from `on`. */
struct pacer {
	struct timespec on;
	int64_t cycle_ns;       /* 0: not paced */
	int64_t next;           /* first cycle end the next line may take */
};

/* "cowrun-lineprinter: <message><tail>" and a newline, on stderr. */
static void vsay(const char *fmt, va_list ap, const char *tail)
{
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "%s\n", tail);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, "cowrun-lineprinter: ...". */
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap, "");
	va_end(ap);
}

/* ---- options ------------------------------------------------------------ */

static void bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line: what is wrong, then the usage, so a log keeps both. */
static void bad_usage(const char *fmt, ...)
{
	char tail[256];
	va_list ap;

	snprintf(tail, sizeof tail, "; %s", usage_line);
	va_start(ap, fmt);
	vsay(fmt, ap, tail);
	va_end(ap);
}

static int parse_printer(const char *s, long *n)
{
	char *end;

	errno = 0;
	*n = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno || *n < 1 || *n > PRINTER_MAX) {
		bad_usage("--printer: bad value '%s' (a number from 1 to %d)", s, PRINTER_MAX);
		return -1;
	}
	return 0;
}

/* 0, or 1 to LPM_MAX: a cycle of at most a minute keeps the deadline
 * arithmetic far from overflow. */
static int parse_lpm(const char *s, double *lpm)
{
	char *end;

	errno = 0;
	*lpm = strtod(s, &end);
	if (*s < '0' || *s > '9' || *end != '\0' || errno || !isfinite(*lpm) ||
	    (*lpm != 0 && (*lpm < 1 || *lpm > LPM_MAX))) {
		bad_usage("--lpm: bad value '%s' (lines a minute: 0, or 1 to %.0f)", s, LPM_MAX);
		return -1;
	}
	return 0;
}

/* The name goes into one line of the paper and of the log: no control
 * character may split or forge a line. */
static int check_job(const char *name)
{
	size_t len = strlen(name);
	int control = 0;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		control |= *c < 0x20 || *c == 0x7f;
	if (len == 0 || len > JOB_NAME_MAX || control) {
		bad_usage("--job: bad name (1 to %d bytes, no control characters)", JOB_NAME_MAX);
		return -1;
	}
	return 0;
}

/* getopt_long's own messages are two lines and say no usage: ours. */
static int unknown_option(int c, char **argv)
{
	if (c == ':')
		bad_usage("option '%s' needs a value", argv[optind - 1]);
	else if (optopt != 0)   /* a short one, perhaps among others: -vx */
		bad_usage("unknown option '-%c'", optopt);
	else
		bad_usage("unknown option '%s'", argv[optind - 1]);
	return -1;
}

/* One option with its value into *o: 0, or -1 after one line. */
static int take_option(int c, const char *value, struct options *o)
{
	switch (c) {
	case 's':
		o->spool = value;
		return 0;
	case 'p':
		return parse_printer(value, &o->printer);
	case 'j':
		o->job = value;
		return check_job(value);
	default:
		return parse_lpm(value, &o->lpm);
	}
}

static void help(void)
{
	printf("%s\n"
	       "Print standard input on printer N of the spool directory DIR, at\n"
	       "LINES_PER_MINUTE (0, the default: as fast as it can), and record it:\n"
	       "  DIR/printer-N.lock   locked while a job prints: a second job exits 75 (busy)\n"
	       "  DIR/printer-N.paper  per job: banner, the job's bytes, trailer, form feed\n"
	       "  DIR/printer-N.log    per job: NAME LINES BYTES FNV1A64 START END\n"
	       "Exit status: 0 printed, 1 an error, 2 bad options, 75 the printer is busy.\n",
	       usage_line);
}

/* 0, 1 for --help (help printed), or -1 after one line. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "spool", required_argument, NULL, 's' },
		{ "printer", required_argument, NULL, 'p' },
		{ "job", required_argument, NULL, 'j' },
		{ "lpm", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct options){ .job = "stdin" };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		if (c == 'h') {
			help();
			return 1;
		}
		if (c == ':' || c == '?')
			return unknown_option(c, argv);
		if (take_option(c, optarg, o) != 0)
			return -1;
	}
	if (optind < argc) {
		bad_usage("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (o->spool == NULL || *o->spool == '\0' || o->printer == 0) {
		bad_usage("%s is required", o->printer ? "--spool DIR" : "--printer N");
		return -1;
	}
	return 0;
}

/* ---- the spool directory -------------------------------------------------- */

/* DIR/printer-N.SUFFIX, for messages and for openat's name. */
static void spool_path(char *buf, size_t size, const struct options *o, const char *suffix,
		       int whole)
{
	if (whole)
		snprintf(buf, size, "%s/printer-%ld.%s", o->spool, o->printer, suffix);
	else
		snprintf(buf, size, "printer-%ld.%s", o->printer, suffix);
}

/*
 * Open DIR/printer-N.SUFFIX with `flags` (plus O_CREAT, O_NOFOLLOW,
 * O_CLOEXEC; 0644).  These are a device's running records, appended to by
 * every job, so they are opened in place: a planted link is refused, never
 * followed.  Returns the descriptor (the caller closes it) or -1 after one
 * line naming the file.
 */
static int spool_open(int dir, const struct options *o, const char *suffix, int flags)
{
	char name[64];
	int fd;

	spool_path(name, sizeof name, o, suffix, 0);
	fd = openat(dir, name, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		char path[4096];
		spool_path(path, sizeof path, o, suffix, 1);
		say("cannot open '%s': %s", path, strerror(errno));
	}
	return fd;
}

/* Take printer N: 0 with *lock held (closing it, or exiting, frees the
 * printer), 1 if another job holds it, -1 after one line. */
static int take_printer(int dir, const struct options *o, int *lock)
{
	char path[4096];

	*lock = spool_open(dir, o, "lock", O_RDONLY);
	if (*lock < 0)
		return -1;
	if (flock(*lock, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		say("printer %ld is busy: another job is printing", o->printer);
		close(*lock);
		return 1;
	}
	spool_path(path, sizeof path, o, "lock", 1);
	say("cannot lock '%s': %s", path, strerror(errno));
	close(*lock);
	return -1;
}

/* ---- the paper ------------------------------------------------------------ */

/* write() all of buf to fd, through short writes and EINTR.  0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void paper_flush(struct paper *p)
{
	if (p->err == 0 && write_all(p->fd, p->buf, p->len) != 0)
		p->err = errno;
	p->len = 0;
}

static void paper_put(struct paper *p, const char *s, size_t len)
{
	while (len > 0 && p->err == 0) {
		size_t n = sizeof p->buf - p->len < len ? sizeof p->buf - p->len : len;
		memcpy(p->buf + p->len, s, n);
		p->len += n;
		s += n;
		len -= n;
		if (p->len == sizeof p->buf)
			paper_flush(p);
	}
}

static void paper_printf(struct paper *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void paper_printf(struct paper *p, const char *fmt, ...)
{
	char line[JOB_NAME_MAX + 128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	paper_put(p, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ---- printing ------------------------------------------------------------- */

static int64_t ns_since(const struct timespec *t0, const struct timespec *t)
{
	return (int64_t)(t->tv_sec - t0->tv_sec) * 1000000000 + (t->tv_nsec - t0->tv_nsec);
}

static void pace_on(struct pacer *pc, double lpm)
{
	pc->cycle_ns = lpm > 0 ? (int64_t)(60e9 / lpm + 0.5) : 0;
	if (lpm > 0 && pc->cycle_ns < 1)
		pc->cycle_ns = 1;
	pc->next = 1;
	clock_gettime(CLOCK_MONOTONIC, &pc->on);
}

/* Sleep until the end of the print cycle this line gets: the cycle it was
 * handed over in, or the next free one.  Deadlines are absolute, so the
 * time lost oversleeping one line is not added to the next. */
static void pace_wait(struct pacer *pc)
{
	struct timespec now, due;
	int64_t end, at;

	if (pc->cycle_ns == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	end = ns_since(&pc->on, &now) / pc->cycle_ns + 1;
	if (end < pc->next)
		end = pc->next;
	pc->next = end + 1;
	at = end * pc->cycle_ns + pc->on.tv_nsec;
	due.tv_sec = pc->on.tv_sec + (time_t)(at / 1000000000);
	due.tv_nsec = (long)(at % 1000000000);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR)
		;
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
	return h;
}

/*
 * Copy standard input to the paper line by line at the pacer's rate,
 * counting and hashing it into *job; stop at a failed write (p->err).  A
 * last line without a newline is printed as it is, then the paper
 * advances one line, so the trailer starts a line of its own.  0, or -1
 * after one line if standard input could not be read.
 */
static int print_lines(struct paper *p, struct pacer *pc, struct job *job)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ends_line = 1;

	while (p->err == 0 && (n = getline(&line, &cap, stdin)) > 0) {
		pace_wait(pc);
		paper_put(p, line, (size_t)n);
		if (pc->cycle_ns)
			paper_flush(p);
		job->lines++;
		job->bytes += (uint64_t)n;
		job->hash = fnv1a(job->hash, line, (size_t)n);
		ends_line = line[n - 1] == '\n';
	}
	free(line);
	if (p->err == 0 && ferror(stdin)) {
		say("cannot read the job from standard input: %s", strerror(errno));
		return -1;
	}
	if (!ends_line)
		paper_put(p, "\n", 1);
	return 0;
}

/* The whole job on the paper: banner, lines, trailer, form feed.  A job
 * cut short by a read error gets a trailer saying so.  0, or -1 after
 * one line. */
static int print_job(struct paper *p, const char *path, const struct options *o,
		     struct job *job)
{
	struct pacer pc;
	int rc;

	paper_printf(p, "==== job %s ====\n", o->job);
	pace_on(&pc, o->lpm);
	if (pc.cycle_ns)        /* a paced printer shows the job has begun */
		paper_flush(p);
	rc = print_lines(p, &pc, job);
	if (rc == 0)
		paper_printf(p, "==== end of %s: %" PRIu64 " lines, %" PRIu64 " bytes ====\n\f\n",
			     o->job, job->lines, job->bytes);
	else
		paper_printf(p, "==== %s cut short after %" PRIu64 " lines ====\n\f\n", o->job,
			     job->lines);
	paper_flush(p);
	if (rc == 0 && p->err != 0) {
		say("cannot write '%s': %s", path, strerror(p->err));
		rc = -1;
	}
	return rc;
}

/* The job's line in the log, in one write(): a log never holds half a line. */
static int log_job(int dir, const struct options *o, const struct job *job)
{
	char line[JOB_NAME_MAX + 160], path[4096];
	int fd = spool_open(dir, o, "log", O_WRONLY | O_APPEND), n, err = 0;

	if (fd < 0)
		return -1;
	n = snprintf(line, sizeof line, "%s %" PRIu64 " %" PRIu64 " %016" PRIx64
		     " %lld.%09ld %lld.%09ld\n", o->job, job->lines, job->bytes, job->hash,
		     (long long)job->start.tv_sec, job->start.tv_nsec,
		     (long long)job->end.tv_sec, job->end.tv_nsec);
	if (write_all(fd, line, (size_t)n) != 0)
		err = errno;
	if (close(fd) != 0 && err == 0)
		err = errno;
	if (err == 0)
		return 0;
	spool_path(path, sizeof path, o, "log", 1);
	say("cannot write '%s': %s", path, strerror(err));
	return -1;
}

/* With the printer taken: the paper, then the log.  0, or -1 after one line. */
static int print_and_log(int dir, const struct options *o)
{
	static struct paper paper;      /* static: its buffer is no stack's */
	struct job job = { .hash = FNV_OFFSET };
	char path[4096];
	int rc;

	clock_gettime(CLOCK_REALTIME, &job.start);
	spool_path(path, sizeof path, o, "paper", 1);
	paper.fd = spool_open(dir, o, "paper", O_WRONLY | O_APPEND);
	if (paper.fd < 0)
		return -1;
	rc = print_job(&paper, path, o, &job);
	if (close(paper.fd) != 0 && rc == 0) {
		say("cannot write '%s': %s", path, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &job.end);
	return log_job(dir, o, &job);
}

int main(int argc, char **argv)
{
	struct options o;
	int dir, lock, rc;

	rc = parse_options(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : EXIT_USAGE;
	dir = open(o.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		say("cannot open the spool directory '%s': %s", o.spool, strerror(errno));
		return 1;
	}
	rc = take_printer(dir, &o, &lock);
	if (rc == 0) {
		rc = print_and_log(dir, &o);
		/* Only now is the printer free again: the job and its log line
		 * are whole.  Were the process killed, its exit frees it too. */
		close(lock);
	}
	close(dir);
	if (rc == 0)
		return 0;
	return rc > 0 ? EX_TEMPFAIL : 1;
}
