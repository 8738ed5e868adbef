"""The `squall` command line: `squall bench URL`, `squall mqtt`, `squall demo`, `squall -f FILE`."""

import argparse
import sys

from squall import exitcodes


class UsageError(Exception):
    """Bad input on the command line: reported in one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line on stderr and exit code 2, never a usage dump."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(exitcodes.USAGE)


def build_parser() -> Parser:
    from squall import __version__, bench, demo, mqtt, run_script

    parser = Parser(prog="squall", description="Load testing scripted like Locust, fast like wrk.")
    parser.add_argument("-V", "--version", action="version", version=f"squall {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    bench.add_parser(commands)
    mqtt.add_parser(commands)
    demo.add_parser(commands)
    run = commands.add_parser("run", help="run a locustfile (also: squall -f FILE ...)",
                              description="Run a locustfile unchanged: Locust's flags, tables and CSV files.")
    run_script.add_arguments(run)
    run.set_defaults(func=run_script.run)
    parser.run_parser = run
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "-V", "--version"):
        argv = ["run", *argv]  # Locust's command line: squall -f locustfile.py -u 10 ...
    parser = build_parser()
    try:
        loaded = None
        if argv and argv[0] == "run" and not {"-h", "--help"} & set(argv):
            loaded = _prepare_run(parser, argv)
            if isinstance(loaded, int):
                return loaded
        args = parser.parse_args(argv)
        args.loaded, args.argv = loaded, argv
        if not args.command:
            parser.print_help(sys.stderr)
            return exitcodes.USAGE
        return args.func(args)
    except UsageError as e:
        command = argv[0] if argv and not argv[0].startswith("-") else ""
        sys.stderr.write(f"squall {command}: error: {e}\n".replace("squall : ", "squall: "))
        return exitcodes.USAGE
    except KeyboardInterrupt:
        sys.stderr.write("squall: interrupted\n")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        return exitcodes.OK


def _prepare_run(parser, argv):
    """Config sources become defaults, then the locustfile is loaded before the final parse, so that its
    `events.init_command_line_parser` listeners can add options (as Locust does). Returns the loaded
    (User classes, shape class), or an exit code when the file cannot load."""
    from squall import config, run_script
    from squall.event import events

    try:
        config.apply(parser.run_parser, argv)
    except config.ConfigError as e:
        raise UsageError(str(e)) from None
    known, _ = parser.parse_known_args(argv)
    try:
        loaded = run_script.load_locustfile(known.locustfile)
    except run_script.ScriptError as e:
        sys.stderr.write(f"squall: error: {e}\n")
        return exitcodes.USAGE
    events.init_command_line_parser.fire(parser=parser.run_parser)
    return loaded


if __name__ == "__main__":
    sys.exit(main())
