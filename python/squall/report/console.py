"""The end-of-run summary: totals, throughput, latency, percentiles, a histogram, codes, errors."""

from __future__ import annotations

from typing import Any

from squall.report.units import PERCENTILE_KEYS, ms, size


def _section(title: str) -> str:
    return f"\n{title}\n"


# Connections from which the summary gives the memory a connection: fewer, and the statistics' own
# growth (histograms, the time series) is most of what the run added.
MEMORY_PER_CONNECTION_FROM = 1000


def _memory(r: dict[str, Any]) -> str | None:
    """squall's peak resident memory, and with many connections what each added (the growth over the
    run, shared out: the connections' buffers and tasks, and the statistics)."""
    process = (r.get("generator") or {}).get("process") or {}
    peak, start = process.get("rss_peak_bytes"), process.get("rss_start_bytes")
    if not peak:
        return None
    text = f"peak {size(peak)} resident"
    opened = r["connect"]["requests"]
    if start and opened >= MEMORY_PER_CONNECTION_FROM:
        text += f", {size(max(peak - start, 0) / opened)} a connection ({size(max(peak - start, 0))} over {opened:,})"
    return text


def summary(r: dict[str, Any]) -> str:
    """The summary of a `squall bench` result document."""
    agg = r["aggregate"]
    load = r["load"]
    dur = r["duration_s"]
    n, fails = agg["requests"], agg["failures"]
    out: list[str] = []
    w = out.append
    w(f"Target       {r['method']} {r['url']}\n")
    model = load["model"]
    conns = f"{load['connections']:,} connection{'s' if load['connections'] != 1 else ''}"
    extra = "" if r["stop_reason"] in ("completed", "duration") else f", stopped: {r['stop_reason'].replace('_', ' ')}"
    proto = ", HTTP/2" if load["http2"] else ""
    w(
        f"Load         {model} model, {conns} on {load['threads']} thread{'s' if load['threads'] != 1 else ''}"
        f"{proto}, ran {dur:.2f} s{extra}\n"
    )
    pct = 100.0 * fails / n if n else 0.0
    w(f"Requests     {n:,} total, {fails:,} failed ({pct:.2f}%)")
    if r["abandoned"]:
        w(f", {r['abandoned']:,} in flight at the end (not counted)")
    w("\n")
    rps = n / dur if dur > 0 else 0.0
    # Requests that could not connect count in the rate as in the totals (failures, as in Locust); the
    # rate of those that had a connection beside it, so that a server gone mid-run (a refusal takes a
    # few microseconds) does not read as 20,000 req/s served.
    unconnected = sum(
        e.get("count", 0) for e in r.get("errors") or [] if e.get("kind") in ("connect_refused", "connect_timeout")
    )
    refused = f" ({(n - unconnected) / dur:,.2f} connected; {unconnected:,} could not connect)" if unconnected else ""
    w(
        f"Throughput   {rps:,.2f} req/s{refused if dur > 0 else ''}, "
        f"{size(agg['wire_bytes'] / dur if dur > 0 else 0)}/s received ({size(agg['wire_bytes'])} in all)\n"
    )
    c = r["connect"]
    if c["requests"]:
        w(f"Connect      {c['requests']:,} opened, mean {ms(c['mean_us'])} ms, max {ms(c['max_us'])} ms\n")
    memory = _memory(r)
    if memory:
        w(f"Memory       {memory}\n")
    om = r.get("schedule")
    if om:
        w(
            f"Open model   {om['rate']:,.6g} req/s {om['arrival']}: {om['intended']:,} intended, {om['sent']:,} sent, "
            f"{om['late']:,} late (>{om['late_after_ms']} ms), mean lag {ms(om['mean_lag_us'])} ms, "
            f"max lag {ms(om['max_lag_us'])} ms, {om['dropped']:,} dropped\n"
        )
        if om["late"] or om["dropped"]:
            w(
                "             latencies count from the intended send times; late sends mean too few connections (-c)"
                " or a busy generator\n"
            )
    if agg.get("stream"):
        w(streams(agg["stream"]))
    if not n:
        return "".join(out)

    w(_section("Response time (ms)"))
    w(
        f"  min {ms(agg['min_us'])}   mean {ms(agg['mean_us'])}   stdev {ms(agg['stdev_us'])}   "
        f"max {ms(agg['max_us'])}\n"
    )

    w(_section("Response time percentiles (ms)"))
    cells = [ms(agg["percentiles_us"][k]) for k in PERCENTILE_KEYS]
    width = max(7, max(len(x) for x in cells) + 1)
    w("  " + "".join(f"{k + '%':>{width}}" for k in PERCENTILE_KEYS) + "\n")
    w("  " + "".join(f"{x:>{width}}" for x in cells) + "\n")

    buckets = r["latency_histogram"]
    if buckets:
        w(_section("Response time histogram (ms)"))
        top = max(b["count"] for b in buckets) or 1
        cw = len(f"{top:,}")
        labels = _edges([b["upper_us"] for b in buckets])
        for b, label in zip(buckets, labels):
            bar = "#" * max(1 if b["count"] else 0, round(40 * b["count"] / top))
            w(f"  {label:>9} [{b['count']:>{cw},}] |{bar}\n")

    if agg["status_codes"]:
        w(_section("Status codes"))
        for code, count in agg["status_codes"].items():
            w(f"  {code}  {count:,}\n")
        if "426" in agg["status_codes"] and str(r.get("url", "")).startswith(("http://", "https://")):
            # 426 Upgrade Required: what a WebSocket endpoint answers a plain request.
            w("  (426: the server asks for an upgrade; a WebSocket endpoint is benched with ws:// or wss://)\n")

    if r["errors"]:
        w(_section("Errors"))
        w(f"  {'# occurrences':>14}  Error\n")
        for e in r["errors"]:
            w(f"  {e['count']:>14,}  {e['method']} {e['name']}: {e['message']}\n")
    return "".join(out)


STREAM_PERCENTILES = ["50", "90", "95", "99", "100"]


def streams(s: dict[str, Any]) -> str:
    """The event streams of a result's `stream` section: how they ended, the events, their timing."""
    out = [_section("Event streams (text/event-stream)")]
    w = out.append
    still = s["streams"] - s["completed"] - s["cut"]
    w(f"  {s['streams']:,} begun, {s['completed']:,} completed, {s['cut']:,} cut")
    w(f", {still:,} still open at the end\n" if still else "\n")
    for reason, count in sorted(s["cut_reasons"].items(), key=lambda kv: -kv[1]):
        w(f"  {count:>14,}  cut: {reason}\n")
    w(f"  {s['events']:,} events, {s['events_per_s']:,.2f} a second\n")
    rows = [("time to first event", s["first_event"]), ("gap between events", s["gap"])]
    t = s.get("tokens")
    if t:
        by_server = t["counted_by_server"]
        if by_server == t["streams"]:
            counted = "as the server counted them"
        elif by_server:
            counted = f"{by_server:,} counted by the server, the others an output event a token"
        else:
            counted = "an output event a token"
        w(
            f"  {t['tokens']:,} tokens from {t['streams']:,} streams ({counted}), "
            f"{t['tokens_per_s']:,.2f} tokens a second\n"
        )
        rows += [
            ("time to first token", t["ttft"]),
            ("inter-token latency", t["itl"]),
            ("time per output token", t["tpot"]),
        ]
    cells = [[ms(p["percentiles_us"][k]) if p["count"] else "-" for k in STREAM_PERCENTILES] for _, p in rows]
    width = max(7, *(len(c) + 1 for row in cells for c in row))
    w(f"  {'(ms)':<22}" + "".join(f"{k + '%':>{width}}" for k in STREAM_PERCENTILES) + f"{'count':>10}\n")
    for (label, p), row in zip(rows, cells):
        w(f"  {label:<22}" + "".join(f"{c:>{width}}" for c in row) + f"{p['count']:>10,}\n")
    return "".join(out)


def _edges(uppers_us: list[int]) -> list[str]:
    """The histogram's bucket edges in ms, with the precision the size deserves (`ms`), or as many
    decimals as it takes (up to the microsecond) for neighbours to read apart: 1001.47 and 1001.98 ms
    both read "1001" at a second's precision."""
    labels = [ms(u) for u in uppers_us]
    decimals = 0
    while len(set(labels)) < len(labels) and decimals < 3:
        decimals += 1
        labels = [ms(u) if u < 100_000 else f"{u / 1000:.{decimals}f}" for u in uppers_us]
    return labels
