"""Loaded by bench/per_request.py into squall's process (PYTHONPATH) for its counting run only: counts
greenlet switches (greenlet's trace hook sees every switch and throw) and writes the count to the file
SQUALL_BENCH_SWITCHES names when the process exits. The hook costs time: the timing run goes without."""

import atexit
import os

import greenlet

_count = [0]


def _trace(event, _args):
    if event in ("switch", "throw"):
        _count[0] += 1


greenlet.settrace(_trace)


@atexit.register
def _write():
    with open(os.environ["SQUALL_BENCH_SWITCHES"], "w") as f:
        f.write(str(_count[0]))
