"""The cyclic garbage collector paused while squall starts (`pause`, the `squall` command's first step)
and resumed where the user's code begins (`resume`: before a locustfile is imported, or once the command
line is parsed).

Start-up creates about 300 modules' functions, classes and dicts and almost no garbage, yet the
collector looked at them again and again: 64 young and 6 middle collections, 15 ms, 7% of `squall -f`'s
CPU until its locustfile is loaded (gc.callbacks timing; 0.93 of the CPU with it paused, 20 alternated
runs). On resuming, what start-up made is frozen (`gc.freeze`: kept out of every later collection, as
long-lived servers do after their imports), so the run's collections do not walk it either. Only the
garbage cycles of squall's own start-up, if any, are never collected; the locustfile's objects are
collected as ever, since they come after.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Ends the pause, if `pause` made one; otherwise (squall imported by a program) does nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
