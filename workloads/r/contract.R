# contract.R - the contract of `cowrun r SCRIPT.R [ARGS]`, in one place.
#
# This file is a working script (`cowrun r workloads/r/contract.R --count 5`
# runs it) and the reference for writing one: what cowrun.h is to a C
# workload, and contract.py to a Python script.  cowrun sources the script
# once in the parent (its top level runs there, once), then calls its
# functions:
#
#   parent   setup(args)                    once: returns the state
#   parent   tasks(state)                   the task names, in task order
#   worker   run(state, i, name)            once per task, in a forked process
#   parent   merge(state, i, name, result)  optional: each success, in task
#                                           order; returns the new state
#   parent   finish(state, out)             optional: the summary
#
# i counts from 0, as cowrun's --tasks and its messages count.
#
# ---- The cowrun functions (attached as "cowrun"; only under cowrun r) ----
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
#       in setup(): path is an input of the run: --resume refuses it
#       changed.  Returns path, invisibly: fread(cowrun_input(f)).  A file
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
# ---- Errors ----
#
#   An error in run(): that task fails with R's words, its line in the
#   joblog and in the run's last lines:
#       cowrun: r: task 1 (b) failed: Error in helper(i): no data (report.R:31)
#   CALL is the condition's call (run(state, i, name) for a stop() in
#   run() itself; none for stop(call. = FALSE): "Error: MESSAGE"), and the
#   line is the innermost call in the script that has a source reference
#   (the script is loaded with keep.source; a source reference marks a
#   statement, so an error inside a call spanning lines names its first).
#   The traceback goes once to stderr, named by the task, innermost last:
#       cowrun: r: task 1 (b): traceback, innermost last:
#         1: run(state, i, name)
#         2: helper(i) at report.R:17
#         3: stop("no data") at report.R:31
#   The other tasks go on; --retries runs it again in a fresh worker; the
#   run exits with the number of tasks that failed; --resume-failed reruns
#   it.  Warnings a task gives are printed once, after it, each naming it:
#       cowrun: r: task 1 (b): warning: NAs introduced (in as.integer(x)) at report.R:15
#   (R prints none of them itself): the first getOption("nwarnings") (50),
#   a run of equal ones as one line "(N times)", the rest counted.
#
#   stop() in finish(): one line naming the script's line, no summary (not
#   half of one), exit 254.

setup <- function(args) {
  count <- 3L
  k <- match("--count", args)
  if (!is.na(k)) count <- as.integer(args[k + 1L])
  if (is.na(count) || count < 1L) stop("--count N: a number of tasks, 1 or more")
  list(count = count, squares = (seq_len(count) - 1L)^2, total = 0)
}

tasks <- function(state) sprintf("item-%02d", seq_len(state$count) - 1L)

run <- function(state, i, name) {
  square <- state$squares[i + 1L]
  con <- cowrun_report()
  cat(sprintf("%s: %d squared is %d\n", name, i, as.integer(square)), file = con)
  # A draw of the task's own stream: the same at every -j.
  cat(sprintf("draw %.6f\n", runif(1)), file = con)
  square
}

merge <- function(state, i, name, result) {
  state$total <- state$total + result
  state
}

finish <- function(state, out) {
  cat(sprintf("sum of squares of 0..%d: %d\n", state$count - 1L, as.integer(state$total)),
      file = out)
}
