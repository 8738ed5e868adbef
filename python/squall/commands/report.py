"""`squall report RUN.json --html FILE --png DIR` and `squall compare A.json B.json [...]`: saved results
(from `--json`, or `squall -f`'s `--result-json`, merged `--processes` runs included) as the dashboard's
report, as PNG charts, or side by side."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from squall import exitcodes, files, gates, inputs, outputs
from squall.errors import UsageError
from squall.report import locust_json
from squall.report.totals import counted_s
from squall.report.units import ms
from squall.web import live, page

if TYPE_CHECKING:
    from squall.options.arguments import Subcommands

# A PNG per chart of the page: the charts' test ids (web/src) and the file names they get, in the page's
# order: the breaking point, the time charts, the distributions, where the time goes, the resources.
CHARTS = (
    "limit",
    "rps",
    "events",
    "tokens",
    "latency",
    "status",
    "mqtt",
    "mqtt-latency",
    "users",
    "schedule",
    "spectrum",
    "distribution",
    "timings",
    "streams",
    "monitor-cpu",
    "monitor-memory",
)


def add_parsers(commands: Subcommands) -> None:
    p = commands.add_parser(
        "report",
        help="render a saved result as an HTML report or PNG charts",
        description="Render a result saved with --json (or squall -f --result-json) as the dashboard's HTML report, "
        "or its charts as PNG files.",
    )
    p.add_argument("result", metavar="RUN.json", help="a result document (or a crashed run's RUN.json.partial.jsonl)")
    p.add_argument("--html", metavar="FILE", help="write the self-contained HTML report here")
    p.add_argument("--png", metavar="DIR", help="write each chart as a PNG into DIR (needs a Chromium)")
    p.add_argument("--title", help="the report's title")
    p.set_defaults(func=report)

    c = commands.add_parser(
        "compare",
        help="compare saved results side by side",
        description="Throughput, error rate and latency percentiles of saved runs side by side, per endpoint "
        "and in total, with the change from the first run in % (the error rate's in points); --html adds "
        "overlaid charts.",
    )
    c.add_argument(
        "results", nargs="+", metavar="RUN.json", help="two or more result documents; the first is the baseline"
    )
    c.add_argument("--labels", help="comma-separated names of the runs (default: the file names)")
    c.add_argument("--html", metavar="FILE", help="write the comparison as a self-contained HTML page")
    c.add_argument(
        "--fail-if",
        action="append",
        metavar="EXPR",
        help="a regression gate, repeatable: a change from the first run that fails the comparison (exit code "
        "99): 'p95>+10%%', 'rps<-5%%', 'error_rate>+0.5pp', 'GET /x: p99>+20%%'",
    )
    c.set_defaults(func=compare)


def load_result(path: str) -> dict[str, Any]:
    """A result document, checked enough that the report cannot fail half way (squall.inputs; exit 2
    otherwise, in one line); a crashed run's RESULT.partial.jsonl gives what it had measured."""
    try:
        if path.endswith(live.PARTIAL_SERIES):
            return live.read_partial(path)
        if path.endswith(live.PARTIAL_TOTALS):  # (the partial files' other half: totals without their seconds)
            series = path[: -len(live.PARTIAL_TOTALS)] + live.PARTIAL_SERIES
            raise UsageError(f"{path} holds a crashed run's totals only; squall report {series} renders the run")
        doc = inputs.parse_json(inputs.read_text(path), path)
        if locust_json.is_locust_stats(doc) and doc:
            raise UsageError(
                f"{path} holds Locust's JSON stats (--json-file); squall report needs --result-json's file"
            )
        inputs.check_result(doc, path)
    except inputs.InputError as e:
        raise UsageError(str(e)) from None
    result: dict[str, Any] = doc
    return result


def report(args: argparse.Namespace) -> int:
    if not args.html and not args.png:
        raise UsageError("say what to write: --html FILE and/or --png DIR")
    outputs.check_writable(html=args.html, read=[args.result])
    result = load_result(args.result)
    command = "mqtt" if result.get("mqtt") else ("run" if "exceptions" in result else "bench")
    meta = page.meta(command, [], result.get("url", ""), title=args.title or f"squall: {os.path.basename(args.result)}")
    meta["command_line"] = result.get("command_line") or ""  # the run's (none in a result from before it was kept)
    if args.html:
        page.write_report(args.html, result, meta)
        sys.stderr.write(f"wrote {args.html}\n")
    if args.png:
        for path in write_pngs(page.report(result, meta), args.png):
            sys.stderr.write(f"wrote {path}\n")
    return exitcodes.OK


def chromium() -> str:
    """The Chromium that renders PNGs: $SQUALL_CHROMIUM, else the first on PATH."""
    for name in (os.environ.get("SQUALL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and (found := shutil.which(name)):
            return found
    raise UsageError("--png needs Chromium: install it (Debian: apt install chromium) or set SQUALL_CHROMIUM")


def write_pngs(html: str, directory: str) -> list[str]:
    """Each chart the page draws, as DIR/<chart>.png, rendered by the page itself in headless Chromium, as
    it prints: without the sticky tabs (which covered the top of a chart scrolled under them) and the
    controls (log toggles, the endpoint picker)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise UsageError("--png needs Playwright: pip install 'squall[png]'") from None
    browser_path = chromium()
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--png {directory}: {e.strerror or e}") from None
    source = os.path.join(directory, ".report.html")
    with open(source, "w", encoding="utf-8") as f:
        f.write(html)
    written = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
            view = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=2)
            view.route(
                "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
            )
            view.emulate_media(media="print")
            view.goto("file://" + os.path.abspath(source))
            view.wait_for_selector("body[data-ready='1']", timeout=30_000)
            for chart in CHARTS:
                element = view.query_selector(f"[data-testid='chart-{chart}']")
                if element is None or not element.is_visible() or element.get_attribute("data-points") in (None, "0"):
                    continue
                path = os.path.join(directory, f"{chart}.png")
                element.screenshot(path=path)
                written.append(path)
            browser.close()
    finally:
        os.unlink(source)
    return written


def _change(new: float, old: float) -> str:
    if old == 0:
        return "" if new == 0 else "new"
    return f"{(new - old) / old * 100:+.1f}%"


def _row_numbers(e: dict[str, Any], duration: float) -> dict[str, float]:
    pct = e.get("percentiles_us") or {}
    return {
        "rps": e["requests"] / duration if duration else 0.0,
        "errors": e["failures"] / e["requests"] * 100 if e["requests"] else 0.0,
        "p50": pct.get("50", 0),
        "p95": pct.get("95", 0),
        "p99": pct.get("99", 0),
        "max": e.get("max_us", 0),
    }


def compare_table(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """Per endpoint and in total: each run's numbers, and each later run's change from the first."""
    keys: list[tuple[str, str]] = []
    for _, r in runs:
        for e in r["endpoints"]:
            if (e["method"], e["name"]) not in keys:
                keys.append((e["method"], e["name"]))
    keys.append(("", "Aggregated"))
    width = max(10, *(len(lbl) for lbl, _ in runs))
    header = f"{'run':<{width}} {'req/s':>10} {'errors':>8} {'p50':>9} {'p95':>9} {'p99':>9} {'max':>9}"
    lines = []
    for method, name in keys:
        lines += ["", f"{method} {name}".strip(), header]
        base: dict[str, float] | None = None
        for i, (label, r) in enumerate(runs):
            if name == "Aggregated" and method == "":
                e = r["aggregate"]
            else:
                e = next((x for x in r["endpoints"] if (x["method"], x["name"]) == (method, name)), None)
            if e is None:
                lines.append(f"{label:<{width}} {'(not in this run)':>10}")
                continue
            n = _row_numbers(e, counted_s(r))
            lines.append(
                f"{label:<{width}} {n['rps']:>10,.1f} {n['errors']:>7.2f}% {ms(n['p50']):>9} {ms(n['p95']):>9} "
                f"{ms(n['p99']):>9} {ms(n['max']):>9}"
            )
            if i == 0:
                base = n
            elif base is not None:  # (an endpoint the first run lacks has no change from it)
                change = {k: _change(n[k], base[k]) for k in n}
                # The error rate's change in percentage points, as the page says it (5% to 9.95% read
                # "+98.9%" here and "+4.95 pp" there).
                change["errors"] = f"{n['errors'] - base['errors']:+.2f} pp" if n["errors"] != base["errors"] else ""
                lines.append(
                    f"{'  change':<{width}} {change['rps']:>10} {change['errors']:>8} {change['p50']:>9} "
                    f"{change['p95']:>9} {change['p99']:>9} {change['max']:>9}"
                )
    head = f"Times in ms; change from the first run ({runs[0][0]}), the errors' in percentage points.\n"
    return head + "\n".join(lines) + "\n"


def compare(args: argparse.Namespace) -> int:
    if len(args.results) < 2:
        raise UsageError("compare needs two or more results")
    labels = args.labels.split(",") if args.labels else [os.path.basename(p) for p in args.results]
    if len(labels) != len(args.results):
        raise UsageError(f"--labels names {len(labels)} runs for {len(args.results)} results")
    try:
        checks = [gates.parse(text) for text in args.fail_if or []]
    except ValueError as e:
        raise UsageError(str(e)) from None
    outputs.check_writable(html=args.html, read=args.results)
    runs = [(label, load_result(path)) for label, path in zip(labels, args.results)]
    sys.stdout.write(compare_table(runs))
    if args.html:
        meta = page.meta("compare", [], runs[0][1].get("url", ""), title="squall compare: " + " vs ".join(labels))
        meta["command_line"] = "squall compare " + " ".join(args.results)
        files.write_text(args.html, page.compare(runs, meta))
        sys.stderr.write(f"wrote {args.html}\n")
    verdicts = gates.evaluate_runs(checks, runs)
    if verdicts:
        sys.stdout.write("\n" + gates.block(verdicts, labels[0]))
    return exitcodes.THRESHOLDS if any(not v.passed for v in verdicts) else exitcodes.OK
