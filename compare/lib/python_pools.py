"""python_pools: the worker side of compare/python-pools, a module of its own
so that every pool can name its functions: fork workers inherit it, but
forkserver and joblib's loky workers start empty and import it by name.

It loads a cowrun Python contract script (setup, tasks, run, merge, finish)
with a stand-in for cowrun's `cowrun` module: report() opens the task's
report under a temporary name in the output directory, and the file is
fsynced and renamed to the task's name only when run() returns (as cowrun
commits a report); a task that raises leaves no report.  run()'s result is
pickled here, in the worker, so a result that cannot be pickled fails its
task, whichever pool carries the bytes.
"""
import importlib.util
import os
import pickle
import sys
import traceback
import types

_script = None       # the contract module, loaded once in each process
_outdir = None       # where reports go
_state = None        # the state fork workers inherit, or a forkserver worker's own
_setup_error = None  # why a forkserver worker's own setup failed (text)
_current = None      # (i, name) of the task running in this process
_report = None       # (file, temporary path, final path) of its report


# ---- the stand-in `cowrun` module -------------------------------------------------

def report(mode="w", encoding="utf-8"):
    """The current task's report, opened for writing ("w": text, "wb": bytes)."""
    global _report
    if _current is None:
        raise RuntimeError("cowrun.report() outside a task")
    if _report is not None:
        raise RuntimeError("cowrun.report() called twice in one task")
    if mode not in ("w", "wb"):
        raise ValueError(f"cowrun.report(): mode {mode!r}, expected 'w' or 'wb'")
    name = _current[1]
    final = os.path.join(_outdir, name)
    tmp = os.path.join(_outdir, f".{name}.{os.getpid()}.tmp")
    f = open(tmp, "wb") if mode == "wb" else open(tmp, "w", encoding=encoding)
    _report = (f, tmp, final)
    return f


def task():
    """(i, name) of the task running in this process."""
    if _current is None:
        raise RuntimeError("cowrun.task() outside a task")
    return _current


def input_(path):
    """cowrun records its inputs for --resume and --merge; nothing to do here."""


def verbosity():
    return 0


def parallel(fn, items):
    """cowrun.parallel() as a pool's script loads without cowrun: every
    item here, in order (the one-process load the pools have today)."""
    return [fn(item) for item in items]


class _WholeFile:
    """The one part of the stand-in csv_parts(): the whole file."""
    index, line = 0, 2

    def __init__(self, path):
        self.path = path

    def open(self):
        return open(self.path, "rb")

    def where(self):
        return f"{self.path}, from line 2"


def csv_parts(path, **_):
    return [_WholeFile(path)]


def _standin():
    m = types.ModuleType("cowrun", "compare/python-pools' stand-in for cowrun's module")
    m.report, m.task, m.input = report, task, input_
    m.verbosity, m.parallel, m.csv_parts = verbosity, parallel, csv_parts
    return m


# ---- loading the script ----------------------------------------------------------

def load_script(path, argv, outdir):
    """Import the script by path, once per process, as `python SCRIPT` would
    (its directory first on sys.path, sys.argv = [SCRIPT, *argv]), but under
    its file's stem, so its __main__ block does not run."""
    global _script, _outdir
    if _script is not None:
        return _script
    _outdir = outdir
    sys.modules["cowrun"] = _standin()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path))
    name = os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        raise ImportError(f"{path}: its name {name!r} is a module already loaded")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"{path}: not a Python script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pickle finds the classes it defines by name
    spec.loader.exec_module(module)
    for fn in ("setup", "tasks", "run"):
        if not callable(getattr(module, fn, None)):
            raise ImportError(f"{path}: no function {fn}()")
    _script = module
    return module


def set_state(state):
    """The state the fork pools' workers inherit."""
    global _state
    _state = state


def init_worker(path, argv, outdir):
    """A forkserver worker's initializer: its own import and setup.  An
    error is kept for its tasks to report: a raising initializer would make
    the pool respawn workers for ever."""
    global _state, _setup_error
    try:
        load_script(path, argv, outdir)
        _state = _script.setup(list(argv))
    except Exception:
        _setup_error = "setup in a forkserver worker failed:\n" + traceback.format_exc()


# ---- running a task ----------------------------------------------------------------

def _commit():
    f, tmp, final = _report
    if not f.closed:
        f.flush()
        os.fsync(f.fileno())
        f.close()
    else:  # the script closed it itself: the data may still be in the page cache
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    os.rename(tmp, final)


def _discard():
    f, tmp, _ = _report
    try:
        f.close()
    except OSError:
        pass  # the task failed already; this error adds nothing
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def run_one(state, i, name):
    """Task i: (True, pickled result) or (False, the traceback as text).
    Never raises for the task's own errors, so a failure is one task's."""
    global _current, _report
    _current, _report = (i, name), None
    try:
        result = pickle.dumps(_script.run(state, i, name))
        if _report is not None:
            _commit()
        return True, result
    except (Exception, SystemExit):  # a task's sys.exit() fails that task only
        text = traceback.format_exc()
        if _report is not None:
            _discard()
        return False, text
    finally:
        _current, _report = None, None


def run_task(item):
    """A pool's task (i, name) on the inherited (or forkserver-own) state."""
    if _setup_error is not None:
        return False, _setup_error
    return run_one(_state, *item)


def joblib_task(path, argv, outdir, state, i, name):
    """joblib's task: loky workers start empty, so the first task in each
    loads the script; the state comes pickled (its big numpy arrays
    memory-mapped by joblib)."""
    try:
        load_script(path, argv, outdir)
    except Exception:
        return False, traceback.format_exc()
    return run_one(state, i, name)
