"""The command line's parser and the converters its commands share: a mistake is one line on stderr and
exit code 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from squall import exitcodes
from squall.durations import parse_duration
from squall.errors import UsageError

if TYPE_CHECKING:
    # What `add_subparsers(parser_class=Parser)` returns: each command adds its parser to it.
    Subcommands = argparse._SubParsersAction["Parser"]


# The keywords Locust's parser takes beside argparse's (configargparse's `env_var`, and its own web UI
# ones), with their defaults: a locustfile's `init_command_line_parser` listener may pass any of them.
LOCUST_KEYWORDS = {"env_var": None, "include_in_web_ui": True, "is_secret": False, "is_required": False,
                   "is_multiple": False}  # fmt: skip


def _with_keywords(add: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> argparse.Action:
    """argparse's add_argument, taking Locust's keywords too: they become attributes of the action
    (`env_var` is read by `squall.config`, `is_secret` hides the value in the dashboard and reports)."""
    extra = {k: kwargs.pop(k, default) for k, default in LOCUST_KEYWORDS.items()}
    action: argparse.Action = add(*args, **kwargs)
    for k, v in extra.items():
        setattr(action, k, v)
    return action


class _Group(argparse._ArgumentGroup):
    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return _with_keywords(super().add_argument, args, kwargs)


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line on stderr and exit code 2, never a usage dump; and
    `add_argument` takes Locust's keywords (`env_var=`, `include_in_web_ui=`, `is_secret=`, ...), as
    Locust's configargparse-based parser does, on the parser and on its groups."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The (sub)command a command line chose, for the help its mistakes point to: argparse says an
        # argument no subcommand knew at the top (`squall import har X --weight a=1` pointed to
        # 'squall --help', not to 'squall import har --help', where the options are).
        self.set_defaults(_command_prog=self.prog)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(exitcodes.USAGE)

    def parse_args(self, args: Sequence[str] | None = None, namespace: None = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            prog = getattr(parsed, "_command_prog", self.prog)
            sys.stderr.write(f"{prog}: error: unrecognized arguments: {' '.join(extras)} (see '{prog} --help')\n")
            sys.exit(exitcodes.USAGE)
        return parsed

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return _with_keywords(super().add_argument, args, kwargs)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> argparse._ArgumentGroup:
        group = _Group(self, *args, **kwargs)
        self._action_groups.append(group)
        return group

    @property
    def secret_options(self) -> set[str]:
        """The dests of options declared `is_secret=True`: never shown in the page or reports."""
        return {a.dest for a in self._actions if getattr(a, "is_secret", False)}


def whole_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum` (--expect-workers, its wait)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"'{text}' must be at least {minimum}")
        return value

    return parse


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


def add_output_arguments(p: argparse.ArgumentParser, csv_help: str) -> None:
    """The output flags of `squall bench` and `squall mqtt`: the result's files and the progress line."""
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="write the full result (summary, time series, histograms)")
    out.add_argument("--csv", metavar="PREFIX", help=csv_help)
    out.add_argument("--csv-full-history", action="store_true", help="per-endpoint rows in the history CSV too")
    out.add_argument("--html", metavar="FILE", help="write a self-contained HTML report with charts")
    out.add_argument("-q", "--quiet", action="store_true", help="no live progress line")


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
        help="with --threshold-abort: no check before this much of the run (default 10s; 0: from the first second)",
    )
