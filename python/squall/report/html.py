"""`--html FILE`: one self-contained page with the final tables (charts come with the reports work)."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any

from squall.report.units import PERCENTILE_KEYS, ms

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; } th, td { padding: .3em .7em; border-bottom: 1px solid #ddd; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } tr.total td { font-weight: 600; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; }
"""


def _table(header: list[str], rows: list[list[Any]], numeric_from: int = 2, total_last: bool = False) -> str:
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cls = ' class="total"' if total_last and i == len(rows) - 1 else ""
        cells = "".join(
            f"<td{' class=n' if j >= numeric_from else ''}>{html.escape(str(c))}</td>" for j, c in enumerate(row)
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out) + "</table>"


def render(result: dict[str, Any], title: str = "squall report") -> str:
    rows = [*sorted(result["endpoints"], key=lambda e: (e["name"], e["method"])), result["aggregate"]]
    dur = result["duration_s"] or 1e-9
    stats = [
        [
            e["method"],
            e["name"],
            e["requests"],
            e["failures"],
            ms(e["mean_us"]),
            ms(e["min_us"]),
            ms(e["max_us"]),
            ms(e["percentiles_us"].get("50", 0)) if e["requests"] else "N/A",
            f"{e['requests'] / dur:.2f}",
            f"{e['failures'] / dur:.2f}",
        ]
        for e in rows
    ]
    pcts = [
        [e["method"], e["name"]]
        + [ms(e["percentiles_us"][k]) if e["percentiles_us"] else "N/A" for k in PERCENTILE_KEYS]
        + [e["requests"]]
        for e in rows
    ]
    in_flight = (
        f"; {result['abandoned']:,} requests in flight when their users stopped are not counted"
        if result["abandoned"]
        else ""
    )
    start = datetime.fromtimestamp(result["start_unix"], timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Started {start}, ran {result['duration_s']:.1f} s ({html.escape(result['stop_reason'])}){in_flight}.</p>",
        "<h2>Request statistics (times in ms)</h2>",
        _table(
            ["Type", "Name", "# reqs", "# fails", "Avg", "Min", "Max", "Med", "req/s", "failures/s"],
            stats,
            total_last=True,
        ),
        "<h2>Response time percentiles (ms, exact)</h2>",
        _table(["Type", "Name", *[f"{k}%" for k in PERCENTILE_KEYS], "# reqs"], pcts, total_last=True),
    ]
    if result["errors"]:
        parts += [
            "<h2>Failures</h2>",
            _table(
                ["Method", "Name", "Error", "Occurrences"],
                [[e["method"], e["name"], e["message"], e["count"]] for e in result["errors"]],
                numeric_from=3,
            ),
        ]
    for x in result.get("exceptions", []):
        parts += [
            f"<h2>Exception ({x['count']}x): {html.escape(x['message'])}</h2>",
            f"<pre>{html.escape(x['traceback'])}</pre>",
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write(result: dict[str, Any], path: str, title: str = "squall report") -> str:
    with open(path, "w") as f:
        f.write(render(result, title))
    return path
