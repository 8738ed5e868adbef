"""Squall: load testing scripted like Locust, fast like wrk."""

from squall._engine import __version__

__all__ = ["__version__"]
