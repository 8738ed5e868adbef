"""Locust's logging for `squall -f`: the same configuration (`locust/log.py`'s `setup_logging`), so that
the lines a run logs on stderr, and where a locustfile's own `logging` calls go, are Locust's.

Policy: the format is Locust's, `[%(asctime)s] HOST/%(levelname)s/%(name)s: %(message)s`, with the host
name cut at its first dot; the `locust.*` loggers and the root logger log at `--loglevel`, to stderr or
to `--logfile` (which then receives them instead of stderr, as in Locust); `--skip-log-setup` leaves
logging as the locustfile or Python's defaults set it. squall logs Locust's messages under Locust's
logger names (`locust.main`, `locust.runners`, ...) at the same points of a run, so that scrapers of
Locust's log keep working. The stats tables are not log records here: they go to stdout."""

from __future__ import annotations

import json
import logging
import logging.config
import os
import re
import socket
from collections import deque
from typing import Any

HOSTNAME = re.sub(r"\..*", "", socket.gethostname())
FORMAT = f"[%(asctime)s] {HOSTNAME}/%(levelname)s/%(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# The loggers Locust logs a run's life under; squall logs the same messages under the same names.
main_logger = logging.getLogger("locust.main")
runners_logger = logging.getLogger("locust.runners")
task_logger = logging.getLogger("locust.user.task")

# Locust's `locust.log.unhandled_greenlet_exception`: set when an event listener raised (logged where it
# did, squall.event); the run goes on, and its exit code is 2 unless a higher rule gives another
# (squall.commands.run_output.exit_code); after `init`'s listeners, the process ends with 1.
unhandled_greenlet_exception = False


class LogReader(logging.Handler):
    """The dashboard's Logs tab: the last 500 lines logged, formatted (Locust's `locust.log.LogReader`,
    which its web UI's Logs tab reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.logs: deque[str] = deque(maxlen=500)

    def emit(self, record: logging.LogRecord) -> None:
        self.logs.append(self.format(record))


def get_logs() -> list[str]:
    """The lines the log reader kept (none with --skip-log-setup, as in Locust). The dashboard's threads
    call it while the run logs: list() copies the deque of strings without releasing the GIL."""
    for handler in logging.getLogger().handlers:
        if handler.name == "log_reader" and isinstance(handler, LogReader):
            return list(handler.logs)
    return []


def config(loglevel: str, logfile: str | None = None) -> dict[str, Any]:
    """Locust's `dictConfig`: its formatter, handlers (its web UI's log reader too) and loggers."""
    level = loglevel.upper()
    handlers: dict[str, Any] = {
        "console": {"class": "logging.StreamHandler", "formatter": "default"},
        "console_plain": {"class": "logging.StreamHandler", "formatter": "plain"},
        "log_reader": {"class": "squall.log.LogReader", "formatter": "default"},
    }
    target = ["console", "log_reader"]
    if logfile:
        handlers["file"] = {"class": "logging.FileHandler", "filename": logfile, "formatter": "default"}
        target = ["file", "log_reader"]
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": {"format": FORMAT}, "plain": {"format": "%(message)s"}},
        "handlers": handlers,
        "loggers": {
            "locust": {"handlers": target, "level": level, "propagate": False},
            "locust.stats_logger": {"handlers": ["console_plain", "log_reader"], "level": "INFO", "propagate": False},
        },
        "root": {"handlers": target, "level": level},
    }


def setup_logging(loglevel: str, logfile: str | None = None) -> None:
    """Configures logging as Locust does; the log file's directory is created, as Locust does."""
    if logfile and (directory := os.path.dirname(logfile)):
        os.makedirs(directory, exist_ok=True)
    logging.config.dictConfig(config(loglevel, logfile))


def user_classes_count(counts: dict[str, int]) -> str:
    """`{"A": 2, "B": 1} (3 total users)`, as Locust's runners log the users of each class."""
    ordered = dict(sorted(counts.items()))
    return f"{json.dumps(ordered)} ({sum(counts.values())} total users)"
