"""`environment.stats` as a locustfile reads it in `test_stop` and in `quitting`, written to $STATS_OUT
(JSON) with the runner's state as the listeners saw it. The load: stats_bounded.py's."""

import json
import os
import time

from locust import events
from stats_bounded import Bounded  # noqa: F401  (the users of this file)

PERCENTS = [0.5, 0.9, 0.95, 0.97, 0.99, 1.0]
seen = {"states": {}}


def entry(e):
    """What a locustfile can read of an entry."""
    return {
        "name": e.name,
        "method": e.method,
        "num_requests": e.num_requests,
        "num_none_requests": e.num_none_requests,
        "num_failures": e.num_failures,
        "fail_ratio": e.fail_ratio,
        "total_response_time": e.total_response_time,
        "avg_response_time": e.avg_response_time,
        "min_response_time": e.min_response_time,
        "max_response_time": e.max_response_time,
        "median_response_time": e.median_response_time,
        "percentiles": {str(p): e.get_response_time_percentile(p) for p in PERCENTS},
        "total_content_length": e.total_content_length,
        "avg_content_length": e.avg_content_length,
        "current_rps": e.current_rps,
        "total_rps": e.total_rps,
        "total_fail_per_sec": e.total_fail_per_sec,
        "start_time": e.start_time,
        "last_request_timestamp": e.last_request_timestamp,
        "response_times_count": sum(e.response_times.values()),
        "reqs_per_sec_count": sum(e.num_reqs_per_sec.values()),
        "to_dict": e.to_dict(),
        "serialize_keys": sorted(e.serialize()),
    }


def error(e):
    """An error's dict, and whether its times are Unix seconds of the run (now or just before)."""
    d = e.to_dict()
    first, last = d.pop("first_seen"), d.pop("last_seen")
    d["seen_times_plausible"] = time.time() - 60 < first <= last <= time.time()
    return d


def record(environment):
    stats = environment.stats
    return {
        "entries": {f"{method} {name}": entry(e) for (name, method), e in stats.entries.items()},
        "total": entry(stats.total),
        "num_requests": stats.num_requests,
        "num_failures": stats.num_failures,
        "errors": sorted((error(e) for e in stats.errors.values()), key=lambda e: (e["name"], e["error"])),
        "runner_stats_is_stats": environment.runner.stats is stats,
        "get_is_entry": stats.get("/ok", "GET") is stats.entries[("/ok", "GET")],
        "missing": entry(stats.get("never", "GET")),
    }


@events.spawning_complete.add_listener
def on_spawning_complete(user_count, **kw):
    seen["states"]["spawning_complete"] = seen_runner[0].state


seen_runner = []


@events.init.add_listener
def on_init(environment, runner, **kw):
    seen_runner.append(runner)


@events.request.add_listener
def on_request(**kw):
    seen["states"].setdefault("request", seen_runner[0].state)


@events.test_start.add_listener
def on_test_start(environment, **kw):
    seen["states"]["test_start"] = environment.runner.state


@events.test_stop.add_listener
def on_test_stop(environment, **kw):
    seen["states"]["test_stop"] = environment.runner.state
    seen["test_stop"] = record(environment)


@events.quitting.add_listener
def on_quitting(environment, **kw):
    seen["states"]["quitting"] = environment.runner.state
    seen["quitting"] = record(environment)
    with open(os.environ["STATS_OUT"], "w") as f:
        json.dump(seen, f, indent=1)
