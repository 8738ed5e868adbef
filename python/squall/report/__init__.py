"""Reports of a run: the console summary, Locust-format CSV files, the JSON result."""

import json

from squall.report import console, html, locust_csv


def write_files(result, json_path=None, csv_prefix=None, full_history=False, html_path=None):
    """Writes the requested files; returns their paths."""
    written = []
    if html_path:
        html.write(result, html_path)
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
