"""Ctrl-C and SIGTERM during a run: a handler instead of KeyboardInterrupt, restored afterwards."""

import signal
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_stop_signals(handler):
    """Calls `handler(signum)` on SIGINT or SIGTERM inside the block."""
    previous = {s: signal.signal(s, lambda signum, _frame: handler(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
