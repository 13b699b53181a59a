/*
 * forkcost.c - what fork() costs against the size of the parent's setup,
 * with the setup in 4 KiB pages and in a huge-page arena.  The seeds' "fork
 * gets slower as the parent uses more memory", measured, and then fixed.
 *
 * For each size from --min-mb (64) doubling up to --max-mb or half of
 * MemAvailable, whichever is smaller, and for each kind of setup memory:
 *
 *   4k    malloc()ed, advised MADV_NOHUGEPAGE (4 KiB pages even under THP
 *         "always"), every word written;
 *   huge  from the runner's setup arena (runner/os/arena.c): 2 MiB aligned,
 *         advised MADV_HUGEPAGE, every word written;
 *
 * it forks --reps children that _exit at once (fork latency in the parent,
 * fork to the child's first instruction, fork to reaped), then --read-reps
 * children that each read the whole setup once (one 8-byte word per 64-byte
 * cache line, so every line comes from memory) and send the time back; the
 * parent reads it the same way as the baseline.  Writes one CSV row per
 * size and kind, after '#' lines describing the machine and the columns.
 *
 * Usage: forkcost [--min-mb N] [--max-mb N] [--reps R] [--read-reps R]
 *                 [--kind 4k|huge|both] [--out FILE]
 */
#define _GNU_SOURCE
#include "os/arena.h"
#include "os/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define MAX_REPS 1000

struct options {
	long min_mb, max_mb;
	int reps, read_reps;
	int do_4k, do_huge;
	const char *out;
};

/* One setup: `len` bytes at `p`, from the heap or from `arena`. */
struct setup {
	const char *kind;
	char *p;
	size_t len;
	void *heap;           /* malloc()ed block, or NULL */
	struct arena arena;   /* used when heap is NULL */
	double fill_ms;
	uint64_t sum;         /* the parent's read_setup() */
};

/* One size and kind's figures, in milliseconds (medians unless said). */
struct row {
	double fork_med, fork_min, fork_max, to_child, to_reaped;
	double child_read, parent_read;
	size_t huge, rss;
};

/* What a child sends back: when it started, how long its read took. */
struct child_report {
	uint64_t start_ns;
	uint64_t read_ns;
	uint64_t sum;
};


static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n-1] (sorts v). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The value of "Key:  N kB" in /proc/meminfo, in bytes; 0 if absent. */
static size_t meminfo(const char *key)
{
	char line[256];
	unsigned long long kb = 0;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/meminfo", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			sscanf(line + n + 1, "%llu", &kb);
			break;
		}
	fclose(f);
	return (size_t)kb * 1024;
}

/* The [selected] word of a sysfs choice file such as THP's "always
 * [madvise] never" into buf; "unavailable" if there is none. */
static const char *sysfs_choice(const char *path, char *buf, size_t size)
{
	char line[256] = "";
	FILE *f = fopen(path, "re");
	char *open, *close_;

	snprintf(buf, size, "unavailable");
	if (f == NULL)
		return buf;
	if (fgets(line, sizeof line, f) != NULL && (open = strchr(line, '[')) != NULL &&
	    (close_ = strchr(open, ']')) != NULL)
		snprintf(buf, size, "%.*s", (int)(close_ - open - 1), open + 1);
	fclose(f);
	return buf;
}

/* The CPU model from /proc/cpuinfo, or "?". */
static const char *cpu_model(char *buf, size_t size)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, size, "?");
	if (f == NULL)
		return buf;
	while (fgets(line, sizeof line, f) != NULL) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
			colon += strspn(colon + 1, " \t") + 1;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, size, "%s", colon);
			break;
		}
	}
	fclose(f);
	return buf;
}

static void write_metadata(FILE *out, const struct options *o, long max_mb)
{
	char cpu[128], thp[32], defrag[32], date[64];
	struct utsname u;
	time_t t = time(NULL);

	uname(&u);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", localtime(&t));
	fprintf(out, "# forkcost: fork() cost against setup size, 4 KiB pages vs huge-page arena\n");
	fprintf(out, "# cpu: %s\n", cpu_model(cpu, sizeof cpu));
	fprintf(out, "# cores: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(out, "# kernel: %s %s %s\n", u.sysname, u.release, u.machine);
	fprintf(out, "# thp: %s (defrag %s)\n",
		sysfs_choice("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp),
		sysfs_choice("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag));
	fprintf(out, "# memory: MemTotal %zu MiB, MemAvailable %zu MiB at start; sizes %ld..%ld MiB\n",
		meminfo("MemTotal") / MiB, meminfo("MemAvailable") / MiB, o->min_mb, max_mb);
	fprintf(out, "# date: %s\n", date);
	fprintf(out, "# reps: %d forks, %d reads per size and kind\n", o->reps, o->read_reps);
	fputs("# columns: size_mb setup size (MiB); kind 4k (malloc, MADV_NOHUGEPAGE) or huge\n"
	      "#   (arena, MADV_HUGEPAGE); fork_ms_median/min/max: fork() as the parent sees it,\n"
	      "#   child _exits at once; fork_to_child_ms: fork() call to the child's first\n"
	      "#   instruction (CLOCK_MONOTONIC sent through a pipe); fork_to_reaped_ms: fork()\n"
	      "#   return to waitpid() return (child start, exit, page-table teardown);\n"
	      "#   child_read_ms: a fresh child's first read of the whole setup, one 8-byte word\n"
	      "#   per 64-byte cache line (every line from memory), timed in the child;\n"
	      "#   parent_read_ms: the same read in the parent; child_read_gbs: size / child_read;\n"
	      "#   huge_mb / rss_mb: AnonHugePages / Rss of the setup (smaps); fill_ms: writing it.\n"
	      "#   Times are medians unless named min/max.\n", out);
	fputs("size_mb,kind,fork_ms_median,fork_ms_min,fork_ms_max,fork_to_child_ms,"
	      "fork_to_reaped_ms,child_read_ms,parent_read_ms,child_read_gbs,huge_mb,rss_mb,"
	      "fill_ms\n", out);
}

/* ---- the setup ----------------------------------------------------- */

/* Write every 8-byte word of the setup (so every page is resident). */
static void fill_setup(struct setup *s)
{
	uint64_t *w = (uint64_t *)s->p, t0 = now_ns();

	for (size_t i = 0; i < s->len / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15u;
	s->fill_ms = ms(now_ns() - t0);
}

/* Sum one 8-byte word per 64-byte cache line. */
static uint64_t read_setup(const char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t sum = 0;

	for (size_t i = 0; i < len / 8; i += 8)
		sum += w[i];
	return sum;
}

/* The 4 KiB kind: a malloc()ed block, its whole pages advised
 * MADV_NOHUGEPAGE before anything touches them. */
static int make_heap(struct setup *s, size_t len)
{
	uintptr_t lo, hi;

	s->heap = malloc(len);
	if (s->heap == NULL)
		return -1;
	s->p = s->heap;
	lo = ((uintptr_t)s->p + 4095) & ~(uintptr_t)4095;
	hi = ((uintptr_t)s->p + len) & ~(uintptr_t)4095;
	if (hi > lo && madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE) != 0)
		perror("forkcost: madvise(MADV_NOHUGEPAGE)");
	return 0;
}

/* The huge kind: the whole setup from a huge-page arena. */
static int make_huge(struct setup *s, size_t len)
{
	if (arena_init(&s->arena, len, 1) != 0)
		return -1;
	if (!s->arena.huge_advised)
		fprintf(stderr, "forkcost: huge pages not available (THP %s): "
			"'huge' rows use 4 KiB pages\n", arena_thp_name(s->arena.thp));
	s->p = arena_alloc(&s->arena, len, ARENA_STEP);
	if (s->p == NULL) {
		arena_destroy(&s->arena);
		return -1;
	}
	return 0;
}

static int setup_make(struct setup *s, const char *kind, size_t len)
{
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->len = len;
	if ((strcmp(kind, "4k") == 0 ? make_heap(s, len) : make_huge(s, len)) != 0) {
		fprintf(stderr, "forkcost: cannot allocate %zu MiB (%s): %s\n",
			len / MiB, kind, strerror(errno));
		return -1;
	}
	fill_setup(s);
	s->sum = read_setup(s->p, s->len);
	return 0;
}

static void setup_free(struct setup *s)
{
	if (s->heap != NULL)
		free(s->heap);
	else
		arena_destroy(&s->arena);
}

/* ---- the child: runs right after fork(), leaves with _exit() -------- */

/* Report the start time (taken first thing), read the setup if asked. */
static void child_main(uint64_t start_ns, int fd, const struct setup *s, int do_read)
{
	struct child_report r = { start_ns, 0, 0 };

	if (do_read) {
		uint64_t t0 = now_ns();

		r.sum = read_setup(s->p, s->len);
		r.read_ns = now_ns() - t0;
	}
	_exit(write_all(fd, &r, sizeof r) == 0 ? 0 : 1);
}

/* ---- the parent ----------------------------------------------------- */

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One measured fork: the child's report in *r; fork() time, fork return
 * to reaped in ns.  Returns 0, or -1 after a message. */
static int one_fork(const struct setup *s, int do_read, struct child_report *r,
		    uint64_t *fork_ns, uint64_t *reap_ns, uint64_t *t_call)
{
	int fds[2], status, got;
	uint64_t t0, t1;
	pid_t pid;

	if (pipe(fds) != 0) {
		perror("forkcost: pipe");
		return -1;
	}
	t0 = now_ns();
	pid = fork();
	if (pid == 0)
		child_main(now_ns(), fds[1], s, do_read);
	t1 = now_ns();
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		perror("forkcost: fork");
		return -1;
	}
	got = read_full(fds[0], r, sizeof *r);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*fork_ns = t1 - t0;
	*reap_ns = now_ns() - t1;
	*t_call = t0;
	if (got != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "forkcost: child %d failed\n", (int)pid);
		return -1;
	}
	return 0;
}

/* --reps forks whose children _exit at once. */
static int measure_forks(const struct setup *s, int reps, struct row *row)
{
	double fork_ms[MAX_REPS] = { 0 }, child_ms[MAX_REPS] = { 0 }, reap_ms[MAX_REPS] = { 0 };
	struct child_report r;
	uint64_t f, reap, t0;

	if (one_fork(s, 0, &r, &f, &reap, &t0) != 0)  /* warm-up */
		return -1;
	for (int i = 0; i < reps; i++) {
		if (one_fork(s, 0, &r, &f, &reap, &t0) != 0)
			return -1;
		fork_ms[i] = ms(f);
		child_ms[i] = ms(r.start_ns - t0);
		reap_ms[i] = ms(reap);
	}
	row->fork_med = median(fork_ms, reps);  /* sorts fork_ms */
	row->fork_min = fork_ms[0];
	row->fork_max = fork_ms[reps - 1];
	row->to_child = median(child_ms, reps);
	row->to_reaped = median(reap_ms, reps);
	return 0;
}

/* --read-reps children reading the setup, and the parent reading it. */
static int measure_reads(const struct setup *s, int reps, struct row *row)
{
	double child_ms[MAX_REPS] = { 0 }, parent_ms[MAX_REPS] = { 0 };
	struct child_report r;
	uint64_t f, reap, t0;

	for (int i = 0; i < reps; i++) {
		uint64_t sum;

		if (one_fork(s, 1, &r, &f, &reap, &t0) != 0)
			return -1;
		child_ms[i] = ms(r.read_ns);
		t0 = now_ns();
		sum = read_setup(s->p, s->len);
		parent_ms[i] = ms(now_ns() - t0);
		if (r.sum != s->sum || sum != s->sum) {
			fprintf(stderr, "forkcost: %s read a wrong sum\n",
				r.sum != s->sum ? "child" : "parent");
			return -1;
		}
	}
	row->child_read = median(child_ms, reps);
	row->parent_read = median(parent_ms, reps);
	return 0;
}

/* Measure one size and kind; print its row to `out` and a note on stderr. */
static int measure(FILE *out, const struct options *o, const char *kind, size_t len)
{
	struct setup s;
	struct row row = { 0 };
	struct arena_usage u;
	int rc = -1;

	if (setup_make(&s, kind, len) != 0)
		return -1;
	if (arena_region_usage(s.p, s.len, &u) == 0) {
		row.huge = u.anon_huge;
		row.rss = u.rss;
	}
	fflush(out);
	if (measure_forks(&s, o->reps, &row) == 0 &&
	    measure_reads(&s, o->read_reps, &row) == 0) {
		fprintf(out, "%zu,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.2f,%zu,%zu,%.1f\n",
			len / MiB, kind, row.fork_med, row.fork_min, row.fork_max,
			row.to_child, row.to_reaped, row.child_read, row.parent_read,
			(double)len / 1e6 / row.child_read, row.huge / MiB, row.rss / MiB,
			s.fill_ms);
		fflush(out);
		fprintf(stderr, "forkcost: %6zu MiB %-4s fork %8.3f ms  child read %9.2f ms  "
			"(%zu MiB huge)\n", len / MiB, kind, row.fork_med, row.child_read,
			row.huge / MiB);
		rc = 0;
	}
	setup_free(&s);
	return rc;
}

/* ---- options, main -------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("Usage: forkcost [--min-mb N] [--max-mb N] [--reps R] [--read-reps R]\n"
	      "                [--kind 4k|huge|both] [--out FILE]\n"
	      "Fork latency and a child's first read of the setup, for setup sizes from\n"
	      "--min-mb (64) doubling up to --max-mb or half of MemAvailable (the smaller),\n"
	      "with 4 KiB pages and with a huge-page arena.  CSV on stdout or FILE.\n"
	      "  --reps R        forks per size and kind, median taken (default 21)\n"
	      "  --read-reps R   reading children per size and kind (default 5)\n", f);
}

/* A whole decimal number in [lo, hi] from optarg, or exit 2. */
static long number(const char *name, const char *text, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "forkcost: --%s: '%s' is not a number in %ld..%ld\n",
			name, text, lo, hi);
		exit(2);
	}
	return v;
}

/* --kind: 4k, huge or both, or exit 2. */
static void parse_kind(const char *text, struct options *o)
{
	o->do_4k = strcmp(text, "4k") == 0 || strcmp(text, "both") == 0;
	o->do_huge = strcmp(text, "huge") == 0 || strcmp(text, "both") == 0;
	if (!o->do_4k && !o->do_huge) {
		fprintf(stderr, "forkcost: --kind: '%s' is not 4k, huge or both\n", text);
		exit(2);
	}
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{ "min-mb", required_argument, NULL, 'm' },
		{ "max-mb", required_argument, NULL, 'M' },
		{ "reps", required_argument, NULL, 'r' },
		{ "read-reps", required_argument, NULL, 'R' },
		{ "kind", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'm': o->min_mb = number("min-mb", optarg, 2, 1L << 30); break;
		case 'M': o->max_mb = number("max-mb", optarg, 2, 1L << 30); break;
		case 'r': o->reps = (int)number("reps", optarg, 1, MAX_REPS); break;
		case 'R': o->read_reps = (int)number("read-reps", optarg, 1, MAX_REPS); break;
		case 'o': o->out = optarg; break;
		case 'k': parse_kind(optarg, o); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "forkcost: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
}

/* The largest size to try: --max-mb, but at most half of MemAvailable. */
static long safe_max_mb(const struct options *o)
{
	long safe = (long)(meminfo("MemAvailable") / 2 / MiB);

	if (safe < o->min_mb) {
		fprintf(stderr, "forkcost: only %ld MiB is safe to use (half of "
			"MemAvailable): below --min-mb %ld\n", safe, o->min_mb);
		exit(1);
	}
	if (o->max_mb > safe) {
		if (o->max_mb != LONG_MAX)
			fprintf(stderr, "forkcost: --max-mb %ld lowered to %ld MiB "
				"(half of MemAvailable)\n", o->max_mb, safe);
		return safe;
	}
	return o->max_mb;
}

int main(int argc, char **argv)
{
	struct options o = { 64, LONG_MAX, 21, 5, 1, 1, NULL };
	FILE *out = stdout;
	long max_mb;
	int rc = 0;

	parse_options(argc, argv, &o);
	max_mb = safe_max_mb(&o);
	if (o.out != NULL && (out = fopen(o.out, "w")) == NULL) {
		fprintf(stderr, "forkcost: cannot write '%s': %s\n", o.out, strerror(errno));
		return 1;
	}
	write_metadata(out, &o, max_mb);
	for (long mb = o.min_mb; mb <= max_mb && rc == 0; mb *= 2) {
		if (o.do_4k && measure(out, &o, "4k", (size_t)mb * MiB) != 0)
			rc = 1;
		if (rc == 0 && o.do_huge && measure(out, &o, "huge", (size_t)mb * MiB) != 0)
			rc = 1;
	}
	if (fclose(out) != 0) {
		fprintf(stderr, "forkcost: cannot write '%s': %s\n",
			o.out ? o.out : "stdout", strerror(errno));
		rc = 1;
	}
	return rc;
}
