"""The `squall` command line: `squall bench URL`, `squall demo`."""

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
    from squall import __version__, bench, demo, run_script

    parser = Parser(prog="squall", description="Load testing scripted like Locust, fast like wrk.")
    parser.add_argument("-V", "--version", action="version", version=f"squall {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    bench.add_parser(commands)
    demo.add_parser(commands)
    run = commands.add_parser("run", help="run a locustfile (also: squall -f FILE ...)",
                              description="Run a locustfile unchanged: Locust's flags, tables and CSV files.")
    run_script.add_arguments(run)
    run.set_defaults(func=run_script.run)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "-V", "--version"):
        argv = ["run", *argv]  # Locust's command line: squall -f locustfile.py -u 10 ...
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help(sys.stderr)
            return exitcodes.USAGE
        return args.func(args)
    except UsageError as e:
        sys.stderr.write(f"squall {args.command}: error: {e}\n")
        return exitcodes.USAGE
    except KeyboardInterrupt:
        sys.stderr.write("squall: interrupted\n")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        return exitcodes.OK


if __name__ == "__main__":
    sys.exit(main())
