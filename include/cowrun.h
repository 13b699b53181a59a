/*
 * cowrun.h - the workload contract: the only runner header a workload includes.
 *
 * A workload is one `struct cowrun_workload`.  The runner calls its members in
 * this order, and in these processes:
 *
 *   parent:  setup() once            builds the shared, read-only state,
 *                                    on the run's setup threads where it
 *                                    calls cowrun_parallel()
 *   parent:  ntasks(), task_name()   sizes and names the batch
 *   worker:  run(state, k, task)     once per task, in a forked child (fork
 *                                    mode), the process that merges (serial
 *                                    mode) or an OpenMP thread in it (omp
 *                                    mode); see run() for what it must not do
 *   parent:  merge(state, k, rec)    once per successful task, in task order
 *   parent:  finish(state, stdout)   the final summary
 *   parent:  teardown(state)         frees what setup built
 *
 * The state setup returns is shared with every worker copy-on-write: run()
 * must only read it, and never what merge() writes (the state rule, at
 * run() below).  Anything merge() and finish() accumulate must live in
 * memory the workers never touch (so a worker never copies it).
 *
 * Task boundaries must not depend on the number of workers: results must be
 * byte-identical at every -j and in every mode.
 */
#ifndef COWRUN_H
#define COWRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bumped whenever this header changes; a loaded plugin built for another
 * value is refused, except ABI 1 and 2: their structs are prefixes of
 * today's, and the members added since count as absent.
 * ABI 2 added cowrun_parallel(), cowrun_setup_threads(), cowrun_hash64(),
 * cowrun_fmt_count() and the members merge_context and merge_setup.
 * ABI 3 added the option types COWRUN_OPT_INPUT, COWRUN_OPT_TUNING and
 * COWRUN_OPT_NOT_INPUT, cowrun_input_hash(), and the member plan.
 * ABI 4 added the flags COWRUN_OWN_ARGV and COWRUN_NO_THREADS,
 * cowrun_input() and cowrun_verbosity(), and from cowrun 0.5.1 on
 * cowrun_command() (the round's one bump, shared), then
 * cowrun_run_seed(), cowrun_task_seed(), cowrun_seed_mix() and
 * cowrun_tasks_per_worker(), then cowrun_setup_forked(), then
 * cowrun_setup_threaded() (new functions only: a plugin built before
 * loads as it is); the struct is ABI 3's,
 * so ABI 3 plugins load as they are.  Results and journals record the workload's
 * ABI: a resume or merge across it is refused, naming both. */
#define COWRUN_ABI_VERSION 4

/* Workload flags. */
enum {
	/* run() uses global or static state: fine in a forked worker, wrong in
	 * a thread.  OpenMP mode refuses such a workload. */
	COWRUN_NOT_THREAD_SAFE = 1u << 0,
	/* Tasks write report files: the runner creates the output directory. */
	COWRUN_WRITES_REPORTS = 1u << 1,
	/* (ABI 4) setup() parses argv itself (a script and its arguments):
	 * the workload has no option table, and the runner passes argv as
	 * given.  Its inputs: argv[1] always, and every later argument that
	 * names an existing regular file (or "--name=VALUE" whose VALUE does)
	 * is guessed to be one, unless `cowrun --not-input ARG` gives its
	 * text; more with cowrun_input(). */
	COWRUN_OWN_ARGV = 1u << 2,
	/* (ABI 4) run() must never run on a thread of the runner's (an
	 * embedded interpreter with a lock of its own): --mode omp is
	 * refused, even with --force. */
	COWRUN_NO_THREADS = 1u << 3,
};

/* Longest task name, including the terminating NUL. */
#define COWRUN_NAME_MAX 128

/* Opaque: one task being run.  Valid only during the run() call it is
 * passed to, and only in the thread or process that run() executes in. */
struct cowrun_task;

/* ---- workload options -------------------------------------------------
 * A declarative option table, so every workload parses its options the same
 * way and `cowrun WORKLOAD --help` can print them with their defaults.
 *
 * The table also tells the runner what a run's results depend on, so that
 * --resume and --merge never mix the results of two different inputs:
 *
 *   - An option of type COWRUN_OPT_INPUT names a file setup() reads.  The
 *     runner records its identity (size, a content hash, and its canonical
 *     path, device, inode and modification time) with the saved results
 *     and in the journal: --resume refuses a file that changed in any of
 *     these since the interrupted run, --merge refuses results saved from
 *     files of another size or content, each in one line naming the file.
 *     The same file under another spelling (relative, absolute, through a
 *     symbolic link) is the same input.
 *   - COWRUN_OPT_TUNING, OR'd into a type, marks an option that changes no
 *     result (a thread hint, a buffer size): it is left out of the results'
 *     identity, so a resume or a merge may change it.
 *   - Every other option's text is compared as given.
 *
 * A table that declares no COWRUN_OPT_INPUT (every table written before
 * ABI 3) is not trusted to read nothing: the value of each of its STRING
 * options that names an existing regular file is taken as an input, unless
 * the option is flagged COWRUN_OPT_NOT_INPUT (or TUNING), or the user says
 * `cowrun --not-input NAME`. */

enum cowrun_option_type {
	COWRUN_OPT_END = 0, /* terminates a table */
	COWRUN_OPT_INT,     /* long long, bounded by min..max */
	COWRUN_OPT_DOUBLE,  /* double, bounded by min..max */
	COWRUN_OPT_STRING,  /* const char *, points into argv */
	COWRUN_OPT_FLAG,    /* int, set to 1 when the option is given */
	COWRUN_OPT_INPUT,   /* (ABI 3) const char *, as STRING: the path of a
			     * file setup() reads (see above) */

	/* (ABI 3) Flags OR'd into one of the types above. */
	COWRUN_OPT_TUNING = 1 << 8,    /* changes no result: not in the identity */
	COWRUN_OPT_NOT_INPUT = 1 << 9, /* a STRING naming no input (an output
					* file, a label): never taken for one */
};

/* The type of a table entry without its flags. */
#define COWRUN_OPT_KIND(type) ((type) & 0xff)

struct cowrun_option {
	const char *name;             /* long name without the leading "--" */
	enum cowrun_option_type type;
	size_t offset;                /* offsetof() the field in the config */
	double min, max;              /* bounds for INT and DOUBLE */
	const char *argname;          /* e.g. "N", "FILE"; NULL for FLAG */
	const char *help;             /* one line */
};

/*
 * Parse argv[1..argc-1] (argv[0] is the workload name) against `options`
 * into `config`, which already holds the defaults.  On a bad option or
 * value, prints one line on stderr naming it and the reason, and returns
 * -1; otherwise 0.  String values point into argv (they live as long as the
 * process).  Safe to call from setup() only.
 */
int cowrun_parse_options(int argc, char **argv,
			 const struct cowrun_option *options, void *config);

/* ---- the setup arena ----------------------------------------------------
 * Memory for the shared state, for setup() to allocate from.  It is one
 * region, 2 MiB aligned and advised MADV_HUGEPAGE (unless --no-huge-pages),
 * so fork() copies few page-table entries and workers read it fast; it
 * grows as setup allocates, without a size known in advance.  After setup
 * the runner makes it read-only (unless --no-freeze): a worker that writes
 * to it stops with an error naming the task and the offset, instead of
 * silently copying shared memory.  Hence: nothing that merge() or finish()
 * writes may live here.  The runner frees it at exit; never free() it.
 * Every allocation starts zero-filled.  All return NULL (errno ENOMEM) when
 * the reservation is exhausted or after setup.
 */
void *cowrun_alloc(size_t size);
void *cowrun_alloc_aligned(size_t size, size_t align); /* align: a power of two */
char *cowrun_strdup(const char *s);
void *cowrun_memdup(const void *p, size_t size);

/* ---- parallel setup ------------------------------------------------------
 * A nightly load phase (read and parse the day's data, build its indexes)
 * need not run on one core.  setup() splits such work into blocks and hands
 * them to cowrun_parallel(), which runs them on the run's setup threads:
 * as many as -j says, at most the usable CPUs; one in --mode serial and in
 * each job of a GNU Parallel run.  The runner decides; setup() never sees -j.
 *
 * Results must not depend on the thread count: make the blocks fixed by the
 * input (so many rows, so many bytes ending at a line break), never by the
 * number of threads, and give a generator's block its own random stream
 * seeded from the block number.  Then a run's output is byte-identical at
 * every -j and in every mode.
 *
 * The threads are created and joined inside each call: none exists when it
 * returns, so the runner forks a single-threaded parent.  Inside `fn`,
 * cowrun_alloc() and friends are safe (they take a lock: allocate in large
 * pieces, e.g. size first, then fill disjoint parts of one allocation), and
 * so is cowrun_error(), though lines from different blocks come in any
 * order: to report "the first bad line", keep each block's error in its own
 * memory and print the lowest block's after the call.
 */

/* The number of threads cowrun_parallel() uses (1 or more).  For sizing
 * per-thread scratch memory. */
unsigned cowrun_setup_threads(void);

/* fn(ctx, block, thread) for one block: `thread` (0 .. threads-1) says which
 * thread runs it, for per-thread scratch.  Returns 0, or -1 to stop. */
typedef int (*cowrun_block_fn)(void *ctx, size_t block, unsigned thread);

/*
 * Run fn for every block 0 .. nblocks-1 on the setup threads (the calling
 * thread is one of them) and return when all have finished.  Blocks start
 * in increasing order.  Once a block fails, no block above it starts, while
 * every block below it still runs: the failure with the lowest block number
 * is always among those found.  Returns 0 if every block returned 0, else
 * -1.  Only from setup() or merge_setup(), never from run().
 */
int cowrun_parallel(size_t nblocks, cowrun_block_fn fn, void *ctx);

/* (ABI 4, a new function: a plugin built before loads as it is.)  From
 * setup() or merge_setup(): the setup ran its blocks in `processes`
 * processes of its own at once (forks that the workload made and reaped
 * itself: cowrun python's cowrun.parallel()), not on cowrun_parallel()'s
 * threads.  For -v, which says what a setup really used: the widest such
 * call counts. */
void cowrun_setup_forked(unsigned processes);

/* (ABI 4, a new function: a plugin built before loads as it is.)  From
 * setup() or merge_setup(): the setup ran on up to `threads` threads of
 * its libraries' own (data.table's, OpenMP's: cowrun r sets their counts
 * from cowrun_setup_threads()), not on cowrun_parallel()'s.  For -v, as
 * cowrun_setup_forked(): the widest such call counts. */
void cowrun_setup_threaded(unsigned threads);

/* A 64-bit hash of len bytes (XXH3, the one cowrun checksums saved results
 * with): fast enough to hash an input file while reading it.  Combine the
 * hashes of fixed blocks in order to hash a file read in parallel. */
uint64_t cowrun_hash64(const void *data, size_t len, uint64_t seed);

/* ---- an input's content hash (ABI 3) ------------------------------------
 * The runner hashes every input file (COWRUN_OPT_INPUT, see the options
 * above) after setup(), on the setup threads, as
 *
 *     block[i] = cowrun_hash64(bytes [i * COWRUN_INPUT_BLOCK, (i + 1) *
 *                              COWRUN_INPUT_BLOCK) of the file, len, 0)
 *     hash     = cowrun_hash64(block, nblocks * sizeof(uint64_t), file size)
 *
 * A setup() that already reads the whole file and hashes it this way (the
 * blocks fixed by the file, so at any thread count) can hand the hash over
 * with cowrun_input_hash() and spare the runner reading the file again. */
#define COWRUN_INPUT_BLOCK ((size_t)4 << 20)

/* From setup(): the content of the file open on `fd`, as it is now, has
 * the hash above.  The runner takes it for the input whose device, inode,
 * size and modification time are fd's when setup() returns; any other
 * file's is ignored.  Safe from the setup threads. */
void cowrun_input_hash(int fd, uint64_t hash);

/* ---- inputs only the setup knows (ABI 4) --------------------------------
 * From setup(), before it reads the file: `path` is an input of this run,
 * beside those its arguments name.  Its identity is recorded as an
 * argument's is, so --resume refuses the file changed and --merge refuses
 * results saved from another.  But the runner learns of it only during the
 * setup: a --resume refuses such a file once the setup has run, where an
 * input its arguments name is refused before.  A merge without setup
 * (merge_setup) takes these inputs as the results saved them.  Returns 0,
 * or -1 after a message (called outside setup(), more than 256 files). */
int cowrun_input(const char *path);

/* ---- what a workload calls ------------------------------------------- */

/* How verbose the run is: 0, or 1 for -v.  (ABI 4.) */
int cowrun_verbosity(void);

/* In a worker, the run's --tasks-per-worker quota: how many tasks this
 * process runs before it leaves and a fresh fork of the parent takes its
 * place; 0 when there is none (and outside a fork-mode worker).  With 1,
 * every task sees the state as the parent holds it, whatever an earlier
 * task changed: a workload may then skip its checks for changed state.
 * (ABI 4, as the seeds below.) */
unsigned long long cowrun_tasks_per_worker(void);
/* ---- seeds (ABI 4) --------------------------------------------------------
 * Random draws that repeat: the same at every -j, in every mode, across
 * separate runs, shards, retries and resumes.  The run has one seed,
 * `cowrun --seed N` (0 when not given), recorded with saved results and
 * in the journal: --merge and --resume refuse another.  Each task's seed
 * is derived from it and the task's index (never the worker, the slot or
 * the attempt), so a task draws the same numbers wherever and however
 * often it runs.
 *
 * cowrun_seed_mix(seed, n) is SplitMix64's output n + 1 from state seed:
 * distinct for distinct n, unrelated for neighbouring n or seeds.  Use
 * it for a setup block's stream (cowrun_seed_mix(cowrun_run_seed(),
 * block)) or a second stream of a task (from its task seed). */
uint64_t cowrun_run_seed(void);
uint64_t cowrun_seed_mix(uint64_t seed, uint64_t n);

/* In run(): task k's seed, cowrun_seed_mix(cowrun_run_seed(), k). */
uint64_t cowrun_task_seed(const struct cowrun_task *task);


/* v with thousands separators, "-1,234,567", into buf (32 bytes always
 * fit), locale-free, so reports are byte-identical everywhere.  Returns
 * buf.  (ABI 2.) */
const char *cowrun_fmt_count(char *buf, size_t size, int64_t v);

/*
 * Print "cowrun: WORKLOAD: <message>" on stderr.  For setup(), merge() and
 * finish() errors.  Inside run(), use cowrun_task_error() instead so the
 * message reaches the parent and names the task.
 */
void cowrun_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The report file of this task: OUTDIR/<task_name>.  The text goes to a
 * temporary file in OUTDIR that the runner fsyncs and renames to its final
 * name only if run() returns 0 and every write succeeded; otherwise it is
 * removed.  The runner owns the FILE: do not fclose it.  Returns NULL (after
 * cowrun_task_error) if the file cannot be created; run() should then
 * return -1.  Only for workloads flagged COWRUN_WRITES_REPORTS.
 */
FILE *cowrun_report(struct cowrun_task *task);

/*
 * Start command `cmd` for this task and return a stream to its standard
 * input (ABI 4): what a workload uses instead of popen(), with the rules
 * of --report-filter and --report-to.  `cmd` takes their replacement
 * strings ({/} the report's file name, {#} the task's number from 1, {%}
 * the worker's slot from 1; {} is refused, as no complete report exists
 * while this command writes it; a '|' pipeline is refused: /bin/sh has no
 * pipefail) and runs directly, or under /bin/sh -c when it
 * has shell syntax, values shell-quoted.  It is spawned, never forked
 * (its cost does not grow with the setup), with default signals, and dies
 * with the task (--timeout, --halt now).
 *
 *   COWRUN_TO_REPORT  its standard output is this task's report, kept as
 *                     cowrun_report()'s is (then write only to the stream)
 *   COWRUN_TO_STDERR  its standard output goes to standard error (a
 *                     printer, a mailer: it sees the text as it is
 *                     written; --report-to sends only whole reports)
 *
 * When run() returns 0 the runner closes the stream and waits: the task
 * fails if the command exits non-zero or is killed, naming it and the
 * last line of its stderr.  When run() fails the command is killed.  One
 * command per task; do not fclose the stream.  Returns NULL (after
 * cowrun_task_error) if it cannot start; run() should then return -1.
 */
#define COWRUN_TO_REPORT 0
#define COWRUN_TO_STDERR 1
FILE *cowrun_command(struct cowrun_task *task, const char *cmd, int how);

/*
 * Append `len` bytes to this task's result record, the bytes the parent's
 * merge() receives.  May be called several times; the record is sent only
 * if run() returns 0.  Returns 0, or -1 if memory ran out.
 */
int cowrun_emit(struct cowrun_task *task, const void *bytes, size_t len);

/*
 * Say why this task failed (one line, no trailing newline); run() then
 * returns -1.  The parent prints it as
 * "cowrun: WORKLOAD: task K (NAME) failed: <message>".
 */
void cowrun_task_error(struct cowrun_task *task, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- the workload ------------------------------------------------------ */

struct cowrun_workload {
	int abi_version;              /* COWRUN_ABI_VERSION */
	const char *name;             /* command-line name, e.g. "sales" */
	const char *summary;          /* one line for --list */
	const char *description;      /* a paragraph for WORKLOAD --help */
	unsigned flags;               /* COWRUN_NOT_THREAD_SAFE | ... */
	const struct cowrun_option *options; /* may be NULL: no options */
	const void *defaults;         /* config holding the defaults, for --help */

	/* Parent, once, before any worker exists.  argv[0] is the workload
	 * name, the rest its options.  Returns the state, or NULL after
	 * printing why with cowrun_error(). */
	void *(*setup)(int argc, char **argv);

	/* Parent.  The number of tasks; fixed once setup has returned. */
	size_t (*ntasks)(const void *state);

	/* Any process.  Writes task k's stable name (a file name: no '/',
	 * at most COWRUN_NAME_MAX - 1 bytes) into buf.  No byte below 0x20
	 * (a tab, a newline) and no 0x7f either: the name is a field of the
	 * joblog's tab-separated lines.  The runner checks every name once
	 * after the setup and refuses the run (exit 255) before the first
	 * task, naming the task and the byte. */
	void (*task_name)(const void *state, size_t k, char *buf, size_t size);

	/* Worker.  Runs task k: reads `state`, never writes it; writes its
	 * report through cowrun_report(), its result with cowrun_emit().
	 * Returns 0, or -1 after cowrun_task_error().
	 *
	 * The state rule, for every workload and language: run() must not
	 * change the state, and must not read what merge() writes.  A worker
	 * runs many tasks in one process, so a change would reach that
	 * worker's later tasks only, and which those are depends on -j; a
	 * worker forked later (a replacement, a retry) sees the setup plus
	 * the merges so far.  The arena enforces it for C (a write fails the
	 * task, fork mode); cowrun python guards a script's arrays and
	 * detects other changes (docs/python.md).
	 *
	 * run() must not write the setup arena, end its process (exit(),
	 * _exit(), abort(), a crash), change signal dispositions beyond its
	 * own call, or print to stdout.  What each mode isolates:
	 *   fork:   the task fails with the reason (the arena offset written,
	 *           the exit status, the signal); the run goes on.
	 *   serial, omp: the tasks share one process, which the run cannot
	 *           outlive: the task phase runs in a child watched by cowrun,
	 *           which names the task(s) running, prints no summary, removes
	 *           temporary files, and exits 254.  In omp, a global or static
	 *           variable is shared by every thread (COWRUN_NOT_THREAD_SAFE).
	 * stdout: during the task phase, in every mode, fd 1 is a copy of
	 * stderr: run()'s prints reach stderr (untagged; interleaved between
	 * omp threads) and never the summary.  The runner flushes stdout after
	 * each task. */
	int (*run)(const void *state, size_t k, struct cowrun_task *task);

	/* Parent, in task order, once for each task that succeeded.  The
	 * record is only valid during the call.  Returns 0, or -1 after
	 * cowrun_error() (a malformed record). */
	int (*merge)(void *state, size_t k, const void *record, size_t len);

	/* Parent, after the last merge.  Writes the summary to `out`, a
	 * stream in memory: the runner writes it to stdout whole once
	 * finish() returns 0, and nothing of it when finish() fails.
	 * Returns 0 or -1 after cowrun_error(). */
	int (*finish)(void *state, FILE *out);

	/* Parent, last.  Frees the state, setup()'s or plan()'s (and
	 * merge_setup()'s).  May be NULL. */
	void (*teardown)(void *state);

	/* ---- ABI 2: merge without setup.  Both may be NULL: then --merge
	 * runs setup() as a batch run does. ---- */

	/* Parent, after setup.  The bytes merge() and finish() need that the
	 * arguments do not already say (a store list, a calendar) and a
	 * hash of the input they were built from; *len set to their size.
	 * Saved results carry them, and the results identity carries their
	 * hash, so results of different inputs never merge, and --resume
	 * refuses an input that changed.  Points into the state. */
	const void *(*merge_context)(const void *state, size_t *len);

	/* Parent, --merge only, instead of setup(): build from the arguments
	 * and the saved context the state that ntasks(), task_name(),
	 * merge(), finish() and teardown() need, without the expensive part
	 * (run() is never called on it).  Returns NULL after cowrun_error(). */
	void *(*merge_setup)(int argc, char **argv, const void *context, size_t len);

	/* ---- ABI 3.  May be NULL. ---- */

	/* Parent, optional: the task count and names without the setup, for
	 * `cowrun --dry-run`: returns a state that ntasks() and task_name()
	 * accept (freed by teardown()), or NULL if the tasks are known only
	 * after the setup.  It makes the setup's checks of the options (best
	 * through the same code), reading no input and writing nothing: on
	 * options the setup would refuse it returns NULL after the setup's
	 * cowrun_error(), and the dry run refuses them as the run would. */
	void *(*plan)(int argc, char **argv);
};

#endif
