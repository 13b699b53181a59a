/*
 * selftest.c - a workload for testing and benchmarking the runner itself.
 *
 * Each task spins --work-us of CPU, sleeps --sleep-ms, and emits
 * --result-bytes of bytes that are a pure function of the task index;
 * merge() regenerates them and refuses any record that differs, so a
 * framing or ordering bug cannot pass unnoticed, and the summary's checksum
 * of all records in task order makes the merge order visible.  Tasks can
 * be told to crash (--crash K[:SIGNAL]), to fail (--fail K), to leave the
 * worker without finishing (--exit K: _exit(0); --call-exit K[:STATUS]:
 * exit()), or to print to stdout (--print K); to take longer than the others
 * (--slow K[:MS]) or to ignore SIGTERM while they run (--ignore-sigterm K),
 * for --timeout's SIGKILL.  --mark-start DIR makes each task's start visible
 * to a test, which can then wait for a state instead of sleeping.
 */
#define _GNU_SOURCE
#include "cowrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct selftest_config {
	long long tasks, work_us, sleep_ms, result_bytes, report_bytes, setup_mb, dirty_mb;
	const char *crash, *fail, *exit_task, *call_exit, *print, *write_shared, *slow, *ignore_sigterm,
		*mark_start, *input, *command, *fork_exec;
	int read_setup;
};

static const struct selftest_config selftest_defaults = {
	.tasks = 100, .result_bytes = 8,
};

static const struct cowrun_option selftest_options[] = {
	{ "tasks", COWRUN_OPT_INT, offsetof(struct selftest_config, tasks), 0, 1e9,
	  "N", "number of tasks" },
	{ "work-us", COWRUN_OPT_INT, offsetof(struct selftest_config, work_us), 0, 1e9,
	  "U", "spin U microseconds of CPU per task" },
	{ "sleep-ms", COWRUN_OPT_INT, offsetof(struct selftest_config, sleep_ms), 0, 1e7,
	  "M", "sleep M milliseconds per task" },
	{ "result-bytes", COWRUN_OPT_INT, offsetof(struct selftest_config, result_bytes), 0, 1LL << 34,
	  "B", "bytes in each task's result record" },
	{ "report-bytes", COWRUN_OPT_INT, offsetof(struct selftest_config, report_bytes), 0, 1LL << 34,
	  "B", "each task writes a report file of B bytes (task-NNNNNN)" },
	{ "setup-mb", COWRUN_OPT_INT, offsetof(struct selftest_config, setup_mb), 0, 1 << 20,
	  "S", "setup allocates and touches S MiB of shared memory" },
	{ "dirty-mb", COWRUN_OPT_INT, offsetof(struct selftest_config, dirty_mb), 0, 1 << 20,
	  "M", "each task writes the first M MiB of the shared setup (needs --no-freeze): COW copies" },
	{ "write-shared", COWRUN_OPT_STRING, offsetof(struct selftest_config, write_shared), 0, 0,
	  "K", "task K writes one byte of the shared setup (the freeze catches it); K may be a list" },
	{ "read-setup", COWRUN_OPT_FLAG, offsetof(struct selftest_config, read_setup), 0, 0,
	  NULL, "each task reads the whole setup memory once" },
	{ "crash", COWRUN_OPT_STRING, offsetof(struct selftest_config, crash), 0, 0,
	  "K[:SIG]", "task K raises signal SIG (default SIGSEGV); K may be a list 3,7" },
	{ "fail", COWRUN_OPT_STRING, offsetof(struct selftest_config, fail), 0, 0,
	  "K", "task K returns an error; K may be a list 3,7" },
	{ "exit", COWRUN_OPT_STRING, offsetof(struct selftest_config, exit_task), 0, 0,
	  "K", "task K ends its process with _exit(0) mid-task; K may be a list" },
	{ "call-exit", COWRUN_OPT_STRING, offsetof(struct selftest_config, call_exit), 0, 0,
	  "K[:STATUS]", "task K calls exit(STATUS) (default 3) mid-task, atexit handlers and all; K may be a list" },
	{ "print", COWRUN_OPT_STRING, offsetof(struct selftest_config, print), 0, 0,
	  "K", "task K prints a line to stdout with printf() and succeeds; K may be a list" },
	{ "slow", COWRUN_OPT_STRING, offsetof(struct selftest_config, slow), 0, 0,
	  "K[:MS]", "task K sleeps MS milliseconds (default 60000) instead of --sleep-ms; K may be a list" },
	{ "ignore-sigterm", COWRUN_OPT_STRING, offsetof(struct selftest_config, ignore_sigterm), 0, 0,
	  "K", "task K ignores SIGTERM while it runs (only SIGKILL stops it); K may be a list" },
	{ "input", COWRUN_OPT_INPUT, offsetof(struct selftest_config, input), 0, 0,
	  "FILE", "setup hashes FILE (the input a merge checks: saved results of another content never merge)" },
	{ "command", COWRUN_OPT_STRING, offsetof(struct selftest_config, command), 0, 0,
	  "CMD", "write each report through cowrun_command(CMD, COWRUN_TO_REPORT): CMD's output is the report" },
	{ "fork-exec", COWRUN_OPT_STRING, offsetof(struct selftest_config, fork_exec), 0, 0,
	  "PROG", "after its report, each task runs PROG by fork() and exec() (the old way: the bench's baseline)" },
	{ "mark-start", COWRUN_OPT_STRING, offsetof(struct selftest_config, mark_start), 0, 0,
	  "DIR", "each task first creates the empty file DIR/task-NNNNNN.PID (PID: its process)" },
	{ 0 },
};

/* What a task should do besides its normal work. */
enum task_fate { FATE_NORMAL = 0, FATE_CRASH, FATE_FAIL, FATE_EXIT, FATE_WRITE_SHARED, FATE_CALL_EXIT,
		 FATE_PRINT };

/* How a task runs, whatever its fate: bits, any combination. */
enum task_quirk { QUIRK_SLOW = 1, QUIRK_IGNORE_SIGTERM = 2 };

struct selftest_state {
	struct selftest_config cfg;
	unsigned char *fate;   /* per task: enum task_fate */
	unsigned char *quirks; /* per task: enum task_quirk bits */
	int crash_signal;
	int exit_status;       /* --call-exit's STATUS */
	long long slow_ms;     /* --slow's MS */
	unsigned char *setup;  /* --setup-mb of touched memory */
	size_t setup_bytes;
	uint64_t checksum;     /* parent only */
	unsigned long long merged, merged_bytes;
	struct selftest_context {
		char magic[8];       /* "selftst1" */
		uint64_t input_hash; /* of --input's bytes; 0 without */
	} context;             /* merge_context(): all a merge needs besides argv */
};

/* splitmix64: a record's bytes are a pure function of (task, position). */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Bytes [off, off + len) of task k's record; off is a multiple of 8. */
static void fill_record(unsigned char *buf, size_t len, size_t k, size_t off)
{
	uint64_t seed = mix(k);

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = mix(seed + off + i);
		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* Signal number from "SEGV", "SIGSEGV" or "11"; -1 if unknown. */
static int parse_signal(const char *name)
{
	char *end;
	long number = strtol(name, &end, 10);

	if (end != name && *end == '\0')
		return number > 0 && number < NSIG ? (int)number : -1;
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && strcasecmp(abbrev, name) == 0)
			return sig;
	}
	return -1;
}

/* Mark the tasks in `list` ("3,7,12") in `marks`: set to `value`, or with
 * `add_bits`, or'ed in.  Returns 0 or -1 after a message naming the option. */
static int mark_list(struct selftest_state *s, const char *option, const char *list,
		     unsigned char *marks, unsigned char value, int add_bits)
{
	const char *p = list;

	for (;;) {
		char *end;
		long long k = strtoll(p, &end, 10);
		if (end == p || k < 0 || (*end != ',' && *end != '\0')) {
			cowrun_error("--%s: '%s' is not a task number list", option, list);
			return -1;
		}
		if (k >= s->cfg.tasks) {
			cowrun_error("--%s: task %lld does not exist (--tasks %lld)",
				     option, k, s->cfg.tasks);
			return -1;
		}
		marks[k] = add_bits ? (unsigned char)(marks[k] | value) : value;
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

static int mark_tasks(struct selftest_state *s, const char *option,
		      const char *list, enum task_fate fate)
{
	return mark_list(s, option, list, s->fate, (unsigned char)fate, 0);
}

/* Split "K[,K...][:SUFFIX]" into list (size 256) and *suffix (NULL if
 * none).  Returns 0 or -1 after a message naming the option. */
static int split_spec(const char *option, const char *spec, char list[256], const char **suffix)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

	if (len >= 256) {
		cowrun_error("--%s: task list too long", option);
		return -1;
	}
	memcpy(list, spec, len);
	list[len] = '\0';
	*suffix = colon ? colon + 1 : NULL;
	return 0;
}

/* --crash K[,K...][:SIG] */
static int parse_crash(struct selftest_state *s, const char *spec)
{
	char list[256];
	const char *sig;

	if (split_spec("crash", spec, list, &sig) != 0)
		return -1;
	s->crash_signal = SIGSEGV;
	if (sig && (s->crash_signal = parse_signal(sig)) < 0) {
		cowrun_error("--crash: unknown signal '%s'", sig);
		return -1;
	}
	return mark_tasks(s, "crash", list, FATE_CRASH);
}

/* "K[,K...][:N]": the task list into `list`, N (or `dflt` without one)
 * into *n, which must lie in min..max; `what` names N in the message.
 * Returns 0 or -1 after one line naming the option. */
static int split_number(const char *option, const char *spec, char list[256], long long dflt,
			long long min, long long max, const char *what, long long *n)
{
	const char *text;
	char *end;

	if (split_spec(option, spec, list, &text) != 0)
		return -1;
	*n = dflt;
	if (text == NULL)
		return 0;
	errno = 0;
	*n = strtoll(text, &end, 10);
	if (end == text || *end != '\0' || errno || *n < min || *n > max) {
		cowrun_error("--%s: '%s' is not %s (%lld-%lld)", option, text, what, min, max);
		return -1;
	}
	return 0;
}

/* --call-exit K[,K...][:STATUS] */
static int parse_call_exit(struct selftest_state *s, const char *spec)
{
	char list[256];
	long long status;

	if (split_number("call-exit", spec, list, 3, 0, 255, "an exit status", &status) != 0)
		return -1;
	s->exit_status = (int)status;
	return mark_tasks(s, "call-exit", list, FATE_CALL_EXIT);
}

/* --slow K[,K...][:MS] */
static int parse_slow(struct selftest_state *s, const char *spec)
{
	char list[256];

	if (split_number("slow", spec, list, 60000, 0, 10000000, "a number of milliseconds",
			 &s->slow_ms) != 0)
		return -1;
	return mark_list(s, "slow", list, s->quirks, QUIRK_SLOW, 1);
}

/* --slow and --ignore-sigterm: how the listed tasks run. */
static int parse_quirks(struct selftest_state *s)
{
	if (s->cfg.slow && parse_slow(s, s->cfg.slow) != 0)
		return -1;
	if (s->cfg.ignore_sigterm &&
	    mark_list(s, "ignore-sigterm", s->cfg.ignore_sigterm, s->quirks,
		      QUIRK_IGNORE_SIGTERM, 1) != 0)
		return -1;
	return 0;
}

/* --mark-start DIR: made here (one level), so a bad DIR is a setup error. */
static int make_mark_dir(const char *dir)
{
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		cowrun_error("--mark-start: cannot create '%s': %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int parse_fates(struct selftest_state *s)
{
	if (s->cfg.crash && parse_crash(s, s->cfg.crash) != 0)
		return -1;
	if (s->cfg.fail && mark_tasks(s, "fail", s->cfg.fail, FATE_FAIL) != 0)
		return -1;
	if (s->cfg.exit_task && mark_tasks(s, "exit", s->cfg.exit_task, FATE_EXIT) != 0)
		return -1;
	if (s->cfg.call_exit && parse_call_exit(s, s->cfg.call_exit) != 0)
		return -1;
	if (s->cfg.print && mark_tasks(s, "print", s->cfg.print, FATE_PRINT) != 0)
		return -1;
	if (s->cfg.write_shared &&
	    mark_tasks(s, "write-shared", s->cfg.write_shared, FATE_WRITE_SHARED) != 0)
		return -1;
	if (s->cfg.dirty_mb > s->cfg.setup_mb) {
		cowrun_error("--dirty-mb %lld is more than --setup-mb %lld", s->cfg.dirty_mb,
			     s->cfg.setup_mb);
		return -1;
	}
	return 0;
}

/* Allocate and touch --setup-mb, so the memory is really there to share. */
/* One MiB of the setup memory: cowrun_parallel()'s block. */
static int touch_block(void *ctx, size_t block, unsigned thread)
{
	struct selftest_state *s = ctx;

	(void)thread;
	for (size_t i = block << 20; i < (block + 1) << 20; i++)
		s->setup[i] = (unsigned char)(i * 31 + 7);
	return 0;
}

/* --setup-mb, filled on the setup threads (the same bytes at any count). */
static int touch_setup(struct selftest_state *s)
{
	s->setup_bytes = (size_t)s->cfg.setup_mb << 20;
	if (s->setup_bytes == 0)
		return 0;
	s->setup = cowrun_alloc(s->setup_bytes);
	if (s->setup == NULL) {
		cowrun_error("cannot allocate --setup-mb %lld", s->cfg.setup_mb);
		return -1;
	}
	return cowrun_parallel((size_t)s->cfg.setup_mb, touch_block, s);
}

/* --input: the hash of the file's bytes, into the merge context. */
static int hash_input(struct selftest_state *s)
{
	FILE *f = fopen(s->cfg.input, "rb");
	char buf[65536];
	size_t n;
	uint64_t h = 0;

	if (f == NULL) {
		cowrun_error("cannot read '%s': %s", s->cfg.input, strerror(errno));
		return -1;
	}
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		h = cowrun_hash64(buf, n, h);
	int failed = ferror(f);
	fclose(f);
	if (failed) {
		cowrun_error("cannot read '%s'", s->cfg.input);
		return -1;
	}
	s->context.input_hash = h;
	return 0;
}

static void selftest_teardown(void *state)
{
	struct selftest_state *s = state;

	if (s) {
		free(s);
	}
}

/* The state with its options parsed: what setup and merge_setup share. */
static struct selftest_state *new_state(int argc, char **argv)
{
	struct selftest_state *s = calloc(1, sizeof *s);

	if (s == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	s->cfg = selftest_defaults;
	memcpy(s->context.magic, "selftst1", sizeof s->context.magic);
	if (cowrun_parse_options(argc, argv, selftest_options, &s->cfg) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

static void *selftest_setup(int argc, char **argv)
{
	struct selftest_state *s = new_state(argc, argv);

	if (s == NULL)
		return NULL;
	if (s->cfg.input && hash_input(s) != 0)
		goto fail;
	s->fate = cowrun_alloc((size_t)s->cfg.tasks + 1);
	if (s->fate == NULL) {
		cowrun_error("out of memory for %lld tasks", s->cfg.tasks);
		goto fail;
	}
	s->quirks = cowrun_alloc((size_t)s->cfg.tasks + 1);
	if (s->quirks == NULL) {
		cowrun_error("out of memory for %lld tasks", s->cfg.tasks);
		goto fail;
	}
	if (parse_fates(s) != 0 || parse_quirks(s) != 0 || touch_setup(s) != 0)
		goto fail;
	if (s->cfg.mark_start && make_mark_dir(s->cfg.mark_start) != 0)
		goto fail;
	return s;
fail:
	selftest_teardown(s);
	return NULL;
}

static size_t selftest_ntasks(const void *state)
{
	return (size_t)((const struct selftest_state *)state)->cfg.tasks;
}

static void selftest_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "task-%06zu", k);
}

/* Burn `us` microseconds of this thread's CPU time. */
static void spin(long long us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000LL + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* Read every byte of the shared setup once; the sum keeps it from being
 * optimised away. */
static unsigned read_setup(const struct selftest_state *s)
{
	unsigned sum = 0;

	for (size_t i = 0; i < s->setup_bytes; i += 64)
		sum += s->setup[i];
	return sum;
}

/* A report of `bytes` bytes in 64-byte lines; crashes and exits come
 * after it, so a crashed task leaves a half-made temporary file behind. */
static int write_report(struct cowrun_task *task, size_t k, long long bytes, const char *command)
{
	FILE *f = command ? cowrun_command(task, command, COWRUN_TO_REPORT) : cowrun_report(task);

	if (f == NULL)
		return -1;
	for (long long done = 0; done < bytes; done += 64) {
		char line[65];
		size_t n = bytes - done < 64 ? (size_t)(bytes - done) : 64;
		/* 63 visible characters and a newline; the last line may be cut. */
		snprintf(line, sizeof line, "task %-14zu byte %-38lld\n", k, done);
		fwrite(line, 1, n, f);
	}
	return 0;
}

/* --fork-exec PROG: run PROG (standard input and output /dev/null) the
 * way a workload did before cowrun_command(): fork() copies this worker's
 * page tables, the whole setup's, for one exec().  Returns 0 or -1 after
 * cowrun_task_error(). */
static int fork_exec(struct cowrun_task *task, const char *prog)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
			_exit(126);
		execlp(prog, prog, (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		cowrun_task_error(task, "--fork-exec: fork: %s", strerror(errno));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			cowrun_task_error(task, "--fork-exec: waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		cowrun_task_error(task, "--fork-exec: '%s' failed (wait status %d)", prog, status);
		return -1;
	}
	return 0;
}

/* --mark-start: the empty file DIR/task-NNNNNN.PID says task k has begun
 * in process PID.  Returns 0 or -1 after cowrun_task_error(). */
static int mark_start(const struct selftest_state *s, size_t k, struct cowrun_task *task)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof path, "%s/task-%06zu.%ld", s->cfg.mark_start, k, (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		cowrun_task_error(task, "cannot create '%s': %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* Sleep ms milliseconds, whatever signals arrive meanwhile. */
static void sleep_ms(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* The task's own time: --work-us, then --sleep-ms (or --slow's MS), with
 * SIGTERM ignored throughout for --ignore-sigterm, then restored: the
 * worker's next task gets the disposition it had.  (A disposition belongs
 * to the process: under --mode omp, --ignore-sigterm affects every thread.) */
static void spend_time(const struct selftest_state *s, size_t k)
{
	int ignore = s->quirks[k] & QUIRK_IGNORE_SIGTERM;
	struct sigaction ign = { .sa_handler = SIG_IGN }, saved;

	if (ignore)
		sigaction(SIGTERM, &ign, &saved);
	if (s->cfg.work_us > 0)
		spin(s->cfg.work_us);
	long long ms = s->quirks[k] & QUIRK_SLOW ? s->slow_ms : s->cfg.sleep_ms;
	if (ms > 0)
		sleep_ms(ms);
	if (ignore)
		sigaction(SIGTERM, &saved, NULL);
}

static int selftest_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct selftest_state *s = state;
	unsigned char piece[4096];
	size_t len = (size_t)s->cfg.result_bytes;

	if (s->cfg.mark_start && mark_start(s, k, task) != 0)
		return -1;
	spend_time(s, k);
	if (s->cfg.read_setup) {
		unsigned sum = read_setup(s);
		__asm__ volatile("" : : "r"(sum)); /* keep the reads */
	}
	if (s->cfg.report_bytes > 0 &&
	    write_report(task, k, s->cfg.report_bytes, s->cfg.command) != 0)
		return -1;
	if (s->cfg.fork_exec && fork_exec(task, s->cfg.fork_exec) != 0)
		return -1;
	if (s->cfg.dirty_mb > 0) /* deliberately un-share: copy-on-write */
		memset(s->setup, (int)(k & 0xff), (size_t)s->cfg.dirty_mb << 20);
	switch (s->fate[k]) {
	case FATE_CRASH: raise(s->crash_signal); break;
	case FATE_WRITE_SHARED:
		/* A bug on purpose: shared setup memory is not the task's. */
		if (s->setup_bytes)
			s->setup[(k * 4096) % s->setup_bytes] ^= 1;
		else
			s->fate[k] = FATE_NORMAL;
		break;
	case FATE_EXIT: _exit(0);
	case FATE_CALL_EXIT: exit(s->exit_status);
	case FATE_PRINT:
		/* Buffered on purpose: the runner must flush it (to stderr). */
		printf("selftest: task %zu printed this to stdout\n", k);
		break;
	case FATE_FAIL:
		cowrun_task_error(task, "failed on purpose (--fail %zu)", k);
		return -1;
	default: break;
	}
	/* Emit in pieces: a huge record needs no second huge buffer here. */
	for (size_t off = 0; off < len; off += sizeof piece) {
		size_t n = len - off < sizeof piece ? len - off : sizeof piece;
		fill_record(piece, n, k, off);
		if (cowrun_emit(task, piece, n) != 0)
			return -1;
	}
	return 0;
}

static int selftest_merge(void *state, size_t k, const void *record, size_t len)
{
	struct selftest_state *s = state;
	const unsigned char *got = record;
	unsigned char want[4096];
	uint64_t h = mix(s->checksum ^ k);

	if (len != (size_t)s->cfg.result_bytes) {
		cowrun_error("task %zu: record of %zu bytes, expected %lld", k, len, s->cfg.result_bytes);
		return -1;
	}
	for (size_t off = 0; off < len; off += sizeof want) {
		size_t n = len - off < sizeof want ? len - off : sizeof want;
		fill_record(want, n, k, off);
		/* n >= 1 (off < len): cppcheck's range analysis takes it for 0 */
		// cppcheck-suppress knownConditionTrueFalse
		for (size_t i = 0; i < n; i += 8) {
			uint64_t v = 0;
			// cppcheck-suppress knownConditionTrueFalse
			memcpy(&v, want + i, n - i < 8 ? n - i : 8);
			h = mix(h ^ v);
		}
		if (memcmp(want, got + off, n) != 0) {
			cowrun_error("task %zu: record differs from the expected bytes near offset %zu", k, off);
			return -1;
		}
	}
	s->checksum = h;
	s->merged++;
	s->merged_bytes += len;
	return 0;
}

static int selftest_finish(void *state, FILE *out)
{
	const struct selftest_state *s = state;

	fprintf(out, "tasks %llu of %lld merged, %llu result bytes, checksum %016llx\n",
		s->merged, s->cfg.tasks, s->merged_bytes, (unsigned long long)s->checksum);
	return 0;
}

static const void *selftest_merge_context(const void *state, size_t *len)
{
	const struct selftest_state *s = state;

	*len = sizeof s->context;
	return &s->context;
}

/* --merge: the options and the saved context; no setup memory touched, no
 * input read. */
static void *selftest_merge_setup(int argc, char **argv, const void *context, size_t len)
{
	struct selftest_state *s = new_state(argc, argv);

	if (s == NULL)
		return NULL;
	if (len != sizeof s->context || memcmp(context, "selftst1", 8) != 0) {
		cowrun_error("malformed merge context (%zu bytes)", len);
		free(s);
		return NULL;
	}
	memcpy(&s->context, context, len);
	return s;
}

/* The task lists' checks (--crash, --slow, ...), as the setup makes them,
 * on marks of the heap freed at once: 0, or -1 after one line. */
static int check_task_lists(struct selftest_state *s)
{
	int rc = -1;

	s->fate = calloc((size_t)s->cfg.tasks + 1, 1);
	s->quirks = calloc((size_t)s->cfg.tasks + 1, 1);
	if (s->fate == NULL || s->quirks == NULL)
		cowrun_error("out of memory for %lld tasks", s->cfg.tasks);
	else if (parse_fates(s) == 0 && parse_quirks(s) == 0)
		rc = 0;
	free(s->fate);
	free(s->quirks);
	s->fate = s->quirks = NULL;
	return rc;
}

/* --dry-run: the tasks are named from the options alone, which are
 * checked as the setup checks them (nothing hashed, no directory made). */
static void *selftest_plan(int argc, char **argv)
{
	struct selftest_state *s = new_state(argc, argv);

	if (s != NULL && check_task_lists(s) != 0) {
		selftest_teardown(s);
		return NULL;
	}
	return s;
}

const struct cowrun_workload cowrun_workload_selftest = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "selftest",
	.summary = "synthetic tasks for testing and benchmarking the runner",
	.description =
		"Each task spins, sleeps and emits a record whose bytes are a pure function\n"
		"of its index; merge() verifies every byte and the summary is a checksum of\n"
		"all records in task order.  Tasks can be made to crash, fail or exit, to be\n"
		"slow or to ignore SIGTERM, and to mark their start for a test to wait on.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = selftest_options,
	.defaults = &selftest_defaults,
	.setup = selftest_setup,
	.ntasks = selftest_ntasks,
	.task_name = selftest_task_name,
	.run = selftest_run,
	.merge = selftest_merge,
	.finish = selftest_finish,
	.teardown = selftest_teardown,
	.merge_context = selftest_merge_context,
	.merge_setup = selftest_merge_setup,
	.plan = selftest_plan,
};
