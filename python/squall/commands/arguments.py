"""The command line's parser and the converters its commands share: a mistake is one line on stderr and
exit code 2."""

import argparse
import sys

from squall import exitcodes
from squall.durations import parse_duration
from squall.errors import UsageError


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line on stderr and exit code 2, never a usage dump."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(exitcodes.USAGE)


def to_positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise UsageError(f"'{text}' must be at least 1")
    return value


def to_duration(text):
    try:
        return parse_duration(text)
    except ValueError as e:
        raise UsageError(str(e)) from None


def to_rate(text):
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"invalid rate '{text}' (requests per second)") from None
    if not value > 0:
        raise UsageError(f"invalid rate '{text}': must be more than zero")
    return value
