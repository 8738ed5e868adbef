"""`locust.argument_parser` while squall runs a locustfile: what locustfiles and plugins import from it.

locust-plugins' `__init__` imports `LocustArgumentParser` (to annotate its `init_command_line_parser`
listener), so a file importing `locust_plugins` needs this module to load. The parser a listener is
given is squall's (`squall.options.arguments.Parser`: argparse with Locust's `env_var=`,
`include_in_web_ui=`, `is_secret=` keywords), which `LocustArgumentParser` names here; `get_parser()`
is `squall -f`'s own command line, with the listeners' options added, as Locust's is."""

from __future__ import annotations

import argparse
from typing import Any

from squall import locustfile
from squall.durations import parse_duration
from squall.event import events
from squall.options.arguments import Parser
from squall.options.run_arguments import add_arguments, json_user_config

LocustArgumentParser = Parser

__all__ = [
    "LocustArgumentParser",
    "default_args_dict",
    "get_parser",
    "json_user_config",
    "parse_locustfile_paths",
    "parse_options",
    "positive_integer",
    "timespan",
    "ui_extra_args_dict",
]


def _run_parser() -> Parser:
    parser = Parser(prog="squall run", description="Run a locustfile unchanged.")
    add_arguments(parser)
    return parser


def get_parser() -> Parser:
    """`squall -f`'s parser, with the options of the `init_command_line_parser` listeners (Locust's)."""
    parser = _run_parser()
    events.init_command_line_parser.fire(parser=parser)
    return parser


def parse_options(args: list[str] | None = None) -> argparse.Namespace:
    """Parses a `squall -f` command line (Locust's deprecated helper)."""
    return get_parser().parse_args(args=args)


def default_args_dict() -> dict[str, Any]:
    """Every option's default, before any listener adds its own (Locust's)."""
    return vars(_run_parser().parse_args([]))


def ui_extra_args_dict(args: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The options the listeners added with `include_in_web_ui` (True by default), with their values,
    as Locust's web UI lists them."""
    defaults = default_args_dict()
    parser = get_parser()
    values = vars(parser.parse_args(args or []))
    shown = {a.dest: a for a in parser._actions if a.dest not in defaults and getattr(a, "include_in_web_ui", True)}
    return {
        dest: {
            "default_value": values.get(dest),
            "is_secret": bool(getattr(action, "is_secret", False)),
            "is_required": bool(getattr(action, "is_required", False)),
            "help_text": action.help,
            "is_multiple": bool(getattr(action, "is_multiple", False)),
            "choices": list(action.choices) if action.choices else None,
        }
        for dest, action in shown.items()
    }


def timespan(text: str) -> int:
    """A duration (`90`, `1h30m`) in whole seconds, as Locust's `--run-time` type."""
    try:
        return int(parse_duration(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_integer(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"Invalid --expect-workers argument ({value}), must be a positive number")
    return value


def parse_locustfile_paths(paths: list[str]) -> list[str]:
    """The locustfiles `-f` entries name, as absolute paths (files, directories, modules)."""
    return locustfile.paths(",".join(paths))
