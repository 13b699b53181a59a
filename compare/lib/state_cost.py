"""compare/bench-detector's wrapper of the example
(workloads/python/examples/sales_report.py): the same setup, tasks, merge
and finish; run() also prints, after each task, this worker's seconds in
the example's run() and in cowrun's guard and detector so far
(cowrun._state_seconds()), on one stderr line:

    state-cost PID RUN_SECONDS STATE_SECONDS

Both are measured inside the worker, so a loaded machine stretches them
alike: their ratio is the check's share of the task phase.
"""
import importlib.util
import os
import sys
import time

import cowrun

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))),
                       "workloads", "python", "examples", "sales_report.py")
_spec = importlib.util.spec_from_file_location("sales_report", EXAMPLE)
_example = importlib.util.module_from_spec(_spec)
sys.modules["sales_report"] = _example
_spec.loader.exec_module(_example)

setup, tasks, merge, finish = _example.setup, _example.tasks, _example.merge, _example.finish
_in_run = 0.0


def run(s, k, name):
    global _in_run
    start = time.perf_counter()
    try:
        return _example.run(s, k, name)
    finally:
        _in_run += time.perf_counter() - start
        print(f"state-cost {os.getpid()} {_in_run:.6f} {cowrun._state_seconds():.6f}",
              file=sys.stderr, flush=True)
