"""Loaded beside a tested file when Locust runs it (`-f file.py,final_failures.py`): Locust's failures CSV
is rewritten by a greenlet once a second (locust.stats.CSV_STATS_INTERVAL_SEC), not at exit, so a short
run's last second of failures may be missing from it (seen on a loaded CI machine: a 2 s run's CSV
empty, its final JSON 11 failures). At quit this writes the failures as that CSV's rows would be, to
$FINAL_FAILURES. No users of its own."""

import csv
import os

from locust import events
from locust.stats import StatsError, sort_stats

_environment = []  # (init's, for quit's listener)


@events.init.add_listener
def _remember(environment, **_kw):
    _environment.append(environment)


@events.quit.add_listener
def _write_failures(exit_code, **_kw):
    path = os.environ.get("FINAL_FAILURES")
    if not path or not _environment:
        return
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["Method", "Name", "Error", "Occurrences"])
        for e in sort_stats(_environment[0].stats.errors):
            out.writerow([e.method, e.name, StatsError.parse_error(e.error), e.occurrences])
