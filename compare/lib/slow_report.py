"""slow_report.py - a report whose tasks each take about SECONDS of CPU:
the 1 s-per-task case of compare/bench-tasks-per-worker.  setup() builds
a frame of ROWS rows x 8 float columns with numpy (seeded: the same bytes
every run); task k spins on the CPU for SECONDS, then sums every
TASKS-th value of a column from its own offset.  Its output does not
depend on the spin, so every run's summary is the same.  argv: [--tasks N] [--seconds S] [--rows R]."""
import argparse
import time

import numpy as np
import pandas as pd


def setup(argv):
    p = argparse.ArgumentParser(prog="slow_report.py")
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--rows", type=int, default=2_000_000)
    a = p.parse_args(argv)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.random((a.rows, 8)), columns=["c%d" % i for i in range(8)])
    return {"frame": frame, "tasks": a.tasks, "seconds": a.seconds, "sums": []}


def tasks(state):
    return ["slow-%03d.txt" % k for k in range(state["tasks"])]


def run(state, k, name):
    end = time.process_time() + state["seconds"]
    while time.process_time() < end:
        pass
    column = state["frame"]["c0"].to_numpy()
    return float(column[k::state["tasks"]].sum())  # a view: nothing copied


def merge(state, k, name, result):
    state["sums"].append(result)


def finish(state, out):
    print("%d tasks, sum %.6f" % (len(state["sums"]), sum(state["sums"])), file=out)
