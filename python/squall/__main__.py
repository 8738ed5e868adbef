"""The `squall` command (pyproject's [project.scripts]) and `python -m squall`."""

from __future__ import annotations

import sys

from squall import start_up


def main() -> int:
    start_up.pause()  # until the user's code begins: see squall.start_up
    # Imported once paused, for start-up speed: the command line's imports are most of start-up's objects.
    from squall.cli import main as command_line

    return command_line()


if __name__ == "__main__":
    sys.exit(main())
