"""contract.py - the contract of `cowrun python SCRIPT.py [ARGS]`, in one place.

This file is a working script (`cowrun python workloads/python/contract.py
--count 5` runs it) and the reference for writing one: what cowrun.h is to
a C workload.  A script is an ordinary module; cowrun loads it once in the
parent (its top level runs there, once), then calls its functions:

    parent   setup(argv)                once: builds the state
    parent   tasks(state)               the task names, in task order
    worker   run(state, i, name)        once per task, in a forked process
    parent   merge(state, i, name, r)   optional: each success, in task order
    parent   finish(state, out)         optional: the summary
    parent   plan(argv)                 optional: the names without setup()
    parent   merge_context(state),      optional, both or neither: --merge
             merge_setup(argv, context) rebuilds the state without setup()

Processes.  setup() runs once, in the parent.  Every worker is a fork() of
it: run() reads the state's objects copy-on-write, with no pickling and no
second load.  A worker runs many tasks, one after another, in one process;
what the parent needs comes back as run()'s return value (pickled through
a pipe) and reaches merge().  merge() and finish() run in the parent, in
task order, so the summary is the same at every -j.

The state rule, as for a C workload: run() must not change the state, and
must not read what merge() writes.  A change run() makes stays in its
worker, and that worker's later tasks see it, while the other workers' do
not: which tasks see it depends on -j.  A worker forked later (a
replacement after a crash, a retry) starts from the parent's state: the
setup plus the merges so far.  cowrun keeps the rule where it can:
  - The guard: the numpy arrays the state holds (in its dicts, lists,
    tuples, the attributes of the script's own objects and of a
    SimpleNamespace; a pandas frame's or series' blocks) are read-only
    while run() runs, so arr[0] = 1, df.loc[0, "x"] = 5 or df["x"] *= 2
    fail their task in one line naming the rule.  It looks at most 1000
    objects, 8 levels deep; it does nothing if the script imports no numpy.
  - The detector: after each task cowrun compares the state with what the
    worker started from (the objects' types, identities and lengths, the
    arrays' data and shapes, within the same bounds).  A change that a
    later task of the same worker saw, such as df["x"] = df["x"] * 2, a
    column added, rows.append(x) or cache[key] = v, is said in one line
    per worker, naming where (state['df'] (its blocks), state.rows).  It
    cannot see a write into an array the guard leaves writable, nor
    inside a library's own objects.
  - --tasks-per-worker 1 runs every task in a fresh fork of the parent.
A script that keeps scratch arrays in its state, which every task fills
before it reads them, keeps them writable with cowrun.writable(arr, ...)
in setup() (an array, or a frame or series: its blocks, and their views).
cowrun.guard(False) turns the guard off, cowrun.guard(detect=False) the
detector (so does COWRUN_PYTHON_DETECT=0 in the environment); a script
that must change its state runs with --tasks-per-worker 1, under which
both stand down: each task has a fresh fork of the parent to itself.

Memory.  A worker's private memory is what it writes.  Python writes
reference counts when it touches an object, which is cheap for a few large
objects (numpy arrays, a DataFrame's column blocks) and dear for millions
of small ones (a list of dicts, a row-by-row cache).  Keep the shared data
in a few large arrays, and have setup() leave pandas nothing to do lazily:
a DataFrame whose blocks are not consolidated consolidates them in the
first worker that calls take() or .values on it, writing a copy of every
column in each worker.  `cowrun --stats` says what each worker copied;
docs/python.md has the measured figures.

Errors.
  - An exception (or SyntaxError, ImportError) while loading the script or
    in setup(), tasks(), plan() or merge_setup(): one line naming the
    script's line and the exception, exit 255, no file written.  -v adds
    the traceback.  sys.exit() there ends the run the same way (exit 255).
  - An exception in run(): that task fails; its traceback goes to stderr
    once, and "Type: message (script.py:LINE)" is its error in the joblog
    and in the run's last lines.  The other tasks go on; --retries runs it
    again in a fresh worker; the run exits with the number of tasks that
    failed (1 here), as for a C workload; --resume-failed reruns it.
    sys.exit() in run() is such an exception too: it ends no process.
  - A result pickle cannot take fails its task, naming the type.
  - An exception in merge() or finish(): one line, no summary, exit 254
    (the runner failed after tasks began).  The script is an input, so a
    fixed script runs the batch again: --resume refuses it.
  - A worker that dies (SIGKILL, the OOM killer, a segfault in a C
    extension) fails its task, naming the signal; --retries, --resume.

Signals.  The interpreter installs no handler: Ctrl-C and SIGTERM keep
cowrun's meaning (finish the running tasks, start no more; twice: stop
them).  No KeyboardInterrupt reaches the script.

Randomness.  Before each run(), random and (when it is already imported)
numpy's global generator are seeded with the task's seed, from --seed (0
unless given) and the task's index: the same draws at every -j, in every
mode, across runs, shards, resumes, and on a retry (a retry draws what the
failed attempt drew).  A seed set in setup() does not reach run(); numpy
imported first inside run() is not reseeded for that task.  The hash seed
follows --seed too: set and dict orders repeat from run to run.

Inputs.  SCRIPT is an input (--resume refuses a changed script), and so is
every argument that names an existing regular file, or "--name=FILE"
(cowrun --not-input ARG says one is not).  A file named any other way
(a config, a path built in setup) is declared with cowrun.input(path)
before setup() reads it: --resume refuses it changed, after the setup.

The cowrun module (import cowrun; only under cowrun python):
    cowrun.report(mode="w", encoding="utf-8", errors=None, newline=None)
        in run(): the task's report, OUTDIR/NAME, as open() would open it
        ("wb" for bytes).  Written under a temporary name and committed
        (flushed, fsynced, renamed) only when run() returns; removed when
        it raises.  One report per task; cowrun closes it after run().
    cowrun.command(cmd, to="report", mode="w", encoding="utf-8", ...)
        in run(): start cmd (posix_spawn: no copy of the setup's pages) and
        return a file writing to its standard input.  to="report": its
        output is the task's report, kept as report()'s is (then do not
        call report()); to="stderr": its output goes to standard error.
        cmd is split into words, or run by /bin/sh -c when it has shell
        syntax; {/} {#} {%} are the report's file name, the task's number
        from 1 and the worker's slot ({} is refused: the command writes
        the report, no complete one exists; a '|' pipeline is refused).  cowrun closes the file after run()
        and waits: the task fails, naming cmd, its status and its last
        stderr line, if it fails or stops reading.  It is killed with its
        task (--timeout, --halt now).  cowrun.CommandError (an OSError) if
        it cannot start; uncaught, the task fails with that one line.
        One command per task.
    cowrun.input(path)       in setup(): path is an input of the run
    cowrun.writable(*arrays) in setup(): arrays (or frames, series) the
                             guard leaves writable, with their views
    cowrun.guard(read_only=True, detect=True)
                             in setup() or at the top level: the guard
                             and the detector on or off
    cowrun.task()            in run(): (i, name); None elsewhere
    cowrun.seed()            in run(): the task's seed (random and numpy
                             were seeded with it); elsewhere the run's, --seed
    cowrun.verbosity()       1 under cowrun -v, else 0
    cowrun.allow_threads_at_fork()
                             in setup(): the threads alive when it returns
                             hold no lock; a warning instead of a refusal
                             (see Threads)

Arguments.  cowrun's options come before `python`; everything after the
script is the script's, passed as given: setup(argv) and plan(argv) get
them as a list (sys.argv is [SCRIPT, *argv] too, so argparse works either
way).  cowrun takes --help before a "--": `cowrun python SCRIPT.py --help`
is this workload's help, `cowrun python SCRIPT.py -- --help` the script's
(a "--" right after SCRIPT is dropped).

Threads.  Python runs on the main thread only: no --mode omp.  A fork
copies only the thread that forks: a thread alive when setup() returns
exists in no worker, and a lock it held at the fork (logging's, a queue's,
the script's own) stays held there forever, so the task that takes it
hangs.  cowrun therefore refuses a run with Python threads alive when
setup() returns (threading.enumerate()): one line naming them, exit 255,
no task run.  End them before setup() returns: thread.join(),
executor.shutdown() (or `with ThreadPoolExecutor() as pool:`),
listener.stop() for a logging QueueListener.  A script whose threads hold
no lock says so with cowrun.allow_threads_at_fork() in setup(): the run
goes on, with one warning naming them.  Threads of C libraries (numexpr's
pool, a BLAS's) are not Python threads: not refused; cowrun holds OpenBLAS
to one thread, and `cowrun -v` names every thread alive at a fork (a
Python thread by its Python name).

A setup on every core.  cowrun.parallel(fn, items), in setup() or
merge_setup(), runs fn(item) for each item in forked children of the
setup (as many as the setup threads, -j: one in serial mode) and returns
the results, pickled back, in item order; the lowest failing item raises
cowrun.ParallelError, the same at every -j.  cowrun.csv_parts(path) cuts a
CSV into parts fixed by the file (part.open(): the header line, then the
part's lines, for pd.read_csv()).  Give every column its dtype and make
the parts' categories one (docs/python.md).

Exit.  The interpreter ends as python3's does, once, in the process that
ran finish() (fork mode: the parent; serial mode: the child that ran the
tasks, never the process watching it), after the manifest and the joblog
are written: atexit handlers run, logging flushes its handlers (a
MemoryHandler's buffer reaches its file), and files left open are flushed
and closed, so a file setup() wrote and never closed holds its text once.
A worker never runs them: it leaves with _exit() after its tasks (as
multiprocessing's workers do), so write what a task must keep in run().
Threads that are not daemons are waited for at most 10 s
(COWRUN_PYTHON_THREADS_WAIT_S); one still running then is named in one
line and left.  An end that cannot flush sys.stdout or sys.stderr: one
line, exit 254.  A run whose setup() raised, or whose serial process a
task ended, ends no interpreter: no atexit handler runs.
"""
import argparse

import cowrun


def setup(argv):
    """Parent, once.  argv: the script's arguments.  Returns the state:
    any object; what the tasks read, built once."""
    parser = argparse.ArgumentParser(prog="contract.py")
    parser.add_argument("--count", type=int, default=10, help="tasks to run")
    args = parser.parse_args(argv)
    return {"count": args.count, "squares": [k * k for k in range(args.count)], "total": 0}


def tasks(state):
    """Parent.  The task names in task order: str, each a file name (no
    '/', under 128 bytes), also the name of the task's report."""
    return ["task-%04d.txt" % k for k in range(state["count"])]


def plan(argv):
    """Optional, for cowrun --dry-run: the task names from the arguments
    alone, reading no input.  Without it the dry run says the tasks are
    known after the setup."""
    return tasks(setup(argv))


def run(state, i, name):
    """A worker.  Task i, named name.  Reads the state, never changes it
    (the state rule).  Returns a picklable result (or None), which merge()
    receives in the parent."""
    with cowrun.report() as report:
        report.write("%s: %d squared is %d\n" % (name, i, state["squares"][i]))
    return state["squares"][i]


def merge(state, i, name, result):
    """Optional.  Parent, in task order, once per task that succeeded.
    It may change the state; run() must not read what it writes."""
    state["total"] += result


def finish(state, out):
    """Optional.  Parent, after the last merge: the summary, to out, a text
    stream (UTF-8; write, writelines, out.buffer for bytes; print without
    file= lands there too).  It has no file descriptor: out.fileno()
    raises io.UnsupportedOperation.  Its text reaches stdout only when
    finish() returns, and none of it if finish() raises; after that, out
    is closed."""
    print("%d tasks, sum of squares %d" % (state["count"], state["total"]), file=out)
