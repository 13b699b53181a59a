# contract.R - the contract of `cowrun r SCRIPT.R [ARGS]`, in one place.
#
# This file is a working script (`cowrun r workloads/r/contract.R --count 5`
# runs it) and the reference for writing one: what cowrun.h is to a C
# workload and contract.py to a Python script.  cowrun starts Debian's R
# once in the parent, runs the script's top level there (once, into the
# global environment, as Rscript would), then calls its functions:
#
#     parent   setup(args)                  once: builds the state
#     parent   tasks(state)                 the task names, in task order
#     worker   run(state, i, name)          once per task, in a forked process
#     parent   merge(state, i, name, result) optional: each success, in task
#                                           order; returns the new state
#     parent   finish(state, out)           optional: the summary
#     parent   plan(args)                   optional: the names without setup()
#     parent   merge_context(state),        optional, both or neither: --merge
#              merge_setup(args, context)   rebuilds the state without setup()
#
# `args` is a character vector: the script's arguments (after SCRIPT.R; a
# "--" right after it is dropped).  `i` counts from 0, as cowrun counts
# everywhere else (--tasks 0,3, --shard, "task 3 (b.txt) failed"), not from
# 1 as R does: the state's i-th row is row i + 1.
#
# Processes.  setup() runs once, in the parent.  Every worker is a fork() of
# it: run() reads the state's objects copy-on-write, with no serialization
# and no second load.  A worker runs many tasks, one after another; what the
# parent needs comes back as run()'s value, serialized (serialize()'s
# format, version 3) through a pipe, and reaches merge().  merge() and
# finish() run in the parent after the last task, in task order, so the
# summary is the same at every -j and in every mode.  (They wait for the
# task phase: R's full garbage collection in the parent, with workers
# alive, would copy the whole setup.)
#
# The state rule, as for C and Python: run() must not change the state and
# must not read what merge() writes.  R values are copied when changed, so
# run() cannot change the parent's state; an environment in the state is a
# reference, and a change run() makes to it stays in its worker, where
# that worker's later tasks see it: which tasks see it depends on -j.
# --tasks-per-worker 1 runs every task in a fresh fork of the parent.
#
# merge() returns the new state.  R has no references to lists: a merge()
# that only assigns (`state$total <- state$total + result`) returns the
# assigned value, not the state: cowrun refuses a merge() that returns
# NULL or a value of another class than the state, in one line.  An
# environment as the state works too (return it).
#
# What R prints goes to stderr: print(), cat() without a file, message(),
# warnings, and what the profiles print (Rprofile.site, then the project's
# or the user's .Rprofile, read as Rscript reads them, so an renv project
# works).  Standard output is the summary's: in finish(), cat(..., file =
# out), or print() (R's console is the summary while finish() runs).
#
# The cowrun functions (attached as "cowrun"; only under cowrun r):
#
#   cowrun_report(binary = FALSE)
#       in run(): a connection on the task's report, OUTDIR/NAME: text
#       written as UTF-8 (cat(), writeLines(), sink()), or binary for
#       writeBin().  Written under a temporary name and committed (flushed,
#       fsynced, renamed) only when run() returns; removed when run()
#       fails.  cowrun closes it after run(); close() in the script is
#       harmless.  A second call in the same task returns the same
#       connection; asked the other way (binary), or after close(), it
#       fails in one line.  sink(cowrun_report()) sends print() there; a
#       sink run() leaves is ended after it.  Elsewhere: an error.
#   cowrun_command(cmd, to = c("report", "stderr"), binary = FALSE)
#       in run(): start cmd (spawned: no copy of the setup's pages) and
#       return a connection writing to its standard input.  to = "report":
#       its output is the task's report, kept as cowrun_report()'s (then do
#       not call cowrun_report()); to = "stderr": its output goes to
#       standard error.  cmd is split into words, or run by /bin/sh -c when
#       it has shell syntax; {/} {#} {%} are the report's file name, the
#       task's number from 1 and the worker's slot ({} is refused: the
#       command writes the report, no complete one exists; a '|' pipeline
#       is refused: /bin/sh has no pipefail).  After run() cowrun closes the
#       connection and waits: the task fails, naming cmd, its status and
#       its last stderr line, if it fails or stops reading; it is killed
#       with its task (--timeout, --halt now).  One command per task.  If
#       it cannot start: an error of class "cowrun_command_error" (catch it
#       with tryCatch(..., cowrun_command_error = ...)); uncaught, the task
#       fails with cowrun's line saying why.
#   cowrun_input(path)
#       in setup() (or the top level): path is an input of the run:
#       --resume refuses it changed (nothing in plan(), merge() ...).  Returns path, invisibly: fread(cowrun_input(f)).  A file
#       the script source()s as it loads is one already.
#   cowrun_task()
#       in run(): list(index = i, name = name) (index an integer); NULL
#       elsewhere.
#   cowrun_seed()
#       in run(): the task's seed, from --seed (0 unless given) and i;
#       elsewhere the run's, --seed.  A string of decimal digits: the seed
#       is a 64-bit number, which no R number holds exactly.
#   cowrun_verbosity()
#       1 under cowrun -v, else 0.
#
# Random numbers.  Before each run(), R's generator is set for the task:
# RNGkind("L'Ecuyer-CMRG", normal.kind = "Inversion", sample.kind =
# "Rejection"), its .Random.seed built from the task's 64-bit seed (not
# folded to set.seed()'s 32 bits: two tasks never share a stream by a
# collision of seeds).  runif(), rnorm() and sample() in run() draw the
# same numbers at every -j, serial or fork, on a retry and on a resume.  A
# set.seed() in setup() does not reach run(); merge() and finish() go on
# from the parent's own generator (setup()'s set.seed(), say) as if no
# task had run in their process (serial mode runs the tasks in it).  A
# run() that wants another generator calls set.seed() itself, from
# cowrun_task()$index, say.
#
# Errors.
#   - A parse error, or an error while loading the script or in setup(),
#     tasks(), plan() or merge_setup(): one line naming the script's line,
#     exit 255, no file written.
#   - An error in run(): that task fails with its message, the call and the
#     script's line ("missing store b (in check(name)) (report.R:12)"); its
#     traceback goes to stderr once.  The other tasks go on; --retries runs
#     it again in a fresh worker; the run exits with the number of failed
#     tasks; --resume-failed reruns it.  Its warnings are printed once,
#     naming the task (the formats: docs/r.md).
#   - q() anywhere is an error (the task fails; in setup() the run): R's
#     session, its tempdir() shared by the parent and every worker, stays.
#   - A result holding an external pointer (a connection, a database
#     handle, a package's C object) fails its task, naming the class.
#   - An error in merge() or finish(): one line, no summary, exit 254.
#   - A worker that dies (SIGKILL, the OOM killer, a segfault in a package)
#     fails its task, naming the signal.
#
# Threads.  The setup may use threads (data.table, OpenBLAS, OpenMP); a
# worker runs OpenMP on one thread (libgomp cannot run a parallel region
# after fork() with the parent's thread team).  An explicit num_threads()
# clause above 1 in a worker can still hang.

parse_args <- function(args) {
  count <- 5L
  k <- match("--count", args)
  if (!is.na(k)) count <- as.integer(args[k + 1L])
  if (is.na(count) || count < 1L) stop("--count N: N is a positive number")
  count
}

setup <- function(args) {
  count <- parse_args(args)
  # The expensive part: loaded once, shared by every worker.
  list(count = count, table = data.frame(k = seq_len(count), square = seq_len(count)^2),
       merged = character(), total = 0)
}

tasks <- function(state) sprintf("part-%02d.txt", seq_len(state$count) - 1L)

run <- function(state, i, name) {
  row <- state$table[i + 1L, ]                 # i counts from 0
  out <- cowrun_report()
  cat(sprintf("%s: %d squared is %g\n", name, row$k, row$square), file = out)
  cat(sprintf("draw %.6f\n", runif(1)), file = out)   # the task's own stream
  row$square                                   # what merge() receives
}

merge <- function(state, i, name, result) {
  state$merged <- c(state$merged, name)
  state$total <- state$total + result
  state                                        # the new state
}

finish <- function(state, out) {
  cat(sprintf("%d parts, sum of squares %g\n", length(state$merged), state$total), file = out)
}

plan <- function(args) sprintf("part-%02d.txt", seq_len(parse_args(args)) - 1L)

merge_context <- function(state) serialize(state$count, NULL)

merge_setup <- function(args, context) {
  list(count = unserialize(context), merged = character(), total = 0)
}
