"""Ctrl-C and SIGTERM during a run: a handler instead of KeyboardInterrupt, restored afterwards; and
their deferral at the end of a run, while its result is built and its outputs are written."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_stop_signals(handler: Callable[[int], object]) -> Iterator[None]:
    """Calls `handler(signum)` on SIGINT or SIGTERM inside the block."""
    previous = {s: signal.signal(s, lambda signum, _frame: handler(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def deferred() -> Iterator[list[int]]:
    """Inside the block a stop signal is noted in the list it yields, not raised. It holds the end of a
    run (its result built, its summary and files written): the first Ctrl-C stops the run, and a second
    one 0.3 s later must not cut a file in half or lose the result (docs/numbers.md: after 130 the outputs still
    hold everything measured). A run's own `on_stop_signals` inside the block takes the signals while
    the run goes; after it, they are deferred again."""
    got: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in STOP_SIGNALS}
    try:
        yield got
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def take_ctrl_c() -> None:
    """Ctrl-C (SIGINT) stops squall in every phase, as a run's own handlers (`on_stop_signals`) do, even
    when squall was started with SIGINT ignored, which Python then leaves ignored: a background job of
    a non-interactive shell (`squall ... &` in a script, a CI runner's tree) inherits it, and so does
    every process started after `ending`. Such a squall ignored Ctrl-C while it connected to the target
    before the run (until the connect timed out: tests/test_bad_input.py, seen in CI) and took it once
    the run went. Only the main thread can set a handler; elsewhere (an embedding) it is left alone."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def ending() -> None:
    """The command has returned and its outputs are written: a stop signal from now on (the rest of a
    burst of Ctrl-C) is ignored, as the process exits anyway. Raised during the interpreter's exit, it
    would kill the process by the signal (exit -2) instead of with the command's code."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
