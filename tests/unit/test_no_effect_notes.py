"""The notes `squall -f` prints for options that change nothing (squall.options.run_arguments)."""

from squall.cli import build_parser
from squall.options.run_arguments import no_effect_notes


def notes(*argv):
    parser, run_parser = build_parser(run_only=True)
    return no_effect_notes(parser.parse_args(["run", "-f", "x.py", *argv]), run_parser)


def test_a_run_time_beside_find_limit_is_said_to_do_nothing():
    """--find-limit's steps last --step-time each: -t was silently ignored (bench refuses its load flags)."""
    assert notes("--find-limit", "-t", "5s") == [
        "squall: note: -t has no effect with --find-limit: --step-time sets each step's length\n"
    ]
    assert notes("--find-limit") == [] and notes("-t", "5s") == []
