"""Fuzzing the parsers of what users type (durations, rates, counts, thresholds): random strings built
from the characters these parsers care about, and a few that trip parsers up (unicode digits, inf, nan,
exponents). Each must give a sane value or its documented error, never another exception. Seeded, so a
failure replays; `make fuzz` runs many more (SQUALL_FUZZ_N)."""

import math
import os
import random

import pytest

from squall import thresholds
from squall.durations import parse_duration
from squall.errors import UsageError
from squall.options.arguments import to_positive_int, to_rate

N = int(os.environ.get("SQUALL_FUZZ_N", "4000"))
PIECES = [
    *"0123456789",
    ".",
    "-",
    "+",
    "e",
    "E",
    " ",
    "_",
    ":",
    "%",
    "<",
    ">",
    "=",
    "!",
    "/",
    "ms",
    "us",
    "µs",
    "s",
    "m",
    "h",
    "d",
    "p",
    "p95",
    "p99.9",
    "max",
    "min",
    "mean",
    "error_rate",
    "rps",
    "lost",
    "deliver.",
    "publish.",
    "GET /x",
    "inf",
    "nan",
    "Infinity",
    "1e308",
    "1e-9",
    "\t",
    "\n",
    "\x00",
    "\u0663",
    "\uff11",
    "\U0001d7d7",
]  # fmt: skip (Arabic-Indic 3, fullwidth 1, bold 9: int() takes them)


def strings(seed):
    rnd = random.Random(seed)
    for _ in range(N):
        yield "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 8)))


@pytest.mark.parametrize("seed", [1, 2])
def test_durations(seed):
    for text in strings(seed):
        try:
            v = parse_duration(text)
        except ValueError:
            continue
        assert math.isfinite(v) and v >= 0, (text, v)


@pytest.mark.parametrize("seed", [3, 4])
def test_rates_and_counts(seed):
    for text in strings(seed):
        try:
            v = to_rate(text)
            assert math.isfinite(v) and v > 0, (text, v)
        except UsageError:
            pass
        try:
            n = to_positive_int(text)
            assert isinstance(n, int) and n >= 1, (text, n)
        except UsageError:
            pass


@pytest.mark.parametrize("seed", [5, 6])
def test_thresholds(seed):
    for text in strings(seed):
        try:
            t = thresholds.parse(text)
        except ValueError:
            continue
        assert math.isfinite(t.limit) and t.limit >= 0 and t.op in thresholds.OPS, (text, t)
