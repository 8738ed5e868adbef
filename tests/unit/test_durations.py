"""Durations as users write them (-t, --ramp, --timeout, --stop-timeout), and as squall prints them."""

import pytest

from squall.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("30", 30.0),
        ("1.5", 1.5),
        ("30s", 30.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1h2m3s", 3723.0),
        ("1.5s", 1.5),
        ("250ms", 0.25),
        ("1s500ms", 1.5),
        (" 10S ", 10.0),
        ("2M", 120.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "abc", "10x", "1m 30s", "-5s", "5s10", "1.s", "m5"])
def test_parse_duration_rejects_what_is_not_a_duration(text):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["0", "0s", "0ms", "0h0m"])
def test_parse_duration_rejects_zero(text):
    with pytest.raises(ValueError, match="must be more than zero"):
        parse_duration(text)


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.0, "0.0s"),
        (1.25, "1.2s"),
        (59.94, "59.9s"),
        (60, "1m00s"),
        (61.4, "1m01s"),
        (119.6, "2m00s"),
        (3599, "59m59s"),
        (3600, "1h00m00s"),
        (5403, "1h30m03s"),
        (90000, "25h00m00s"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_format_then_parse_round_trips_whole_seconds():
    for seconds in (1, 59, 60, 61, 3599, 3600, 3661, 86400):
        assert parse_duration(format_duration(seconds)) == seconds


def test_zero_only_where_it_is_allowed():
    """A grace of 0 s is a setting (--threshold-grace 0: judged from the first second); a run of 0 s is not."""
    assert parse_duration("0", zero=True) == 0.0 == parse_duration("0s", zero=True)
    with pytest.raises(ValueError, match="must be more than zero"):
        parse_duration("0s")
