"""The command line of `squall -f locustfile.py`: every option of Locust 2.47's `locust --help` (and its
hidden ones), then squall's own.

Policy: a Locust option is accepted wherever Locust accepts it, so that CI scripts written for Locust
run unchanged. Where it has a meaning in squall it is implemented (in `squall.commands.run`); where it
has none, a run that sets it says so in one line on stderr and goes on (`NO_EFFECT`); where going on
would do something else than asked (HTTPS for the dashboard), it is a
one-line error and exit 2 (`UNSUPPORTED`), never a silent local run. Locust's own removed options
(`--legacy-ui`, `--slave`, ...) fail with Locust's message. Options keep squall's destinations (`users`,
`csv`, `html`); `locust_aliases` adds Locust's (`num_users`, `csv_prefix`, `html_file`, ...) to the
parsed options, which locustfiles read as `environment.parsed_options`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from squall import __version__, distributed, exitcodes, limit, monitor
from squall.load_values import exit_code, port
from squall.options.arguments import add_threshold_arguments, to_rate, whole_at_least
from squall.web import live

# Options with no meaning in squall: each line says why (printed when a run sets the option).
NO_EFFECT = {
    "class_picker": "--class-picker has no effect in squall: its dashboard has no class picker "
    "(name the User classes on the command line instead)",
    "build_path": "--build-path has no effect in squall: its dashboard is built in",
    "web_base_path": "--web-base-path has no effect in squall: its dashboard is served at the root path",
    "profile": "--profile has no effect in squall: it keeps no history of runs to group",
    "enable_rebalancing": "--enable-rebalancing has no effect: squall's master places each worker's share "
    "once; a worker that joins later takes no share (see --on-worker-loss replace)",
}

# Options squall cannot honour without doing something else than asked: a one-line error, exit 2.
UNSUPPORTED = {
    "tls_cert": "--tls-cert is not supported yet: squall's dashboard serves plain HTTP",
    "tls_key": "--tls-key is not supported yet: squall's dashboard serves plain HTTP",
}

# Options of one role of a distributed run (`--master`, `--worker`): a note when set without it.
ROLE_OPTIONS = {
    "master_bind_host": "master",
    "master_bind_port": "master",
    "expect_workers": "master",
    "expect_workers_max_wait": "master",
    "master_host": "worker",
    "master_port": "worker",
}

# Locust's destinations for the options squall stores under other names.
LOCUST_DESTS = {
    "num_users": "users",
    "csv_prefix": "csv",
    "stats_history_enabled": "csv_full_history",
    "html_file": "html",
    "list_commands": "list",
}

SUPPRESS = argparse.SUPPRESS


def _removed(message: str) -> type[argparse.Action]:
    """An option Locust removed: using it fails with Locust's message."""

    class Removed(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kw: Any) -> None:
            parser.error(message)

    return Removed


def json_user_config(text: str) -> list[dict[str, Any]]:
    """`--config-users`: a JSON object or list of them (or a .json file holding that), each naming its
    `user_class_name` (Locust's `json_user_config`)."""
    try:
        if text.endswith(".json"):
            with open(text) as f:
                config = json.load(f)
        else:
            config = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--config-users takes a JSON string or file: {e}") from None
    except OSError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    configs = config if isinstance(config, list) else [config]
    for c in configs:
        if not isinstance(c, dict) or "user_class_name" not in c:
            raise argparse.ArgumentTypeError("the user config must specify a user_class_name")
    return configs


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--locustfile", default="locustfile.py", env_var="LOCUST_LOCUSTFILE",
        help="the locustfile: a .py file, comma-separated files, a directory of them, or a module "
        "(default locustfile.py)",
    )  # fmt: skip
    p.add_argument("--config", metavar="FILE", help="a config file (key = value lines, or TOML [tool.locust])")
    p.add_argument("-H", "--host", env_var="LOCUST_HOST", help="base URL of the system under test")
    p.add_argument("-u", "--users", env_var="LOCUST_USERS", help="peak number of users (default 1)")
    p.add_argument("-r", "--spawn-rate", default="1", env_var="LOCUST_SPAWN_RATE", help="users started per second")
    p.add_argument("-t", "--run-time", env_var="LOCUST_RUN_TIME", help="stop after this long: 300s, 20m, 3h, 1h30m")
    p.add_argument("-l", "--list", action="store_true", help="list the User classes and exit")
    p.add_argument(
        "--config-users", type=json_user_config, nargs="*", env_var="LOCUST_CONFIG_USERS",
        help="settings of User classes as JSON ({\"user_class_name\": \"A\", \"weight\": 2, ...}) or a .json file",
    )  # fmt: skip
    p.add_argument("-V", "--version", action="version", version=f"squall {__version__}")


def _web(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("dashboard (Locust's web UI options)")
    live.add_arguments(g, default_port=8089)
    g.add_argument("-P", dest="web_port", type=port, default=SUPPRESS, help="the same as --web-port")
    g.add_argument("--web-host-display-name", help=SUPPRESS, env_var="LOCUST_WEB_HOST_DISPLAY_NAME")
    g.add_argument(
        "--headless", action="store_true", env_var="LOCUST_HEADLESS",
        help="no dashboard: start at once, end with the run",
    )  # fmt: skip
    g.add_argument("--headful", action="store_true", env_var="LOCUST_HEADFUL", help="undo --headless (from a config)")
    g.add_argument(
        "--autostart", action="store_true", env_var="LOCUST_AUTOSTART",
        help="with the dashboard: start at once, not from the page",
    )  # fmt: skip
    g.add_argument(
        "--autoquit", type=int, default=None, metavar="SECONDS", env_var="LOCUST_AUTOQUIT",
        help="with the dashboard: quit this long after the run ends (default: serve the result until Ctrl-C)",
    )  # fmt: skip
    g.add_argument(
        "--web-login", action="store_true", env_var="LOCUST_WEB_LOGIN",
        help="a login page before the dashboard, set up by the locustfile (Flask-Login, as for Locust)",
    )  # fmt: skip
    g.add_argument("--tls-cert", default="", metavar="FILE", env_var="LOCUST_TLS_CERT", help="not supported yet")
    g.add_argument("--tls-key", default="", metavar="FILE", env_var="LOCUST_TLS_KEY", help="not supported yet")
    g.add_argument("--class-picker", action="store_true", env_var="LOCUST_USERCLASS_PICKER", help="no effect")
    g.add_argument("--web-base-path", default="", env_var="LOCUST_WEB_BASE_PATH", help="no effect")
    g.add_argument("--build-path", default="", env_var="LOCUST_BUILD_PATH", help=SUPPRESS)
    g.add_argument(
        "--legacy-ui", nargs=0, help=SUPPRESS,
        action=_removed("--legacy-ui is no longer supported, remove the parameter to continue"),
    )  # fmt: skip


def _distributed(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distributed (Locust's master and worker, on Ray: docs/distributed.md)")
    g.add_argument(
        "--master", action="store_true", env_var="LOCUST_MODE_MASTER",
        help="open a Ray cluster here, wait for --expect-workers workers, run on them",
    )  # fmt: skip
    g.add_argument(
        "--master-bind-host", default="*", env_var="LOCUST_MASTER_BIND_HOST",
        help="the address the master listens on (default: this machine's)",
    )  # fmt: skip
    g.add_argument(
        "--master-bind-port", type=port, default=5557, env_var="LOCUST_MASTER_BIND_PORT",
        help="the master's port (its Ray head's; default 5557)",
    )  # fmt: skip
    g.add_argument(
        "--expect-workers", type=whole_at_least(1), default=1, env_var="LOCUST_EXPECT_WORKERS",
        help="workers (squall --worker processes) to wait for before starting (default 1)",
    )  # fmt: skip
    g.add_argument(
        "--expect-workers-max-wait", type=whole_at_least(0), default=0, env_var="LOCUST_EXPECT_WORKERS_MAX_WAIT",
        help="seconds to wait for them (default 0: as long as it takes)",
    )  # fmt: skip
    g.add_argument("--enable-rebalancing", action="store_true", help="no effect")
    g.add_argument(
        "--worker", action="store_true", env_var="LOCUST_MODE_WORKER",
        help="join the master's cluster as a node hosting one engine (or --processes N; -1: one per core)",
    )  # fmt: skip
    g.add_argument("--master-host", default="127.0.0.1", env_var="LOCUST_MASTER_NODE_HOST", help="the master's host")
    g.add_argument("--master-port", type=port, default=5557, env_var="LOCUST_MASTER_NODE_PORT", help="its port")
    removed = {"--expect-slaves": "--expect-slaves parameter has been renamed --expect-workers",
               "--slave": "--slave parameter has been renamed --worker"}  # fmt: skip
    for option, message in removed.items():
        g.add_argument(option, nargs=0, help=SUPPRESS, action=_removed(f"The {message}"))
    p.add_argument(
        "--processes", type=int, default=None, env_var="LOCUST_PROCESSES",  # (None when not given, as Locust's)
        help="worker processes, one engine each, statistics merged losslessly (-1: one per core)",
    )  # fmt: skip


def _outputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("statistics and output")
    g.add_argument("--csv", metavar="PREFIX", env_var="LOCUST_CSV", help="write Locust's CSV files")
    g.add_argument(
        "--csv-full-history", action="store_true", env_var="LOCUST_CSV_FULL_HISTORY",
        help="per-endpoint rows in the history CSV",
    )  # fmt: skip
    g.add_argument(
        "--print-stats", action="store_true", env_var="LOCUST_PRINT_STATS",
        help="the stats table every 2 s with the dashboard too (headless runs print it anyway)",
    )  # fmt: skip
    g.add_argument("--only-summary", action="store_true", env_var="LOCUST_ONLY_SUMMARY", help="only the final tables")
    g.add_argument(
        "--reset-stats", action="store_true", env_var="LOCUST_RESET_STATS",
        help="reset the statistics (tables, files, dashboard) once every user has started, as Locust does",
    )  # fmt: skip
    g.add_argument(
        "--html", metavar="FILE", env_var="LOCUST_HTML",
        help="write a self-contained HTML report ({u}, {r}, {t} are replaced)",
    )  # fmt: skip
    g.add_argument("--json", action="store_true", help="print the final stats to stdout as Locust's JSON")
    g.add_argument("--json-file", metavar="NAME", help="write the final stats as Locust's JSON to NAME.json")
    g.add_argument("--result-json", metavar="FILE", help="write squall's full result (for squall report) to FILE")
    g = p.add_argument_group("logging")
    g.add_argument(
        "--skip-log-setup", action="store_true", env_var="LOCUST_SKIP_LOG_SETUP",
        help="leave logging as the locustfile or Python's defaults set it",
    )  # fmt: skip
    g.add_argument(
        "-L", "--loglevel", default="INFO", type=str.upper, env_var="LOCUST_LOGLEVEL",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], help="DEBUG/INFO/WARNING/ERROR/CRITICAL",
    )  # fmt: skip
    g.add_argument("--logfile", metavar="FILE", env_var="LOCUST_LOGFILE", help="the log goes here, not to stderr")


def _behaviour(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("users and tasks")
    g.add_argument("-T", "--tags", nargs="*", metavar="TAG", env_var="LOCUST_TAGS", help="only tasks with these tags")
    g.add_argument(
        "-E", "--exclude-tags", nargs="*", metavar="TAG", env_var="LOCUST_EXCLUDE_TAGS", help="no tasks with these tags"
    )
    g.add_argument("--show-task-ratio", action="store_true", help="print the task ratio tables and exit")
    g.add_argument("--show-task-ratio-json", action="store_true", help="print the task ratios as JSON and exit")
    g.add_argument(
        "--exit-code-on-error", type=exit_code, default=1, env_var="LOCUST_EXIT_CODE_ON_ERROR",
        help="exit code when requests failed (default 1)",
    )  # fmt: skip
    g.add_argument(
        "-s", "--stop-timeout", default="0", env_var="LOCUST_STOP_TIMEOUT",
        help="time users get to finish their task at the end",
    )  # fmt: skip
    g.add_argument("--equal-weights", action="store_true", help="every User class and task weighs the same")
    g.add_argument("--profile", help="no effect")
    g.add_argument(
        "--otel", action="store_true", env_var="LOCUST_ENABLE_OPENTELEMETRY",
        help="export the run's metrics and log over OpenTelemetry (OTLP; OTEL_* variables; squall[otel])",
    )  # fmt: skip


def _squall(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("squall's own")
    g.add_argument("--insecure", action="store_true", help="accept any TLS certificate")
    g.add_argument(
        "--http2", action="store_true", help="HTTP/2 for the users' requests (ALPN over TLS, prior knowledge over http)"
    )
    g.add_argument(
        "--rate",
        type=to_rate,
        help="open model: task iterations start at this rate a second, whatever the server does; -u caps the users",
    )
    g.add_argument(
        "--arrival", choices=["constant", "poisson"], default="constant", help="open model: spacing of the arrivals"
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    _web(p)
    _distributed(p)
    _outputs(p)
    _behaviour(p)
    _squall(p)
    distributed.add_arguments(p)
    add_threshold_arguments(p)
    monitor.add_arguments(p)
    limit.add_arguments(
        p, "the most users the target serves (each step the file afresh)", "--max-users", limit.DEFAULT_SLOS
    )
    p.add_argument(
        "user_classes", nargs="*", metavar="UserClass", default=os.environ.get("LOCUST_USER_CLASSES", "").split(),
        help="run only these User classes (or LOCUST_USER_CLASSES)",
    )  # fmt: skip


def locust_aliases(args: argparse.Namespace) -> None:
    """Adds Locust's destinations (`num_users`, `csv_prefix`, ...) beside squall's, and `--headful`."""
    for locust, squall in LOCUST_DESTS.items():
        setattr(args, locust, getattr(args, squall, None))
    if getattr(args, "headful", False):
        args.headless = False


def check_unsupported(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int | None:
    """Before the run: USAGE with one line for an option squall cannot honour. Returns the exit code,
    or None to go on."""
    defaults = {a.dest: a.default for a in parser._actions}
    for dest, message in UNSUPPORTED.items():
        if getattr(args, dest, None) not in (None, False, "", defaults.get(dest)):
            sys.stderr.write(f"squall: error: {message}\n")
            return exitcodes.USAGE
    return None


def no_effect_notes(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """A one-line note for each option set that has no effect, for the run to print once the command
    line has passed its checks (a command line refused says only why, in one line)."""
    defaults = {a.dest: a.default for a in parser._actions}
    notes = [
        f"squall: note: {message}\n"
        for dest, message in NO_EFFECT.items()
        if getattr(args, dest, None) not in (None, False, "", defaults.get(dest))
    ]
    for dest, role in ROLE_OPTIONS.items():
        if not getattr(args, role, False) and getattr(args, dest, None) not in (None, defaults.get(dest)):
            option = "--" + dest.replace("_", "-")
            notes.append(f"squall: note: {option} has no effect without --{role}\n")
    if getattr(args, "find_limit", False) and getattr(args, "run_time", None) not in (None, defaults.get("run_time")):
        notes.append("squall: note: -t has no effect with --find-limit: --step-time sets each step's length\n")
    return notes
