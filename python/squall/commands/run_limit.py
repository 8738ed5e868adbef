"""`squall -f locustfile.py --find-limit`: the most users the target serves within the SLO.

Each step is the locustfile run afresh in a child process (as a `--processes` worker with the whole
share) with N users started at once for `--step-time`: a fresh engine, fresh User classes and events,
as separate Locust runs would be. The search is `squall.limit.find` over user counts.

A step passes when its SLOs hold and throughput still follows the users: the completed requests a
second are at least 97% of what the users did per head in the smallest passing step, times N. Beyond
the target's capacity added users only wait, so throughput per user falls.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

from squall import exitcodes, limit, thresholds
from squall.commands.arguments import to_duration
from squall.errors import UsageError
from squall.signals import on_stop_signals

# Options of `squall -f` a step sets itself (with their values), and flags it drops.
_VALUED = {
    "-u", "--users", "-r", "--spawn-rate", "-t", "--run-time", "--json-file", "--result-json", "--html", "--csv",
    "--slo", "--step-time", "--max-users", "--web-port", "--web-host", "--web-auth", "--autoquit", "--processes",
    "--threshold", "--threshold-grace", "--logfile",
}  # fmt: skip
_FLAGS = {
    "--find-limit", "--headless", "--autostart", "--only-summary", "--json", "--print-stats",
    "--csv-full-history", "--threshold-abort",
}  # fmt: skip


def step_argv(argv: list[str], users: int, seconds: float) -> list[str]:
    """The command line of one step: the user's own, less what the search sets, plus N users."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        option = a.split("=", 1)[0]
        if a in _FLAGS:
            continue
        if option in _VALUED:
            skip = "=" not in a
            continue
        if len(a) > 2 and a[0] == "-" and a[1] != "-" and a[:2] in _VALUED:  # -u10
            continue
        out.append(a)
    return [*out, "--headless", "-u", str(users), "-r", str(users), "-t", f"{seconds:g}s", "--only-summary"]


def judge(result: dict[str, Any], users: int, slos: list[thresholds.Threshold], per_user: float | None) -> limit.Step:
    """A user step: the SLOs, then throughput against `per_user` (requests a second per user in the
    smallest passing step; None for the first step, which sets it)."""
    step = limit.judge(result, 0.0, slos)  # offered 0: no open-model rate to keep up with
    step.load = float(users)
    if step.passed and per_user is not None and step.achieved < limit.KEEP_UP * per_user * users:
        step.passed = False
        step.reason = (
            f"throughput stopped following the users: {step.achieved:,.0f}/s where {users} users at "
            f"{per_user:.2f}/s each would make {per_user * users:,.0f}/s"
        )
    return step


def find_limit(args: argparse.Namespace, final_output: Callable[[dict[str, Any], argparse.Namespace], None]) -> int:
    """The search; `final_output` prints and writes the highest passing step's result (run.py's)."""
    if args.rate or args.processes != 1:
        raise UsageError("--find-limit sets the users itself: drop --rate and --processes")
    if args.threshold:
        raise UsageError("--find-limit takes --slo, not --threshold")
    slo_texts, slos = limit.parse_slos(args, limit.DEFAULT_SLOS)
    hold = to_duration(args.step_time)
    most = int(args.max_users) if args.max_users else None
    start = max(1, int(args.users)) if args.users not in (None, "1") else 10
    argv = list(args.argv[1:] if args.argv and args.argv[0] == "run" else args.argv)
    received: list[int] = []
    per_user: list[float] = []

    def measure(users: float) -> limit.Step:
        if received:
            raise KeyboardInterrupt
        with tempfile.TemporaryDirectory(prefix="squall-limit-") as tmp:
            path = os.path.join(tmp, "step.json")
            cmd = [sys.executable, "-m", "squall", *step_argv(argv, int(users), hold)]
            env = dict(os.environ, SQUALL_WORKER="0/1", SQUALL_WORKER_RESULT=path)
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

            def forward(signum: int) -> None:
                received.append(signum)
                proc.send_signal(signum)

            with on_stop_signals(forward):
                _, err = proc.communicate()
            if not os.path.exists(path):
                raise UsageError(f"a step with {int(users)} users failed: {err.strip().splitlines()[-1:]}")
            with open(path) as f:
                result = json.load(f)
        step = judge(result, int(users), slos, per_user[0] if per_user else None)
        if step.passed and not per_user:
            per_user.append(step.achieved / users)
        return step

    limit.say(
        f"Finding the most users {os.path.basename(args.locustfile)} can have: SLO {', '.join(slo_texts)}; "
        f"{hold:g} s a step, all users started at once"
    )
    outcome, result = limit.search(measure, "users", slo_texts, start=start, most=most, whole=True, step_s=hold)
    if result is not None:
        args.thresholds, args.watch = [], None
        final_output(result, args)
    if received:
        return exitcodes.stopped_by(received[0])
    return exitcodes.OK if outcome.limit is not None else exitcodes.ALL_FAILED
