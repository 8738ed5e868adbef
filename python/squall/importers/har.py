"""HAR recordings as load tests: `squall import har` (in progress)."""

from __future__ import annotations

from squall.importers import Options, sources
from squall.importers.plan import Plan


def plan(location: str, options: Options, keep_static: bool = False, keep_hosts: bool = False) -> Plan:
    raise sources.SourceError(f"{location}: squall import har is not written yet")
