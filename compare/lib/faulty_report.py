"""faulty_report.py - workloads/python/examples/sales_report.py with one
task that raises, for compare/bench-python's fault runs.

    FAULT_TASK=17 cowrun python compare/lib/faulty_report.py --input CSV

Everything is the example's own code (setup, tasks, merge, finish, and run
for every other task); with FAULT_TASK=K set, run() raises for task K
before it writes anything, so that task leaves no report.  Unset, this
script's output is the example's, byte for byte.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "..", "workloads", "python", "examples"))
import sales_report  # noqa: E402 (found through the line above)
from sales_report import finish, merge, setup, tasks  # noqa: E402 (the contract)

__all__ = ["setup", "tasks", "run", "merge", "finish"]


def fault_task():
    """The task index FAULT_TASK names, or None when it is unset or empty."""
    text = os.environ.get("FAULT_TASK", "")
    if text == "":
        return None
    if not text.isdigit():
        raise ValueError(f"FAULT_TASK={text!r}: a task index (0, 1, ...) expected")
    return int(text)


def run(s, k, name):
    if k == fault_task():
        raise RuntimeError(f"FAULT_TASK={k}: task {k} ({name}) fails on purpose")
    return sales_report.run(s, k, name)
