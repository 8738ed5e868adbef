"""Exit codes of the squall command (documented in docs/numbers.md)."""

from __future__ import annotations

OK = 0  # the run completed and at least one request succeeded
ALL_FAILED = 1  # the run completed but every request failed
USAGE = 2  # bad command line: unknown flag, invalid value or URL, unreadable input file
# squall -f: an event listener raised (logged, the run went on: Locust's unhandled_greenlet_exception);
# after --exit-code-on-error (failed requests, task exceptions), as in Locust; 1 if it was an init listener
LISTENER_RAISED = 2
CANNOT_START = 3  # the run could not start: host unresolvable, connection refused, TLS failure, file limit
LOST = 4  # squall mqtt --verify: messages were published but never delivered
WRITE_FAILED = 5  # an output (--json, --csv, --html, ...) could not be written: the disk filled up, ...
THRESHOLDS = 99  # a --threshold failed (k6's code), or a `squall compare --fail-if`; before 1 and 4, after 130 and 143
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT); results so far are still printed and written
TERMINATED = 143  # stopped by SIGTERM; likewise


def stopped_by(signum: int) -> int:
    """The exit code of a run stopped by signal `signum`: Ctrl-C (SIGINT, 2) or anything else (SIGTERM)."""
    return INTERRUPTED if signum == 2 else TERMINATED


def stopped_why(signum: int) -> str:
    """What `stopped_by(signum)` means, for the verdict block."""
    return "stopped by Ctrl-C" if signum == 2 else "stopped by SIGTERM"
