"""`squall -f locustfile.py --find-limit`: the most users the target serves within the SLO.

Each step is the locustfile run afresh in a child process (as a `--processes` worker with the whole
share) with N users started at once for `--step-time`: a fresh engine, fresh User classes and events,
as separate Locust runs would be. The search is `squall.limit.find` over user counts.

A probe first runs a tenth of the starting users (at least one) for a step: what a user does when the
target has room, its per-user rate r. A step of N users passes when its SLOs hold and throughput still
follows the users: at least 97% of N x r, beyond the counting noise of the step and of r's estimate (the
spread of their per-second counts). Beyond the target's capacity added users only wait, so throughput
per user falls. r is estimated from the probe and from every step that passed before the first step
failed (`PerUser`: their per-user rates weighted by their precision), so that the bisection near the
limit judges against many users' rate, not one user's: with the probe's alone, its noise times N let
34 users pass where a server's capacity was 30 users' (1 user's rate known to 4%: 2.33 x 4% of slack).
Steps after the first failure do not join: one past the limit that passed within the slack would pull
r down, and the next step with it. Users are a closed system (each waits for its response before its next request), so a
queue at the target cannot grow without bound within a step as it can under a rate: latency settles
where throughput stops following the users, and the latency trend is not judged.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

from squall import exitcodes, limit, thresholds
from squall.errors import UsageError
from squall.options.arguments import to_duration
from squall.runtime.signals import on_stop_signals

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


def judge(
    result: dict[str, Any], users: int, slos: list[thresholds.Threshold], per_user: tuple[float, float] | None
) -> limit.Step:
    """A user step: the SLOs, then throughput against `per_user` (the probe's requests a second per user
    and its standard error; None for the probe itself)."""
    step = limit.judge(result, 0.0, slos)  # offered 0: no open-model rate to keep up with
    step.load = float(users)
    step.achieved_se = limit.observed_noise(result)
    if per_user is None:
        return step
    rate, rate_se = per_user
    expected = rate * users
    se = math.hypot(step.achieved_se, users * rate_se)
    followed = step.achieved / expected if expected else 1.0
    if step.achieved >= limit.KEEP_UP * expected - limit.Z99 * se:
        step.check("users", True, f"throughput followed the users ({followed:.1%} of {users} x {rate:.2f}/s)")
    else:
        step.check(
            "users",
            False,
            f"throughput stopped following the users: {step.achieved:,.1f}/s where {users} users at "
            f"{rate:.2f}/s each would make {expected:,.1f}/s ({followed:.1%})",
        )
    step.passed = not step.reason
    return step


class PerUser:
    """The per-user rate r that steps are judged against, and its standard error: the precision-weighted
    mean of the per-user rates of the probe and of the steps that passed before any failed (module doc).
    Steps are seen as the search measured them; a step's verdict is read when the next is judged, once
    the search has added its own checks."""

    def __init__(self, probe: limit.Step, users: int) -> None:
        self.probe, self.probe_users = probe, users
        self.steps: list[tuple[limit.Step, int]] = []

    def seen(self, step: limit.Step, users: int) -> None:
        self.steps.append((step, users))

    def estimate(self) -> tuple[float, float]:
        pooled = [(self.probe, self.probe_users)]
        for step, users in self.steps:
            if not step.passed:
                break
            pooled.append((step, users))
        weight = total = 0.0
        for step, users in pooled:
            rate, se = step.achieved / users, step.achieved_se / users
            w = 1 / max(se, 1e-9 * rate, 1e-12) ** 2  # (a count with no spread at all: a very precise one)
            weight, total = weight + w, total + w * rate
        return total / weight, math.sqrt(1 / weight)


def find_limit(args: argparse.Namespace, final_output: Callable[[dict[str, Any], argparse.Namespace], None]) -> int:
    """The search; `final_output` prints and writes the highest passing step's result (run_output's)."""
    if args.rate or args.processes not in (None, 1):
        raise UsageError("--find-limit sets the users itself: drop --rate and --processes")
    if args.threshold:
        raise UsageError("--find-limit takes --slo, not --threshold")
    slo_texts, slos = limit.parse_slos(args, limit.DEFAULT_SLOS)
    hold = to_duration(args.step_time)
    most = int(args.max_users) if args.max_users else None
    start = max(1, int(args.users)) if args.users not in (None, "1") else 10
    argv = list(args.argv[1:] if args.argv and args.argv[0] == "run" else args.argv)
    received: list[int] = []

    def run_step(users: int) -> dict[str, Any]:
        if received:
            raise KeyboardInterrupt
        with tempfile.TemporaryDirectory(prefix="squall-limit-") as tmp:
            path = os.path.join(tmp, "step.json")
            cmd = [sys.executable, "-m", "squall", *step_argv(argv, users, hold)]
            env = dict(os.environ, SQUALL_WORKER="0/1", SQUALL_WORKER_RESULT=path)
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

            def forward(signum: int) -> None:
                received.append(signum)
                proc.send_signal(signum)

            with on_stop_signals(forward):
                _, err = proc.communicate()
            if not os.path.exists(path):
                raise UsageError(f"a step with {users} users failed: {err.strip().splitlines()[-1:]}")
            with open(path) as f:
                result: dict[str, Any] = json.load(f)
                return result

    probe_users = max(1, start // 10)
    limit.say(
        f"Finding the most users {os.path.basename(args.locustfile)} can have: SLO {', '.join(slo_texts)}; "
        f"{hold:g} s a step, all users started at once; a probe of {probe_users} first"
    )
    try:
        probe = judge(run_step(probe_users), probe_users, slos, None)
    except KeyboardInterrupt:
        return exitcodes.stopped_by(received[0])
    per_user = PerUser(probe, probe_users)
    rate, rate_se = per_user.estimate()
    says = f"the scale: {rate:,.2f}/s a user (± {rate_se:.2f}), with room at the target"

    def measure(load: float) -> limit.Step:
        users = int(load)
        step = judge(run_step(users), users, slos, per_user.estimate())
        per_user.seen(step, users)
        return step

    outcome, result = limit.search(
        measure,
        "users", slo_texts, start=start, most=most, probe=probe, probe_says=says, whole=True, step_s=hold,
    )  # fmt: skip
    if result is not None:
        args.thresholds, args.watch = [], None
        final_output(result, args)
    if received:
        return exitcodes.stopped_by(received[0])
    return exitcodes.OK if outcome.limit is not None else exitcodes.ALL_FAILED
