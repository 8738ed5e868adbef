"""Each worker's share of a distributed run, as `--processes` shares one (squall.processes.share: counts
that differ by one at most and add up to the whole; rates divided evenly), and what a replacement
worker takes over from a lost one (SQUALL_WORKER_REMAINING: the rest of its time, or of its requests).

Pure code: the commands apply it to their engine configurations."""

from __future__ import annotations

import json
import os
from typing import Any

from squall.errors import UsageError
from squall.processes import share

REMAINING_ENV = "SQUALL_WORKER_REMAINING"


def bench_share(config: dict[str, Any], worker: tuple[int, int]) -> dict[str, Any]:
    """`squall bench`'s engine configuration for worker (i, n): its connections and requests, and its
    part of the rate; then what a replacement worker still has to do, if this is one."""
    n = worker[1]
    out = dict(config, connections=share(config["connections"], worker))
    if config.get("requests") is not None:
        out["requests"] = share(config["requests"], worker)
    if config.get("rate") is not None:
        out["rate"] = config["rate"] / n
    return apply_remaining(out, "requests")


def bench_shares(config: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """How the report lists each of n workers' shares of a bench run."""
    out = []
    for i in range(n):
        s: dict[str, Any] = {"connections": share(config["connections"], (i, n))}
        if config.get("requests") is not None:
            s["requests"] = share(config["requests"], (i, n))
        if config.get("rate") is not None:
            s["rate"] = round(config["rate"] / n, 3)
        out.append(s)
    return out


def mqtt_shares(clients: int, n: int) -> list[dict[str, Any]]:
    first = 0
    out = []
    for i in range(n):
        k = share(clients, (i, n))
        out.append({"clients": k, "first_client": first})
        first += k
    return out


def check_workers(n: int, units: int, what: str) -> None:
    """A worker with nothing to do is a mistake on the command line."""
    if n < 1:
        raise UsageError(f"invalid number of workers '{n}'")
    if n > units:
        raise UsageError(f"{n} workers for {units} {what}: give at least as many {what} as workers")


def remaining(config: dict[str, Any], worker: tuple[int, int], elapsed: float, sent: int) -> dict[str, str] | None:
    """The environment of a worker that takes over worker `worker`'s share after it ran `elapsed`
    seconds and completed `sent` requests: the rest of the duration, or of the request count. None
    when the share is bounded by neither (or by messages per client, which a new worker cannot
    continue from where the lost clients were); empty when nothing of it is left."""
    if config.get("duration") is not None:
        left = float(config["duration"]) - elapsed
        return {REMAINING_ENV: json.dumps({"duration": round(left, 3)})} if left > 0.05 else {}
    if config.get("requests") is not None:
        left_n = share(int(config["requests"]), worker) - sent
        return {REMAINING_ENV: json.dumps({"requests": left_n})} if left_n > 0 else {}
    return None


def apply_remaining(config: dict[str, Any], count_key: str) -> dict[str, Any]:
    """This worker's configuration when it replaces a lost one (SQUALL_WORKER_REMAINING)."""
    text = os.environ.get(REMAINING_ENV)
    if not text:
        return config
    rest = json.loads(text)
    out = dict(config)
    if "duration" in rest:
        out["duration"] = max(float(rest["duration"]), 0.001)
    if "requests" in rest and count_key in out:
        out[count_key] = max(int(rest["requests"]), 1)
        if out.get("connections"):
            out["connections"] = min(out["connections"], out[count_key])
    return out
