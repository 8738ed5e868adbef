"""Drives an engine run from Python: the live progress line, Ctrl-C and SIGTERM."""

import json

from squall.progress import ProgressLine
from squall.signals import on_stop_signals


def drive(engine_run, config, show_progress=True):
    """Waits for the run to end; returns (result dict, the signal that stopped it or None).

    A signal stops the run, and the result still holds everything measured until then.
    """
    received = []

    def on_signal(signum):
        received.append(signum)
        engine_run.stop()

    line = ProgressLine(config) if show_progress else None
    with on_stop_signals(on_signal):
        try:
            while not engine_run.wait(0.25):
                if line:
                    line.update(*engine_run.progress()[:3])
        finally:
            if line:
                line.clear()
    return json.loads(engine_run.result_json()), (received[0] if received else None)
