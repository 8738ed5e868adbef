"""Reports of a run: the console summary, Locust-format CSV files, the JSON result."""

from __future__ import annotations

import json
from typing import Any

from squall.report import console, locust_csv
from squall.web import page


def write_files(
    result: dict[str, Any],
    json_path: str | None = None,
    csv_prefix: str | None = None,
    full_history: bool = False,
    html_path: str | None = None,
    html_meta: dict[str, Any] | None = None,
) -> list[str]:
    """Writes the requested files; returns their paths. The HTML report shows `html_meta` (the command
    line, title: `squall.web.page.meta`)."""
    written = []
    if html_path:
        page.write_report(html_path, result, html_meta or page.meta(result["kind"], [], result["url"]))
        written.append(html_path)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        written.append(json_path)
    if csv_prefix:
        written += locust_csv.write(result, csv_prefix, full_history=full_history)
    return written


__all__ = ["console", "locust_csv", "write_files"]
