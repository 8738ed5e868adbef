"""The one page of the dashboard and the reports (web/ builds it; see web/README.md for the data it
reads). A report is the page with its data, script and style inlined: one file that opens offline from
file://. The live dashboard is the same page linking its script and style and polling the run's API."""

from __future__ import annotations

import json
import math
import re
import shlex
import time
from importlib import resources
from typing import Any

from squall import __version__, files
from squall.report import locust_csv

# Options whose value is a secret: shown as *** in reports and on the dashboard.
_SECRET_OPTIONS = {"--password", "--web-auth"}
# Header values that carry credentials.
_SECRET_HEADERS = re.compile(r"^\s*(authorization|proxy-authorization|cookie|x-api-key|api-key)\s*:", re.I)


def _read(name: str) -> str:
    return resources.files("squall.web").joinpath(name).read_text(encoding="utf-8")


def asset(name: str) -> bytes:
    """A built asset (app.js, app.css) of the page."""
    return resources.files("squall.web").joinpath("assets").joinpath(name).read_bytes()


def no_requests() -> dict[str, Any]:
    """The aggregate of a run that has counted nothing (yet): every field the CSVs and the page read."""
    return {
        "method": "",
        "name": "Aggregated",
        "requests": 0,
        "failures": 0,
        "body_bytes": 0,
        "wire_bytes": 0,
        "min_us": 0,
        "max_us": 0,
        "mean_us": 0.0,
        "stdev_us": 0.0,
        "percentiles_us": {},
        "status_codes": {},
    }


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity (a browser's JSON.parse refuses them): they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json(data: Any) -> str:
    return json.dumps(_finite(data), separators=(",", ":"))


def with_member(object_text: str, key: str, value_text: str) -> str:
    """A JSON object's text with one more member whose value is JSON text already (`key` must not be a
    member yet): the dashboard's seconds, kept as text (squall.web.history), spliced in undecoded."""
    assert object_text.endswith("}") and key.isidentifier()
    sep = "" if object_text == "{}" else ","
    return f'{object_text[:-1]}{sep}"{key}":{value_text}}}'


def _script_safe(json_text: str) -> str:
    # Inside <script>, "</script>" or "<!--" in a string (an endpoint name, an error message) would end
    # or change the element: every <, > and & is escaped as JSON allows.
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: dict[str, Any], inline: bool) -> str:
    """The page with `data` (mode, meta, and the result or runs); `inline` puts script and style in the
    file (a report), else they load from /assets/ (the live dashboard)."""
    return _render_json(to_json(data), inline)


def _render_json(data_json: str, inline: bool) -> str:
    page = _read("index.html")
    if inline:
        css = "<style>" + asset("app.css").decode().replace("</", "<\\/") + "</style>"
        js = "<script>" + asset("app.js").decode().replace("</script", "<\\/script") + "</script>"
    else:
        css = '<link rel="stylesheet" href="/assets/app.css">'
        js = '<script src="/assets/app.js"></script>'
    tag = f'<script id="squall-data" type="application/json">{_script_safe(data_json)}</script>'
    for placeholder, text in (("<!--SQUALL_CSS-->", css), ("<!--SQUALL_DATA-->", tag), ("<!--SQUALL_JS-->", js)):
        page = page.replace(placeholder, text, 1)
    return page


def redact_argv(argv: list[str]) -> list[str]:
    """The command line without its secrets: passwords, credential headers, URL userinfo."""
    out: list[str] = []
    hide_next = False
    for i, a in enumerate(argv):
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        option, eq, _value = a.partition("=")
        if option in _SECRET_OPTIONS:
            if eq:
                out.append(f"{option}=***")
            else:
                out.append(a)
                hide_next = True
            continue
        previous = argv[i - 1] if i else ""
        if previous in ("-H", "--header") and _SECRET_HEADERS.match(a):
            out.append(a.split(":", 1)[0] + ": ***")
            continue
        out.append(re.sub(r"(://[^/@:\s]+:)[^/@\s]*@", r"\1***@", a))
    return out


def meta(
    command: str,
    argv: list[str],
    target: str,
    *,
    title: str | None = None,
    controls: dict[str, bool] | None = None,
    form: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What the page shows about the run besides its numbers (web/README.md: META)."""
    line = shlex.join(["squall", *redact_argv(argv)])
    shown = redact_argv([target])[0] if target else ""
    return {
        "command": command,
        "command_line": line,
        "target": shown,
        "title": title or f"squall {command}: {shown}",
        "squall_version": __version__,
        "generated_unix": time.time(),
        "controls": controls or {"start": False, "users": False, "stop": False, "reset": False},
        "form": form or {},
        "thresholds": None,
        "monitor": None,
    }


def report(result: dict[str, Any], page_meta: dict[str, Any]) -> str:
    """The self-contained HTML report of one run, with the CSV files the dashboard offers for it
    (`locust_csv.downloads`), whoever writes it: `--html`, `squall report`, the dashboard's download."""
    return report_of_json(to_json(result), result, page_meta)


def report_of_json(result_json: str, totals: dict[str, Any], page_meta: dict[str, Any]) -> str:
    """`report` of a result given as JSON text (the dashboard's download: its seconds are kept as text,
    squall.web.history), with `totals`, the same result whose seconds may be left out, for the CSVs."""
    head = to_json({"mode": "report", "meta": page_meta, "downloads": locust_csv.downloads(totals)})
    return _render_json(with_member(head, "result", result_json), inline=True)


def compare(runs: list[tuple[str, dict[str, Any]]], page_meta: dict[str, Any]) -> str:
    """The self-contained HTML comparison of several runs, labelled."""
    data = {"mode": "compare", "meta": page_meta, "runs": [{"label": lbl, "result": r} for lbl, r in runs]}
    return render(data, inline=True)


def write_report(path: str, result: dict[str, Any], page_meta: dict[str, Any]) -> str:
    return files.write_text(path, report(result, page_meta))
