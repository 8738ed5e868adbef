"""The end of a locustfile's run, as Locust ends: the exit code and its why, the tables on stderr,
`--json` and `--json-file` in Locust's JSON, and squall's own files (`--result-json`, `--csv`,
`--html`), its observations and the thresholds' verdicts."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from squall import exitcodes, log, outputs, thresholds
from squall.commands.drive import print_observations
from squall.env import Environment
from squall.report import locust_console, locust_json
from squall.report.totals import counted_s
from squall.web import live, page


def final_output(result: dict[str, Any], args: argparse.Namespace) -> None:
    """The verdicts, then the tables and files (for the runs of other processes: --processes and
    --find-limit)."""
    verdicts = judge(result, args)
    print_and_write(result, args, verdicts, *exit_code(result, args))


def judge(result: dict[str, Any], args: argparse.Namespace) -> list[thresholds.Verdict]:
    """The thresholds' verdicts, into the result (its files carry them)."""
    return thresholds.judge(result, getattr(args, "thresholds", None) or [], getattr(args, "watch", None))


def exit_code(
    result: dict[str, Any], args: argparse.Namespace, env: Environment | None = None, received: list[int] | None = None
) -> tuple[int, str]:
    """The run's exit code and why, as Locust decides it: `environment.process_exit_code`, a failed
    threshold, then --exit-code-on-error when requests failed or tasks raised, then 2 when an event
    listener raised (logged where it did, the run went on: squall.event). A stop signal (Ctrl-C,
    SIGTERM) does not change it, as in Locust: scripts and CI written for Locust read Locust's code
    (`squall bench` and `squall mqtt` exit 130 or 143). `received` only says why in the verdict."""
    stopped = f"; {exitcodes.stopped_why(received[0])}" if received else ""
    if env is not None and env.process_exit_code is not None:
        return env.process_exit_code, "set by the locustfile (environment.process_exit_code)" + stopped
    if any(not t["passed"] for t in result.get("thresholds", [])):
        return exitcodes.THRESHOLDS, "a threshold failed" + stopped
    failures, exceptions = result["aggregate"]["failures"], sum(x["count"] for x in result["exceptions"])
    if failures or exceptions:
        code: int = args.exit_code_on_error
        what = [f"{failures:,} requests failed"] if failures else []
        what += [f"{exceptions:,} task exceptions"] if exceptions else []
        return code, f"{' and '.join(what)} (--exit-code-on-error {code})" + stopped
    if log.unhandled_greenlet_exception:
        return exitcodes.LISTENER_RAISED, "an event listener raised (its traceback is logged above)" + stopped
    return exitcodes.OK, stopped[2:]


def print_and_write(
    result: dict[str, Any], args: argparse.Namespace, verdicts: list[thresholds.Verdict], code: int, why: str
) -> None:
    """As Locust at its end: the tables on stderr (Locust logs them there: its stats logger is a
    StreamHandler), unless `--json-file` is given; `--json` prints Locust's JSON on stdout, its only
    output, and `--json-file` writes it; then squall's files, its observations and the verdicts with
    the exit code (stderr too)."""
    # A run too short to have warned yet, above its tables (only the process that shows a run writes them:
    # a worker of --processes or of a distributed run hands its result on, and warns of nothing).
    live.warn_of_many_names(len(result["endpoints"]))
    side = sys.stderr
    if args.json:
        sys.stdout.write(locust_json.dumps(result) + "\n")
        sys.stdout.flush()
    if not args.json_file:
        side.write(locust_console.stats_table(result["endpoints"], result["aggregate"], counted_s(result)))
        side.write("\n" + locust_console.percentiles_table(result["endpoints"], result["aggregate"]))
        side.write("\n" + locust_console.error_report(result["errors"], script=True))
        if result["exceptions"]:
            side.write("\n" + locust_console.exceptions_report(result["exceptions"]))
    side.flush()
    if result["abandoned"]:
        sys.stderr.write(f"squall: {in_flight(result['abandoned'])}; not in the stats\n")
    written = []
    if args.json_file:
        try:
            written.append(locust_json.write(result, args.json_file))
        except OSError as e:
            sys.stderr.write(
                f"squall: error: cannot write {locust_json.file_path(args.json_file)}: {e.strerror or e}\n"
            )
    command_meta = page.meta("run", redact_secrets(args), args.host or "")
    command_meta["title"] = f"squall: {os.path.basename(args.locustfile)}"
    written += outputs.write_files(
        result,
        json_path=args.result_json,
        csv_prefix=args.csv,
        full_history=args.csv_full_history,
        html_path=html_path(args) if args.html else None,
        html_meta=command_meta,
    )
    print_observations(result, side)
    thresholds.say(verdicts, code, why, side)
    for path in written:
        sys.stderr.write(f"wrote {path}\n")


def in_flight(n: int) -> str:
    """The end's cancelled requests, counted in words that agree with the count."""
    noun, verb = ("request", "was") if n == 1 else ("requests", "were")
    return f"{n:,} {noun} in flight when their users stopped {verb} cancelled"


def html_path(args: argparse.Namespace) -> str:
    """--html with Locust's {u}, {r} and {t} replaced (users, spawn rate, run time in seconds; a whole
    number without its '.0'; a tag whose value is not set stays, as in Locust)."""
    html: str = args.html
    values = {"{u}": getattr(args, "num_users", None), "{r}": args.spawn_rate, "{t}": args.run_time}
    for tag, value in values.items():
        if value is not None:
            number = float(value)
            html = html.replace(tag, str(int(number)) if number.is_integer() else str(value))
    return html


def redact_secrets(args: argparse.Namespace) -> list[str]:
    """The command line as typed (`squall -f ...`, not the `run` squall reads it as), with the values of
    options declared `is_secret=True` hidden (`***`)."""
    parser = getattr(args, "parser", None)
    argv: list[str] = list(getattr(args, "typed_argv", None) or getattr(args, "argv", None) or [])
    if parser is None:
        return argv
    secret = {o for a in parser._actions if getattr(a, "is_secret", False) for o in a.option_strings}
    out: list[str] = []
    hide_next = False
    for a in argv:
        option, eq, _value = a.partition("=")
        if hide_next:
            out.append("***")
            hide_next = False
        elif option in secret and eq:
            out.append(f"{option}=***")
        else:
            out.append(a)
            hide_next = a in secret
    return out
