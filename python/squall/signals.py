"""Ctrl-C and SIGTERM during a run: a handler instead of KeyboardInterrupt, restored afterwards."""

from __future__ import annotations

import signal
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
