"""The command line's parser and the converters its commands share: a mistake is one line on stderr and
exit code 2."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, NoReturn

from squall import exitcodes
from squall.durations import parse_duration
from squall.errors import UsageError

if TYPE_CHECKING:
    # What `add_subparsers(parser_class=Parser)` returns: each command adds its parser to it.
    Subcommands = argparse._SubParsersAction["Parser"]


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line on stderr and exit code 2, never a usage dump."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(exitcodes.USAGE)


def to_positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise UsageError(f"'{text}' must be at least 1")
    return value


def to_duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise UsageError(str(e)) from None


def to_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"invalid rate '{text}' (requests per second)") from None
    if not value > 0 or value == float("inf"):  # nan fails the first test
        raise UsageError(f"invalid rate '{text}': must be a number more than zero")
    return value


def add_threshold_arguments(p: argparse.ArgumentParser) -> None:
    """--threshold, --threshold-abort, --threshold-grace: the same for every command."""
    g = p.add_argument_group("thresholds")
    g.add_argument(
        "--threshold",
        action="append",
        metavar="EXPR",
        help="a pass/fail criterion, repeatable: p95<300ms, p99.9<1s, max<2s, error_rate<1%%, rps>=500, "
        "'GET /x: p95<200ms', lost==0, deliver.p99<50ms; exit code 99 when one fails",
    )
    g.add_argument(
        "--threshold-abort", action="store_true", help="stop the run as soon as a threshold fails (after the grace)"
    )
    g.add_argument(
        "--threshold-grace",
        default="10s",
        metavar="DURATION",
        help="with --threshold-abort: no check before this much of the run (default 10s)",
    )
