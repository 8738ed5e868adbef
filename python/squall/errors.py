"""Errors of the squall command itself. A leaf: it imports nothing from squall, so that any module can
raise these without an import cycle."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input on the command line: reported in one line, exit code 2."""
