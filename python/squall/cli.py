"""The `squall` command line: `squall bench URL`, `squall mqtt`, `squall demo`, `squall import`, `squall -f FILE`."""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from typing import TYPE_CHECKING, Any

from squall import __version__, config, exitcodes, files, start_up
from squall.errors import UsageError
from squall.event import events
from squall.options import run_arguments
from squall.options.arguments import Parser
from squall.runtime import signals

if TYPE_CHECKING:
    from squall.shape import LoadTestShape
    from squall.user.users import User


def build_parser(run_only: bool = False) -> tuple[Parser, argparse.ArgumentParser]:
    """The parser of the whole command line, and the `run` command's own (which config files fill).
    `run_only`: the other commands are left out and their modules not imported (a command line that is
    `run`'s cannot name them: start-up, see `main`)."""
    parser = Parser(prog="squall", description="Load testing scripted like Locust, fast like wrk.")
    parser.add_argument("-V", "--version", action="version", version=f"squall {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    if not run_only:
        from squall.commands import bench, demo, imports, mqtt, report  # (start-up: `run` has no use for them)

        bench.add_parser(commands)
        mqtt.add_parser(commands)
        demo.add_parser(commands)
        report.add_parsers(commands)
        imports.add_parser(commands)
    run_parser = commands.add_parser(
        "run",
        help="run a locustfile (also: squall -f FILE ...)",
        description="Run a locustfile unchanged: Locust's flags, tables and CSV files.",
    )
    run_arguments.add_arguments(run_parser)
    run_parser.set_defaults(func=_run)
    return parser, run_parser


class _PipeSafe(io.FileIO):
    """Standard output's file descriptor, whose reader may go (`squall bench URL --json r.json | head -1`):
    a write to the closed pipe sends the rest to /dev/null instead of raising, so the command goes on,
    writes its files and exits with its own code. A BrokenPipeError from a print ended it wherever it
    was: exit 0 with a failed threshold, no JSON, CSV or HTML, the partial files left."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data) or 0
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.fileno())
            os.close(devnull)
            return len(data)


def _pipe_safe_stdout() -> None:
    """sys.stdout over `_PipeSafe`, with its encoding and buffering (what was written before, flushed)."""
    old = sys.stdout
    if old is None or not hasattr(old, "fileno"):
        return
    try:
        fd = old.fileno()
        old.flush()
    except (OSError, ValueError):  # (no descriptor: an embedding's stream; a pipe closed already)
        return
    raw = _PipeSafe(fd, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=old.encoding, errors=old.errors, line_buffering=bool(old.line_buffering)
    )


def main(argv: list[str] | None = None) -> int:
    signals.take_ctrl_c()
    program = argv is None  # the process's own command line: it exits when this returns
    if program:
        _pipe_safe_stdout()
    argv = sys.argv[1:] if argv is None else argv
    typed = argv  # as typed: the reports and the dashboard show it so
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "-V", "--version"):
        argv = ["run", *argv]  # Locust's command line: squall -f locustfile.py -u 10 ...
    is_run = bool(argv) and argv[0] == "run"
    # `squall -f`/`run` builds only its own parser: the other commands' modules (bench's, with the
    # breaking-point search and the distributed driver's workers) are not imported for it.
    parser, run_parser = build_parser(run_only=is_run)
    try:
        loaded = None
        if is_run and {"-h", "--help"} & set(argv):
            run_parser.print_help()  # as Locust, whatever else is there (`squall -f --help`)
            return exitcodes.OK
        if is_run:
            loaded = _prepare_run(parser, run_parser, argv)
            if isinstance(loaded, int):
                return loaded
        args = parser.parse_args(argv)
        start_up.resume()  # (if the locustfile's load did not already)
        args.loaded, args.argv, args.typed_argv, args.parser = loaded, argv, typed, run_parser
        if not args.command:
            parser.print_help(sys.stderr)
            return exitcodes.USAGE
        code: int = args.func(args)
        return _written(code)
    except UsageError as e:
        command = argv[0] if argv and not argv[0].startswith("-") else ""
        sys.stderr.write(f"squall {command}: error: {e}\n".replace("squall : ", "squall: "))
        return exitcodes.USAGE
    except KeyboardInterrupt:
        sys.stderr.write("squall: interrupted\n")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        return exitcodes.OK
    finally:
        signals.ending()
        if program:
            # The interpreter's exit then skips collecting what is left (its last gc pass, whose
            # objects it would only free): 0.06 of the 0.075 CPU-s that exit took after 1,000 users
            # (wait4 against the locustfile's atexit). atexit handlers still run, and objects still go
            # as their last reference does; only objects in reference cycles are not finalized, which
            # CPython does not promise at exit either.
            gc.freeze()


def _written(code: int) -> int:
    """The command's exit code, or WRITE_FAILED when an output it was asked for could not be written
    (each said on stderr as it failed): a CI job must not pass with its report missing. A signal's code
    stays (the user stopped it, and the failed files were said)."""
    return files.exit_code(code)


def _run(args: argparse.Namespace) -> int:
    # Loaded for `squall run` (`-f`) only: with the Locust-compatible API it pulls in, 0.05 of the
    # 0.24 CPU-s that `import squall.cli` cost; other commands never need it (for start-up).
    from squall.commands import run

    return run.run(args)


def _prepare_run(
    parser: Parser, run_parser: argparse.ArgumentParser, argv: list[str]
) -> tuple[list[type[User]], type[LoadTestShape] | None] | int:
    """The locustfile is loaded before the final parse, so that its `events.init_command_line_parser`
    listeners can add options (as Locust does); then the config sources become the defaults of every
    option, the file's own included (their `env_var=` too). Returns the loaded (User classes, shape
    class), or an exit code when the file cannot load."""
    from squall.commands import run  # for start-up: see _run
    from squall.locustfile import ScriptError  # for start-up: see _run

    try:
        config.apply(run_parser, argv, warn=False)  # for -f/locustfile from a config source
        known, _ = parser.parse_known_args(argv)
        try:
            # `-f -` (Locust's): a worker that takes the master's locustfile, and has none of its own
            spec = known.locustfile
            loaded = ([], None) if spec == "-" else run.load_locustfile(spec, _runs_users_here(known))
        except ScriptError as e:
            sys.stderr.write(f"squall: error: {e}\n")
            return exitcodes.USAGE
        events.init_command_line_parser.fire(parser=run_parser)
        config.apply(run_parser, argv)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None
    return loaded


def _runs_users_here(known: argparse.Namespace) -> bool:
    """Whether this process runs the locustfile's users itself (so patches the standard library with
    gevent first, squall.runtime.gevent_hub), or only drives processes that do: --processes, --ray, --master and
    --worker start them, --find-limit runs each step in one; -l and the task ratios run none. A driver keeps
    the standard library as it is (Ray's client, in particular, waits on real threads), and so does a
    process that only lists the file's classes (a caller's threads stay threads: pytest-xdist's workers
    run tests/test_file_fuzz.py's `squall -l` in their own process)."""
    if os.environ.get("SQUALL_WORKER"):
        return True
    return not (
        getattr(known, "processes", None) not in (None, 1)
        or getattr(known, "ray", None)
        or getattr(known, "master", False)
        or getattr(known, "worker", False)
        or getattr(known, "find_limit", False)
        or getattr(known, "list", False)
        or getattr(known, "show_task_ratio", False)
        or getattr(known, "show_task_ratio_json", False)
    )


if __name__ == "__main__":
    sys.exit(main())
