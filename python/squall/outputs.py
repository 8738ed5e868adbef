"""The files a run writes when it ends (`--json`, `--csv`, `--html`, ...): checked before the run, each
written whole or not at all, a failure said in one line and noted for the exit code. Above both
`squall.report` (the console, Locust's CSV and JSON) and `squall.web` (the HTML report), which it writes
with."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import Any, Callable

from squall import files
from squall.errors import UsageError
from squall.report import locust_csv
from squall.web import page


def check_writable(*, read: Iterable[str | None] = (), **paths: str | None) -> None:
    """Before a run: every output it will write can be created (its directory exists and is writable),
    so a mistyped path or a name too long is one line and exit 2 now, not a failure after the whole run.
    The keywords name the options (json_file="--json-file"); `csv` is the CSV files' prefix. No output
    may be a file the command reads (`read`: the result a report renders, the locustfile, a body it
    sends) or another output's: written over, it would be lost (`squall report r.json --html r.json`
    replaced the measured result with its own report)."""
    sources = {os.path.realpath(p) for p in read if p and os.path.isfile(p)}
    written: dict[str, str] = {}
    for option, path in paths.items():
        if not path:
            continue
        flag = "--" + option.replace("_", "-")
        for name in locust_csv.file_names(path) if option == "csv" else [path]:
            if os.path.exists(name) and not os.path.isfile(name):
                continue  # (a device, /dev/null: anything may write there; a directory is refused below)
            real = os.path.realpath(name)
            if real in sources:
                raise UsageError(f"{flag} {path}: is a file this command reads; write it elsewhere")
            if real in written:
                raise UsageError(f"{flag} {path}: {written[real]} writes that file too")
            written[real] = flag
        if option == "csv":
            path += "_stats_history.csv"  # the longest of the CSV files' names (locust_csv.write)
        target = os.path.abspath(path)
        parent = os.path.dirname(target)
        if os.path.isdir(target):
            raise UsageError(f"{flag} {path}: is a directory")
        if not os.path.isdir(parent):
            raise UsageError(f"{flag} {path}: no such directory {parent}")
        if not os.access(parent, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
            raise UsageError(f"{flag} {path}: not writable")
        name_max, path_max = _limits(parent)
        if len(os.fsencode(os.path.basename(target))) > name_max:
            raise UsageError(f"{flag} {path}: file name too long (this file system takes {name_max} bytes)")
        if len(os.fsencode(target)) >= path_max:
            raise UsageError(f"{flag} {path}: path too long (this system takes {path_max - 1} bytes)")


def _limits(directory: str) -> tuple[int, int]:
    """The longest file name (bytes) `directory`'s file system takes, and the system's path limit."""
    try:
        return os.pathconf(directory, "PC_NAME_MAX"), os.pathconf(directory, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 255, 4096  # Linux's


def write_files(
    result: dict[str, Any],
    json_path: str | None = None,
    csv_prefix: str | None = None,
    full_history: bool = False,
    html_path: str | None = None,
    html_meta: dict[str, Any] | None = None,
) -> list[str]:
    """Writes the requested files, each whole or not at all (`squall.files.replace`); returns their
    paths. The HTML report shows `html_meta` (the command line, title: `squall.web.page.meta`). A file
    that still cannot be written (the disk filled up, the directory went away) is said on stderr and
    noted for the exit code (`squall.files.failed`), and the others are written all the same."""
    written: list[str] = []
    if html_meta and html_meta.get("command_line"):
        result.setdefault("command_line", html_meta["command_line"])  # (for `squall report`'s page later)

    def attempt(what: str, write: Callable[[], list[str]]) -> None:
        try:
            written.extend(write())
        except OSError as e:
            sys.stderr.write(f"squall: error: cannot write {what}: {e.strerror or e}\n")
            files.note_failure(what)

    def write_json(path: str) -> list[str]:
        with files.replace(path) as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        return [path]

    if json_path:
        attempt(json_path, lambda: write_json(json_path))
    if html_path:
        meta = html_meta or page.meta(result["kind"], [], result["url"])
        attempt(html_path, lambda: [page.write_report(html_path, result, meta)])
    if csv_prefix:
        attempt(f"the CSV files {csv_prefix}_*.csv", lambda: locust_csv.write(result, csv_prefix, full_history))
    return written


def write_and_say(result: dict[str, Any], **files: Any) -> list[str]:
    """`write_files`, then a "wrote PATH" line on stderr for each file written."""
    written = write_files(result, **files)
    for path in written:
        sys.stderr.write(f"wrote {path}\n")
    return written
