/*
 * rworkload.h - what the files of the r workload share.
 *
 * r.so embeds Debian's libR and runs an R script's functions as a cowrun
 * workload.  The contract a script follows is contract.R, beside these
 * files (a working script; docs/r.md is the guide; README here names
 * every file).  The files:
 *
 *   r.c        the workload's table: setup, tasks, run, merge, finish,
 *              plan and the merge without setup, each calling the script
 *   rinterp.c  the embedding: R's environment, its start (no signal
 *              handlers, console on stderr), the fork handlers, q()
 *              caught, the script loaded with its source references,
 *              every call evaluated with its error made into one line,
 *              and R's end
 *   rserial.c  results: R_Serialize into the task's record, R_Unserialize
 *              in the parent; external pointers refused
 *   rmodule.c  the R interface a script calls (cowrun_report(), ...), in
 *              an environment attached as "cowrun", the connection type
 *              under the report, the command and the summary, and R's
 *              generator set for each task
 *
 * R runs only on the process's main thread: the workload is flagged
 * COWRUN_NO_THREADS (no --mode omp).  R's API may longjmp on an error:
 * every evaluation goes through R_tryEval or R_ToplevelExec (rinterp.c,
 * rserial.c), never a bare Rf_eval.
 */
#ifndef COWRUN_RWORKLOAD_H
#define COWRUN_RWORKLOAD_H

#define R_NO_REMAP
#include <Rinternals.h>

#include "cowrun.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- rinterp.c ---- */

/*
 * Start R (once per process; later calls return 0): its environment as
 * Debian's R script sets it, no signal handlers, the profiles read as
 * Rscript reads them with their output on stderr, the cowrun interface
 * attached, q() caught, the fork handlers registered.  `script` the
 * path as given (it names the script in messages).  Returns 0 or -1
 * after one line.
 */
int r_start(const char *script);

/* Run the script's top level into the global environment, with its
 * source references (keep.source).  With `for_setup`, every file it
 * source()s, as it loads and until r_source_unwrap() (after setup() and
 * tasks()), is declared an input; else (plan(), merge_setup(): the saved
 * results carry the inputs) none is.  Returns 0, or -1 after one line
 * naming the script and the line. */
int r_load_script(int for_setup);
void r_source_unwrap(void);

/* The script's function `name` in the global environment, or R_NilValue
 * without a message if it has none (or it is no function: then *bad is
 * set after one line).  Unprotected: the global environment holds it. */
SEXP r_function(const char *name, int *bad);

/*
 * Evaluate `call` in `env` (a call such as run(state, i, name), whose
 * symbols env binds: errors name it as written).  Returns the outcome,
 * protected once by the caller's count (*nprot incremented): a list
 * whose r_ok() says whether it returned, r_value() its value.  Warnings
 * the call gave are in the outcome too (r_say_warnings()).
 */
SEXP r_eval(SEXP call, SEXP env, int *nprot);
int r_ok(SEXP outcome);
SEXP r_value(SEXP outcome);

/* A failed outcome of the script's function `fn` (setup, tasks, merge,
 * finish, plan, merge_setup) as one line: "SCRIPT:LINE: in fn(): MESSAGE
 * (in CALL)". */
void r_say_failed(SEXP outcome, const char *fn);

/* A failed outcome of run(): the task's error, "Error in CALL: MESSAGE
 * (SCRIPT:LINE)", and, once on stderr, its traceback named by `label`
 * ("task 3 (b.txt)").  Returns -1. */
int r_run_failed(struct cowrun_task *task, SEXP outcome, const char *label);

/* The warnings an outcome collected, once on stderr, each naming
 * `label` ("setup()", "task 3 (b.txt)"). */
void r_say_warnings(SEXP outcome, const char *label);

/* The script's path as given. */
const char *r_script(void);

/*
 * Before run(), in a forked worker, once: stdin from /dev/null (a read
 * in run() ends at once instead of taking the terminal's input from
 * the parent) and R's JIT off (as parallel's mcfork() does: a worker
 * would compile again what the parent never ran).  A no-op in the
 * process that started R.
 */
void r_worker_start(void);

/* After setup(): every function of the script (each closure in the
 * global environment) byte-compiled once in the parent, so that no worker
 * JIT-compiles it again.  Measured (a loop in run(), 100 tasks, -j 2,
 * --tasks-per-worker 1): 0.49-0.55 s compiled here, 1.90-2.16 s with
 * each fresh worker's JIT; with long-lived workers no difference.  A
 * function that does not compile stays as it is. */
void r_compile_script(void);

/* A full garbage collection, in the parent before it forks. */
void r_full_gc(void);

/* Where R's console output goes while finish() runs: its stream (what
 * print() and cat() without file = write), or NULL: stderr again. */
void r_console_to(FILE *out);

/* End R (its finalizers, its devices, its session temporary
 * directory), in the process that ran finish(), once. */
void r_end(void);

/* ---- rserial.c ---- */

/*
 * `value` serialized (binary, version 3) into the task's result record
 * through a 64 KiB buffer.  A value holding an external pointer (a
 * connection, a database handle; data.table's self-reference passes)
 * fails the task, naming its class.  k and name: task k's, for a
 * warning.  Returns 0, or -1 after
 * cowrun_task_error().
 */
int r_serialize_result(SEXP value, struct cowrun_task *task, size_t k, const char *name);

/* The record unserialized: a new object (unprotected), or NULL after one
 * line naming task k. */
SEXP r_unserialize(const void *bytes, size_t len, size_t k);

/* ---- rmodule.c ---- */

/* Attach the cowrun environment (its functions, registered .Call entry
 * points) to the search path.  Returns 0, or -1 after one line. */
int r_module_attach(void);

/* The cowrun environment: where source() is wrapped while the script
 * loads. */
SEXP r_module_env(void);

/* Which part of the contract runs now: cowrun_input() only in setup (and,
 * for the source() wrapper, as the script loads), cowrun_report(),
 * cowrun_command() and cowrun_task() only in run, cowrun_seed() the
 * task's there. */
enum r_phase { R_PHASE_OTHER, R_PHASE_LOAD, R_PHASE_SETUP, R_PHASE_RUN, R_PHASE_MERGE_SETUP };
void r_set_phase(enum r_phase phase);

/* The task run() is called for (R_PHASE_RUN), or NULL after it. */
void r_set_task(struct cowrun_task *task, size_t index, const char *name);

/* After run(): end the connections cowrun_report() and cowrun_command()
 * gave it (R may already have closed them: that is harmless), and a
 * sink() to them it left.  Their writes reach the runner's FILEs as they
 * are made.  With `task` (NULL: run() failed already): a report write
 * that failed fails the task (-1 after cowrun_task_error()); a command
 * write that failed returns 1: the runner's wait names it (run() returns
 * 0, no result); else 0. */
int r_close_report(struct cowrun_task *task);

/* Before run(): R's generator L'Ecuyer-CMRG, .Random.seed built from the
 * task's seed (the merging side's state kept the first time).  Before
 * every other function of the script (merge(), finish()): that state back
 * (a no-op if no run() came since), so that they draw as if no task ran
 * in the process (serial mode runs the tasks in it). */
void r_seed_task(uint64_t seed);
void r_seed_restore(void);

/* A connection writing to `f` (text, converted to UTF-8 from a locale
 * that is not; or binary), which R may close:
 * *sink is what r_connection_end() takes, to cut it from `f` (later
 * writes fail) and close it in R.  r_connection_end() returns the errno
 * of a write that failed, or 0.  The connection is unprotected. */
struct r_sink;
SEXP r_connection_new(FILE *f, const char *description, int binary, struct r_sink **sink);
int r_connection_end(SEXP con, struct r_sink *sink);

#endif
