"""Prometheus' text exposition of a running test (`GET /metrics` on the dashboard's server), so that a
test joins an existing Prometheus and Grafana: per endpoint, requests and failures as counters, the
response time as a histogram (Prometheus' usual bounds, counted from the HDR histogram) and its exact
percentiles as gauges; the users; MQTT's counters."""

from __future__ import annotations

from typing import Any

# The percentiles exposed as summary quantiles (keys of `percentiles_us`).
QUANTILES = {"50": "0.5", "90": "0.9", "95": "0.95", "99": "0.99", "99.9": "0.999", "100": "1"}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def prometheus(result: dict[str, Any], live: dict[str, Any], kind: str) -> str:
    """The exposition text from the run's result so far and its live view."""
    lines = [
        "# HELP squall_requests_total Requests completed (MQTT: operations), by endpoint.",
        "# TYPE squall_requests_total counter",
    ]
    endpoints = result.get("endpoints") or []
    labels = [f'method="{_label(e["method"])}",name="{_label(e["name"])}"' for e in endpoints]
    for e, lbl in zip(endpoints, labels):
        lines.append(f"squall_requests_total{{{lbl}}} {e['requests']}")
    lines += ["# HELP squall_failures_total Failed requests, by endpoint.", "# TYPE squall_failures_total counter"]
    for e, lbl in zip(endpoints, labels):
        lines.append(f"squall_failures_total{{{lbl}}} {e['failures']}")
    lines += [
        "# HELP squall_response_time_seconds Response time, by endpoint (bucket counts exact to 0.1%).",
        "# TYPE squall_response_time_seconds histogram",
    ]
    for e, lbl in zip(endpoints, labels):
        for le_us, count in e.get("buckets") or []:
            lines.append(f'squall_response_time_seconds_bucket{{{lbl},le="{le_us / 1e6:g}"}} {count}')
        lines.append(f'squall_response_time_seconds_bucket{{{lbl},le="+Inf"}} {e["requests"]}')
        lines.append(f"squall_response_time_seconds_sum{{{lbl}}} {e['mean_us'] * e['requests'] / 1e6:.6f}")
        lines.append(f"squall_response_time_seconds_count{{{lbl}}} {e['requests']}")
    lines += [
        "# HELP squall_response_time_percentile_seconds Exact percentiles of the response time (HDR histogram).",
        "# TYPE squall_response_time_percentile_seconds gauge",
    ]
    for e, lbl in zip(endpoints, labels):
        pct = e.get("percentiles_us") or {}
        for key, q in QUANTILES.items():
            if key in pct:
                lines.append(f'squall_response_time_percentile_seconds{{{lbl},quantile="{q}"}} {pct[key] / 1e6:.6f}')
    lines += [
        "# HELP squall_users Virtual users, connections or MQTT clients now.",
        "# TYPE squall_users gauge",
        f"squall_users {live.get('users', 0)}",
        "# HELP squall_running 1 while the run goes on, 0 once it ended.",
        "# TYPE squall_running gauge",
        f"squall_running {0 if live.get('finished') else 1}",
    ]
    mqtt = live.get("mqtt")
    if kind == "mqtt" and mqtt:
        for key in ("connected", "sent", "published", "delivered", "failed"):
            if key in mqtt:
                kind_ = "gauge" if key == "connected" else "counter"
                name = f"squall_mqtt_{key}" + ("" if key == "connected" else "_total")
                lines += [f"# TYPE {name} {kind_}", f"{name} {mqtt[key]}"]
    return "\n".join(lines) + "\n"
