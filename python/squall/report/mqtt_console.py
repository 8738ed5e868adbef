"""The end of a `squall mqtt` run: rates over the measured time, delivery, then the same latency tables
as every run (CONNECT, PUBLISH acknowledgements, DELIVER end to end)."""

from __future__ import annotations

from typing import Any

from squall.report import locust_console, locust_csv
from squall.report.units import ms


def _n(x: int) -> str:
    return f"{x:,}"


def summary(r: dict[str, Any]) -> str:
    """The summary of a `squall mqtt` result document."""
    m = r["mqtt"]
    out: list[str] = []
    w = out.append
    qos = {
        0: "QoS 0 (counted at the PINGRESP that follows)",
        1: "QoS 1 (counted at PUBACK)",
        2: "QoS 2 (counted at PUBCOMP)",
    }[m["qos"]]
    w(f"Broker       {m['broker']}  MQTT {m['mqtt_version']}\n")
    stopped = (
        "" if r["stop_reason"] in ("completed", "duration") else f", stopped: {r['stop_reason'].replace('_', ' ')}"
    )
    if m["subscribe_only"]:
        w(f"Subscribed   {m['filter']} for {r['duration_s']:.2f} s{stopped}\n")
    else:
        pace = f"{m['rate_per_client']:,.6g} msg/s each" if m["rate_per_client"] else "as fast as possible"
        w(f"Load         {m['clients']:,} clients, {pace}, {qos}, in flight {m['inflight']}, topic {m['topic']}\n")
        w(
            f"Measured     {m['measured_s']:.2f} s of publishing "
            f"(connecting took {m['connect_phase_s']:.2f} s){stopped}\n"
        )
        # `sent` in the JSON counts every message given a number, the never-sent ones included: say both.
        unsent = f", {_n(m['unsent'])} due but never sent" if m["unsent"] else ""
        w(
            f"Published    {_n(m['published'])} of {_n(m['sent'])} messages ({_n(m['sent'] - m['unsent'])} sent"
            f"{unsent}), {m['publish_rate']:,.1f} msg/s; "
            f"per client min {m['client_rate']['min']:,.1f}, median {m['client_rate']['median']:,.1f}, "
            f"max {m['client_rate']['max']:,.1f}\n"
        )
        if m["failed"]:
            w(
                f"Failed       {_n(m['failed'])}"
                + (f" ({_n(m['unsent'])} due but never sent)" if m["unsent"] else "")
                + "\n"
            )
        s = r.get("schedule")
        if s:
            w(
                f"Schedule     {_n(s['sent'])} paced sends, {_n(s['late'])} late (>{s['late_after_ms']} ms), "
                f"mean lag {ms(s['mean_lag_us'])} ms, max lag {ms(s['max_lag_us'])} ms\n"
            )
    d = m.get("delivery")
    if d and m["verify"]:
        w(
            f"Delivery     {_n(d['delivered'])} of {_n(d['sent'])} delivered, {_n(d['lost'])} lost, "
            f"{_n(d['duplicated'])} duplicated, {_n(d['out_of_order'])} out of order"
            + (f", {_n(d['foreign'])} from other publishers" if d["foreign"] else "")
            + "\n"
        )
    elif d:
        rate = d["received"] / r["duration_s"] if r["duration_s"] else 0.0
        w(f"Received     {_n(d['received'])} messages, {rate:,.1f} msg/s")
        if d["senders"]:
            w(
                f"; from {_n(d['senders'])} squall publishers: {_n(d['lost'])} missing, "
                f"{_n(d['duplicated'])} duplicated, {_n(d['out_of_order'])} out of order"
            )
        w("\n")
    w("\n")
    # Messages per second count over the measured time, as the rates above do (the CSV's the same).
    rates = locust_csv.measured_rates(r)
    w(locust_console.stats_table(r["endpoints"], r["aggregate"], r["duration_s"], rates=rates))
    w("\n")
    w(locust_console.percentiles_table(r["endpoints"], r["aggregate"]))
    legend = {
        "CONNECT": "connection and CONNACK",
        "PUBLISH": "until acknowledged (QoS 0: by the PINGRESP that follows)",
        "DELIVER": "send to arrival at the subscriber",
    }
    shown = [f"{row}: {what}" for row, what in legend.items() if any(e["method"] == row for e in r["endpoints"])]
    if shown:  # (the rows the table has: a --subscribe-only run's are others)
        w("  " + "; ".join(shown) + "\n")
    if r["errors"]:
        w("\n" + locust_console.error_report(r["errors"]))
    return "".join(out)
