/*
 * pyworkload.h - what the files of the python workload share.
 *
 * python.so embeds Debian's CPython and runs a script's functions as a
 * cowrun workload.  The contract a script follows is contract.py, beside
 * these files (a working script; docs/python.md is the guide; README here
 * names every file).  The files:
 *
 *   python.c    the workload's table: setup, tasks, run, merge, finish,
 *               plan and the merge without setup, each calling the script
 *   interp.c    the interpreter: started once per process (its paths,
 *               a virtualenv, no signal handlers of its own), the fork
 *               handlers, the threads alive at a fork, the script loaded,
 *               errors made into one line, and its end (py_end())
 *   module.c    the `cowrun` module a script imports: report(), command(),
 *               input(), task(), seed(), verbosity(),
 *               allow_threads_at_fork(); and the sink under the stream
 *               finish() prints to
 *   pool.c      cowrun.parallel(): a setup's items in forked children
 *   csvparts.c  cowrun.csv_parts(): a CSV's parts, fixed by the file
 *   state.c     the state rule (run() must not change the state): the
 *               read-only guard of its arrays, the detector of other
 *               changes, cowrun.writable() and cowrun.guard()
 *
 * Python runs only on the process's main thread, which holds the GIL
 * from the start to the end: cowrun's own threads never call it, and the
 * workload is flagged COWRUN_NO_THREADS (no --mode omp).
 */
#ifndef COWRUN_PYWORKLOAD_H
#define COWRUN_PYWORKLOAD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cowrun.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds, for the timings pool.c and state.c
 * report. */
static inline uint64_t py_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- interp.c ---- */

/*
 * Start the interpreter (once per process; later calls return 0) with
 * sys.argv = [script, args...], sys.path[0] the script's directory, the
 * `cowrun` module importable, and the fork handlers registered.  Returns 0
 * or -1 after one line.
 */
int py_start(const char *script, int argc, char **argv);

/* Load the script as a module (its top level runs).  Returns a new
 * reference, or NULL after one line naming the script and the line. */
PyObject *py_load_script(const char *script);

/* The script's function `name`: a new reference; NULL without a message
 * if it has none (or it is not callable: then *bad is set after one line). */
PyObject *py_function(PyObject *module, const char *name, int *bad);

/*
 * The pending exception as one line, "Type: message", into buf, and
 * where it was raised in the script ("report.py:12") into where (the last
 * frame in the script, else the last frame).  The exception is cleared;
 * with `print_traceback` its traceback first goes to stderr.
 */
void py_describe_error(char *buf, size_t size, char *where, size_t wsize, int print_traceback);

/*
 * Before run(): seed `random` and, when it is imported, numpy's global
 * generator from `seed` (cowrun_task_seed()), so the task draws the same
 * numbers at every -j, in every mode, on a retry.  Their states before
 * the first run() since the last py_restore_generators() are kept for it
 * (a worker that only runs tasks keeps them once).  Returns 0, or -1
 * with the exception pending.
 */
int py_reseed(uint64_t seed);

/* Before merge() and finish(): the states kept by py_reseed() back, if a
 * run() came since, so that they draw in the process that ran the tasks
 * (serial mode) as in one that did not (fork mode).  Returns 0, or -1
 * with the exception pending. */
int py_restore_generators(void);

/* The pending exception is a SystemExit: its status into *status. */
int py_system_exit(int *status);

/* Flush Python's sys.stdout and sys.stderr (the runner's fflush() cannot
 * reach their buffers).  Errors are dropped. */
void py_flush_stdio(void);

/*
 * Threads other than this one alive now (after setup(): every fork would
 * copy none of them, and a lock one holds would stay held in every
 * worker): -1 after one line naming them by their Python names, or, if
 * `allowed` (cowrun.allow_threads_at_fork()), 0 after that line as a
 * warning.  0 when there are none.
 */
int py_check_threads(const char *script, int allowed);

/* The threads besides this one alive now, by name into buf: how many
 * (0 when threading cannot say). */
Py_ssize_t py_thread_names(char *buf, size_t size);

/*
 * End the interpreter as Python ends it, in the process that ran finish()
 * (never in one that will fork again): the fork handlers become no-ops,
 * threading._shutdown() runs with a deadline (a thread that never ends is
 * named, then left), then Py_FinalizeEx(): atexit handlers, logging's
 * shutdown, files left open flushed and closed.  Returns 0, or -1 after
 * one line if Py_FinalizeEx() failed.  A no-op in a process whose
 * interpreter did not start, on another thread, or the second time.
 */
int py_end(void);

/* finish()'s `out`: an io.TextIOWrapper (UTF-8) over a sink writing to
 * the FILE; fileno() raises io.UnsupportedOperation.  A new reference, or
 * NULL with the exception pending. */
PyObject *py_summary_new(FILE *out);

/* After finish(): flush what `out` holds into the FILE if `keep`, else
 * drop it; then close it, so that a write after finish() returned (a
 * handler that kept `out`) raises instead of reaching the FILE.  Returns
 * 0, or -1 with the exception pending (the flush failed). */
int py_summary_end(PyObject *out, int keep);

/* pickle.dumps(obj) and pickle.loads(bytes): new references, or NULL
 * with the exception pending. */
PyObject *py_pickle(PyObject *obj);
PyObject *py_unpickle(const void *bytes, size_t len);

/*
 * After the setup (still its phase: cowrun_input() takes them), every
 * module in sys.modules whose file lies outside the interpreter's
 * prefixes and site-packages (the script's own: a helper beside it, a
 * directory of PYTHONPATH) is recorded as an input, so that --resume and
 * --merge refuse results of other code.  The script itself is one
 * already.  Past cowrun_input()'s limit the rest are named in one line,
 * not recorded.  Returns 0, or -1 after one line (they cannot be listed).
 */
int py_declare_own_modules(void);

/* ---- module.c ---- */

/* The built-in module's init function (PyImport_AppendInittab). */
PyObject *py_cowrun_module_init(void);

/* Which part of the contract runs now: cowrun.input() only in setup,
 * cowrun.report() and cowrun.task() only in run. */
enum py_phase { PY_PHASE_OTHER, PY_PHASE_SETUP, PY_PHASE_RUN, PY_PHASE_MERGE_SETUP };
void py_set_phase(enum py_phase phase);

/* The task run() is called for (PY_PHASE_RUN). */
void py_set_task(struct cowrun_task *task, size_t index, PyObject *name);

/* After run(): close the report file the script opened, if it did (an
 * error then is pending).  Returns 0, or -1 with the exception pending. */
int py_close_report(void);

/* After run() raised: whether the exception is the broken pipe of the
 * command the script started (cowrun.command()), its command having
 * stopped reading; if so, it is cleared: the runner's wait fails the
 * task, naming the command's status or the broken pipe. */
int py_command_broke(void);

/* After run(): close the command's input the script holds, if any.
 * Returns 0; 1 if the pipe broke (no exception pending: the runner's wait
 * fails the task, naming the command's status or the broken pipe: no
 * result to send); or -1 with the exception pending. */
int py_close_command(void);

/* Whether the pending exception is cowrun.CommandError: the command did
 * not start, and cowrun_task_error() has already said why. */
int py_command_refused(void);

/* Whether setup() called cowrun.allow_threads_at_fork(). */
int py_threads_allowed(void);

/* The sink under finish()'s stream: write(bytes) and flush() to the
 * FILE.  A new reference, or NULL with the exception pending.  After
 * py_sink_close() it no longer reaches the FILE: what is written to it is
 * dropped (`drop`), or raises ValueError. */
PyObject *py_sink_new(FILE *out);
void py_sink_close(PyObject *sink, int drop);

/* A cowrun.parallel() child (pool.c): cowrun.input() and nesting refused,
 * cowrun.seed() its item's seed. */
void py_set_in_child(int yes);
void py_set_item_seed(uint64_t seed);

/* cowrun.parallel() and cowrun.csv_parts() may run now (setup() or
 * merge_setup(), not in a child): 0, or -1 with RuntimeError set. */
int py_parallel_refused(const char *call);

/* In setup(): `path` is an input (cowrun_input()); elsewhere nothing.
 * 0, or -1 with the exception set. */
int py_declare_input(const char *path);

/* cowrun.ParallelError (a RuntimeError), borrowed. */
PyObject *py_parallel_error(void);

/* ---- pool.c ---- */

/* cowrun.parallel(fn, items). */
PyObject *py_parallel(PyObject *self, PyObject *args);

/* ---- csvparts.c ---- */

/* cowrun.csv_parts(path, ...). */
PyObject *py_csv_parts(PyObject *self, PyObject *args, PyObject *kwargs);

/* If `item` is a CsvPart: "part I of PATH, from line N" into buf, 1. */
int py_csv_part_where(PyObject *item, char *buf, size_t size);

/* ---- state.c ---- */

/* Add cowrun.writable() and cowrun.guard() to the module: 0 or -1. */
int py_state_add_functions(PyObject *module);

/* Parent, once, after setup() and tasks(): collect the arrays the guard
 * makes read-only in run() (none if numpy was not imported).  Errors are
 * said in one line and turn the guard or the detector off. */
void py_state_setup_done(PyObject *state);

/* Around each run() of task k: before, the arrays read-only, the
 * detector's fingerprint taken in a process's first task, and a change
 * an earlier task of this process made said once; after (run()'s
 * exception kept pending), the arrays writable again and the state
 * compared with the fingerprint. */
void py_state_before_run(PyObject *state, size_t k, PyObject *name);
void py_state_after_run(PyObject *state, size_t k, PyObject *name);

/* merge() runs in this process (serial mode): the fingerprint is taken
 * again before the next task. */
void py_state_merged(void);

/* Whether run()'s pending exception is a write to an array the guard
 * made read-only (the exception stays pending). */
int py_state_read_only(void);

#endif
