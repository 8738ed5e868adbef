#!/usr/bin/env python3
"""Writes report pages from the samples, the way squall fills python/squall/web/index.html (stdlib only).

    python3 web/dev/render.py [OUTDIR]        # default /tmp/squall-web

For each web/samples/*.json: report-NAME.html. The samples predate `spectrum`, so each endpoint and
the aggregate get one computed here from their serialized HDR histogram, as the engine does (five steps
per halving of the distance to 100%); report-NAME-nospectrum.html keeps a sample as it is. Also
report-hostile.html (markup in names, messages and tracebacks: it must show as text), a live page
shell (live.html, for fake_live.py), and compare pages (compare.html: bench closed vs open,
compare3.html: three runs with different endpoints). report-thresholds.html: a locustfile run stopped by
a threshold (`--threshold-abort`), with verdicts that pass and fail and one with no value (a typo'd
endpoint); compare.html's runs carry verdicts too.

Breaking point (`squall bench --find-limit`): report-limit-sync.html and report-limit-async.html are the
samples as they are; report-limit-none.html is the sync search with no passing step (load null) and a
generator-bound step; compare-limit.html compares the two searches (A: sync, B: async);
report-limit-users.html is a search by users (its throughput in req/s; it has `distribution` and
`timings`, which the other samples predate).

Resources (`--monitor-*`) and the generator's health: report-bench-monitor.html is the real sample (a
bench run with --monitor-name nginx); report-monitor-made-up.html is a 45-second run with two targets
(a gunicorn tree, and a container whose sampling failed, with markup in its label and error), a 4-core
host, and the generator's warnings (saturated; markup in a warning must show as text);
compare-monitor.html compares two monitored runs (B: more CPU, its generator warned).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SAMPLES = os.path.join(ROOT, "web", "samples")
WEB = os.path.join(ROOT, "python", "squall", "web")


# ---------------------------------------------------------------- HDR histogram (V2, compressed)


def _zigzag_counts(buf: bytes) -> list[tuple[int, int]]:
    """(index, count) of the non-zero counts of a V2 payload (LEB128 zig-zag; negatives are zero runs)."""
    out, i, idx = [], 0, 0
    while i < len(buf):
        v, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80 or shift >= 63:
                break
        v = (v >> 1) ^ -(v & 1)
        if v < 0:
            idx += -v
        else:
            if v:
                out.append((idx, v))
            idx += 1
    return out


def decode_histogram(b64: str) -> tuple[list[tuple[int, int]], int]:
    """[(value_us, count)] at each bucket's highest equivalent value, and the histogram's digits."""
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack(">II", raw[:8])
    if cookie & ~0xF0 != 0x1C849304 & ~0xF0:
        raise ValueError(f"not a compressed V2 histogram: {cookie:#x}")
    p = zlib.decompress(raw[8 : 8 + length])
    _c, plen, _off, sig, lowest, _hi, _ratio = struct.unpack(">IiiiqqD".replace("D", "d"), p[:40])
    sub_count = 2 ** math.ceil(math.log2(2 * 10**sig))
    half = sub_count // 2
    half_mag = int(math.log2(half))
    unit = int(math.floor(math.log2(max(lowest, 1))))
    values = []
    for index, count in _zigzag_counts(p[40 : 40 + plen]):
        bucket = (index >> half_mag) - 1
        sub = (index & (half - 1)) + half
        if bucket < 0:
            sub -= half
            bucket = 0
        lo = sub << (bucket + unit)
        size = 1 << (bucket + unit + (1 if sub >= sub_count else 0))
        values.append((lo + size - 1, count))
    return values, sig


def spectrum(b64: str, ticks: int = 5) -> list[list[float]]:
    """[[percentile, value_us], ...] like the engine's `spectrum` (HdrHistogram's percentile iterator)."""
    values, _ = decode_histogram(b64)
    total = sum(c for _, c in values)
    if not total:
        return []
    out: list[list[float]] = []
    p = 0.0
    cum, vi = 0, 0
    while True:
        need = max(1, math.ceil(p / 100.0 * total))
        while cum < need and vi < len(values):
            cum += values[vi][1]
            vi += 1
        v = values[max(0, vi - 1)][0]
        if not out or p > out[-1][0]:
            out.append([round(p, 10), v])
        if cum >= total and p >= 100.0 - 1e-12:
            break
        if p >= 100.0:
            break
        half_distance = 2 ** (int(math.log2(100.0 / (100.0 - p))) + 1)
        p += 100.0 / (ticks * half_distance)
        if cum >= total and vi >= len(values) and 100.0 * (cum - values[-1][1]) / total < p:
            # the rest is the maximum: one last point at 100%
            out.append([100.0, values[-1][0]])
            break
    return out


def with_spectrum(result: dict) -> dict:
    r = copy.deepcopy(result)
    for e in [r["aggregate"], *r["endpoints"]]:
        if e.get("histogram") and not e.get("spectrum"):
            e["spectrum"] = spectrum(e["histogram"])
    return r


# ---------------------------------------------------------------- pages


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def page(doc: dict, inline: bool = True) -> str:
    """The template filled as the Python side does: inline assets for reports, /assets/ links live."""
    tpl = read(os.path.join(WEB, "index.html"))
    data = json.dumps(doc, separators=(",", ":")).replace("<", "\\u003c")
    if inline:
        css = "<style>" + read(os.path.join(WEB, "assets", "app.css")) + "</style>"
        js = "<script>" + read(os.path.join(WEB, "assets", "app.js")) + "</script>"
    else:
        css = '<link rel=stylesheet href="/assets/app.css">'
        js = '<script src="/assets/app.js"></script>'
    for name, text in (("CSS", css), ("DATA", f'<script id="squall-data" type="application/json">{data}</script>'), ("JS", js)):
        marker = f"<!--SQUALL_{name}-->"
        assert tpl.count(marker) == 1, marker
        tpl = tpl.replace(marker, text)
    return tpl


def meta_for(name: str, r: dict, **extra) -> dict:
    command = {"mqtt": "mqtt", "script": "run"}.get(r["kind"], "bench")
    lines = {
        "bench-closed": f"squall bench {r['url']} -t 4s -c 20 --json bench-closed.json",
        "bench-open": f"squall bench {r['url']} --rate 3000 -t 5s -c 20 --json bench-open.json",
        "locustfile": f"squall -f locustfile.py --headless -u 20 -r 10 -t 5s -H {r['url']} --json-file locustfile.json",
        "locustfile-rate": f"squall -f locustfile.py --headless --rate 200 -u 1 -t 4s -H {r['url']}",
        "mqtt": f"squall mqtt --broker {r['url']} -u 20 --rate 50 -t 4s --qos 1 --verify",
        "limit-sync": f"squall bench {r['url']} --find-limit -c 50 --threshold 'p95<1s' --threshold 'error_rate<1%'",
        "limit-async": f"squall bench {r['url']} --find-limit -c 50 --threshold 'p95<1s' --threshold 'error_rate<1%'",
        "limit-users": f"squall -f paced.py -H {r['url']} --find-limit --step-time 4s --result-json limit-users.json",
    }
    meta = {
        "command": command,
        "command_line": lines.get(name, f"squall {command} ..."),
        "target": r["url"],
        "title": f"{name} ({command})",
        "squall_version": r.get("squall_version", "0.1.0"),
        "controls": {"start": False, "users": False, "stop": False, "reset": False},
        "form": None,
        "thresholds": None,
        "monitor": None,
    }
    meta.update(extra)
    return meta


OPS = {"<": lambda v, l: v < l, "<=": lambda v, l: v <= l, ">": lambda v, l: v > l, ">=": lambda v, l: v >= l}


def _shown(metric: str, v: float | None) -> str:
    """As squall.thresholds.Threshold.shown."""
    if v is None:
        return "n/a"
    if metric == "error_rate":
        return f"{v * 100:.3f}%"
    if metric == "rps":
        return f"{v:,.1f}/s"
    return f"{v / 1000:.3f} ms" if v < 1_000_000 else f"{v / 1e6:.3f} s"


def verdicts(r: dict) -> list[dict]:
    """Verdicts in the shape of `result.thresholds` for the sample's own numbers: some pass, some fail, and
    one names an endpoint the run does not have (no value, a reason)."""
    a = r["aggregate"]
    ep = max(r["endpoints"], key=lambda e: e["max_us"])
    reqs = a["requests"] or 1
    specs = [
        # text, endpoint, metric, op, limit, value
        ("p95<300ms", None, "p95", "<", 300_000.0, a["percentiles_us"].get("95")),
        ("p99<1.5ms", None, "p99", "<", 1_500.0, a["percentiles_us"].get("99")),
        ("error_rate<1%", None, "error_rate", "<", 0.01, a["failures"] / reqs),
        ("rps>1000", None, "rps", ">", 1000.0, a["requests"] / (r["duration_s"] or 1)),
        (f"{ep['method']} {ep['name']}: max<5ms", f"{ep['method']} {ep['name']}", "max", "<", 5_000.0, ep["max_us"]),
        ("/typo: p95<100ms", "/typo", "p95", "<", 100_000.0, None),
    ]
    out = []
    for text, endpoint, metric, op, limit, value in specs:
        value = None if value is None else float(value)
        out.append({
            "threshold": text, "endpoint": endpoint, "metric": metric, "op": op, "limit": limit, "value": value,
            "shown": _shown(metric, value), "passed": value is not None and OPS[op](value, limit),
            "reason": "" if value is not None else f"no endpoint '{endpoint}' in this run",
        })
    return out


def with_thresholds(r: dict, stopped: bool = False, passing_only: bool = False) -> dict:
    r = copy.deepcopy(r)
    r["thresholds"] = [v for v in verdicts(r) if v["passed"] or not passing_only]
    if stopped:
        r["stop_reason"] = "threshold"
    return r


def limit_none(r: dict) -> dict:
    """A --find-limit search in which no step passed (`load` null); one step was generator-bound."""
    r = copy.deepcopy(r)
    lim = r["limit"]
    steps = lim["steps"]
    for s in steps:
        if s["passed"]:
            s["passed"] = False
            s["reason"] = f"p95<1s failed (measured {s['p95_us'] / 1000:.3f} ms) <b>not markup</b>"
    steps[1]["generator_bound"] = True
    steps[1]["reason"] = "the generator could not offer 88/s (connections busy)"
    first = steps[0]
    lim.update(load=None, failed_at=first["load"], reason=f"at {first['load']:,.0f}: {first['reason']}")
    return r


def hostile(r: dict) -> dict:
    """A run whose names, errors and exceptions carry markup and script: they must show as text."""
    r = copy.deepcopy(r)
    evil = '<img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=1</script>'
    r["endpoints"][0]["name"] = "/search?q=" + evil
    for p in r["timeseries"]:
        for e in p["endpoints"]:
            if e["name"] == "cart":
                e["name"] = r["endpoints"][0]["name"]
    r["aggregate"]["failures"] = 321
    r["endpoints"][0]["failures"] = 321
    r["endpoints"][0]["status_codes"] = {"200": r["endpoints"][0]["requests"] - 321, "500": 300, "503": 21}
    r["aggregate"]["status_codes"] = {"200": r["aggregate"]["requests"] - 321, "500": 300, "503": 21}
    for i, p in enumerate(r["timeseries"]):
        p["failures"] = [10, 80, 90, 100, 41, 0][i % 6]
    r["errors"] = [
        {"method": "POST", "name": r["endpoints"][0]["name"], "kind": "http", "status": 500,
         "message": "HTTP 500 " + evil, "count": 300, "first_seen_s": 0.42, "last_seen_s": 4.9},
        {"method": "GET", "name": "browse", "kind": "timeout", "status": None,
         "message": "request timed out after 1 s (a very long message that goes on and on to check the wrapping "
                    "of the failures table in a narrow window, with no spaces: " + "x" * 120 + ")",
         "count": 21, "first_seen_s": 1.0, "last_seen_s": 3.2},
    ]
    r["thresholds"] = [
        {"threshold": r["endpoints"][0]["name"] + ": p95<1ms", "endpoint": "POST " + r["endpoints"][0]["name"],
         "metric": "p95", "op": "<", "limit": 1000.0, "value": None, "shown": "<b>n/a</b>", "passed": False,
         "reason": "no endpoint '" + evil + "' in this run"},
    ]
    r["exceptions"] = [
        {"count": 7, "message": "KeyError: '</pre><b>bold</b>'",
         "traceback": 'Traceback (most recent call last):\n  File "locustfile.py", line 12, in browse\n'
                      "    data = r.json()['items']\nKeyError: '</pre><b>bold</b>'\n"},
    ]
    return r


def failing(r: dict) -> dict:
    """A bench run whose server went away after two seconds: refused connections, 503s."""
    r = copy.deepcopy(r)
    for p in r["timeseries"][2:]:
        p["failures"] = p["requests"]
        for e in p["endpoints"]:
            e["failures"] = e["requests"]
    f = sum(p["failures"] for p in r["timeseries"])
    r["aggregate"]["failures"] = r["endpoints"][0]["failures"] = f
    codes = {"200": r["aggregate"]["requests"] - f, "503": f - 1000}
    r["aggregate"]["status_codes"] = r["endpoints"][0]["status_codes"] = codes
    r["errors"] = [
        {"method": "GET", "name": "/", "kind": "http", "status": 503, "message": "HTTP 503 Service Unavailable",
         "count": f - 1000, "first_seen_s": 2.0, "last_seen_s": 3.99},
        {"method": "GET", "name": "/", "kind": "connect_refused", "status": None,
         "message": "connection refused (127.0.0.1:57511)", "count": 1000, "first_seen_s": 2.5, "last_seen_s": 3.9},
    ]
    r["stop_reason"] = "interrupted"
    return r


def empty(r: dict) -> dict:
    """A run that measured nothing (stopped at once): no seconds, no percentiles."""
    r = copy.deepcopy(r)
    zero = {"requests": 0, "failures": 0, "body_bytes": 0, "wire_bytes": 0, "min_us": 0, "max_us": 0,
            "mean_us": 0.0, "stdev_us": 0.0, "percentiles_us": {}, "status_codes": {}, "histogram": ""}
    r["aggregate"].update(zero)
    for e in r["endpoints"]:
        e.update(zero)
    r["timeseries"] = []
    r["duration_s"] = 0.0
    r["stop_reason"] = "interrupted"
    return r


def long_run(r: dict, seconds: int = 3600) -> dict:
    """An hour: the sample's seconds repeated (histograms left out), for axis labels and speed."""
    r = copy.deepcopy(r)
    base = r["timeseries"]
    pts = []
    for t in range(seconds):
        p = copy.deepcopy(base[t % len(base)])
        p.pop("histogram", None)
        for e in p["endpoints"]:
            e.pop("histogram", None)
        p["t"] = t
        p["users"] = min(20, 1 + t // 60)
        pts.append(p)
    r["timeseries"] = pts
    r["duration_s"] = float(seconds)
    return r


EVIL = '<img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'
ADVICE = "the limit measured may be squall's, not the target's (use --threads, --processes or a bigger machine)"


def _stats(series: list[dict], keys: tuple[str, ...]) -> tuple[dict, dict]:
    """(peak, mean) as squall.monitor._aggregate."""
    peak, mean = {}, {}
    for k in keys:
        vals = [s[k] for s in series if s.get(k) is not None]
        peak[k] = max(vals) if vals else None
        mean[k] = None if not vals else round(sum(vals) / len(vals)) if k.endswith("_bytes") else round(sum(vals) / len(vals), 1)
    return peak, mean


TARGET_KEYS = ("cpu_percent", "rss_bytes", "threads", "fds", "processes")
HOST_KEYS = ("cpu_percent", "mem_used_bytes", "mem_total_bytes")


def monitor_section(targets: list[tuple[str, list[dict], str | None]], host: list[dict], cpus: int) -> dict:
    """A `monitor` section in squall's shape from (label, series, error) and the host's series."""
    out = []
    for label, series, error in targets:
        peak, mean = _stats(series, TARGET_KEYS)
        doc = {"label": label, "series": series, "peak": peak, "mean": mean}
        if error:
            doc["error"] = error
        out.append(doc)
    peak, mean = _stats(host, HOST_KEYS)
    return {"targets": out, "host": {"cpus": cpus, "series": host, "peak": peak, "mean": mean}}


def made_up_monitor(r: dict, scale: float = 1.0) -> dict:
    """Two targets and a 4-core host over the run's seconds: a gunicorn tree whose CPU follows the load and
    whose memory grows; a container whose sampling failed from second 5 on (nulls, an `error`)."""
    pts = r["timeseries"]
    start = r.get("start_unix") or 1.7e9
    top = max(p["requests"] for p in pts) or 1
    gun, web, host = [], [], []
    for i, p in enumerate(pts):
        t = p["t"]
        stamp = {"t": t, "unix": round(start + t, 6)}
        load = p["requests"] / top
        cpu = round(scale * (60 + 180 * load + 25 * math.sin(t / 3)), 1)
        gun.append({**stamp, "cpu_percent": cpu, "rss_bytes": int(180e6 + 2.5e6 * t * scale), "threads": 9 + (t % 4 == 0),
                    "fds": 41 + t % 7, "processes": 5})
        ok = t < 5
        web.append({**stamp, "cpu_percent": round(scale * (22 + 8 * math.cos(t / 2)), 1) if ok else None,
                    "rss_bytes": int(64e6) if ok else None, "threads": 4 if ok else None, "fds": None,
                    "processes": 1 if ok else None})
        host.append({**stamp, "cpu_percent": round(min(400.0, cpu + 95 + 20 * math.sin(t)), 1),
                     "mem_used_bytes": int(2.1e9 + 3e6 * t), "mem_total_bytes": 16_700_000_000})
    return monitor_section(
        [("pid 4242 (gunicorn)", gun, None),
         ("container " + EVIL, web, "PermissionError: [Errno 13] Permission denied: '/sys/fs/cgroup/<b>x</b>/memory.stat'")],
        host, 4)


def generator_section(warn: bool) -> dict:
    """A `generator` section as squall.monitor.GeneratorWatch.to_json(); `warn`: saturated, two warnings."""
    threads = [("main", 0.9, 1.6, 0), ("squall-worker-0", 97.2 if warn else 48.0, 100.0 if warn else 55.1, 12 if warn else 0),
               ("squall-worker-1", 93.4 if warn else 45.2, 99.0 if warn else 51.0, 4 if warn else 0),
               ("squall-coordinator", 0.1, 0.4, 0), ("squall-monitor", 0.1, 0.2, 0)]
    return {
        "threads": [{"name": n, "cpu_percent_mean": m, "cpu_percent_peak": pk, "saturated_s": s} for n, m, pk, s in threads],
        "process": {"cpu_percent_mean": 190.6 if warn else 93.3, "cpu_percent_peak": 199.1 if warn else 106.0, "cpus": 4},
        "warnings": [
            f"the generator saturated: engine thread 'squall-worker-0' at 97% CPU for 12 s (and 1 other thread); {ADVICE}",
            "sends fell behind the schedule: 1,234 late (>10 ms) in the last 5 s, 2,345 in all; squall was short of CPU "
            "(above) " + EVIL,
        ] if warn else [],
        "saturated": warn,
    }


def monitored(r: dict, scale: float = 1.0, warn: bool = True) -> dict:
    r = copy.deepcopy(r)
    r["monitor"] = made_up_monitor(r, scale)
    r["generator"] = generator_section(warn)
    return r


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/squall-web"
    os.makedirs(out, exist_ok=True)
    samples = {}
    for f in sorted(os.listdir(SAMPLES)):
        if f.endswith(".json"):
            samples[f[:-5]] = json.loads(read(os.path.join(SAMPLES, f)))
    written = []

    def write(name: str, text: str) -> None:
        path = os.path.join(out, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        written.append(path)

    for name, r in samples.items():
        write(f"report-{name}.html", page({"mode": "report", "meta": meta_for(name, r), "result": with_spectrum(r)}))
    r = samples["bench-closed"]
    write("report-bench-closed-nospectrum.html", page({"mode": "report", "meta": meta_for("bench-closed", r), "result": r}))
    h = hostile(with_spectrum(samples["locustfile"]))
    write("report-hostile.html", page({"mode": "report", "meta": meta_for("locustfile", h, title='<b>hostile</b> "title"'), "result": h}))
    write("report-failing.html", page({"mode": "report", "meta": meta_for("bench-closed", r), "result": failing(with_spectrum(r))}))
    t = with_thresholds(with_spectrum(samples["locustfile"]), stopped=True)
    write("report-thresholds.html", page({"mode": "report", "meta": meta_for("locustfile", t), "result": t}))
    write("report-empty.html", page({"mode": "report", "meta": meta_for("locustfile", samples["locustfile"]), "result": empty(samples["locustfile"])}))
    write("report-long.html", page({"mode": "report", "meta": meta_for("bench-closed", r), "result": long_run(with_spectrum(r))}))
    write("compare.html", page({
        "mode": "compare",
        "meta": {"command": "compare", "title": "bench: closed (A) vs open (B)", "squall_version": "0.1.0"},
        "runs": [{"label": "A", "result": with_thresholds(with_spectrum(samples["bench-closed"]), stopped=True)},
                 {"label": "B", "result": with_thresholds(with_spectrum(samples["bench-open"]), passing_only=True)}],
    }))
    write("compare3.html", page({
        "mode": "compare",
        "meta": {"command": "compare", "squall_version": "0.1.0"},
        "runs": [{"label": "A", "result": with_spectrum(samples["locustfile"])},
                 {"label": "B", "result": with_spectrum(samples["locustfile-rate"])},
                 {"label": "C", "result": samples["bench-closed"]}],
    }))
    limits = {n: with_spectrum(samples[n]) for n in ("limit-sync", "limit-async")}
    ln = limit_none(limits["limit-sync"])
    write("report-limit-none.html", page({"mode": "report", "meta": meta_for("limit-sync", ln), "result": ln}))
    write("compare-limit.html", page({
        "mode": "compare",
        "meta": {"command": "compare", "title": "find-limit: sync (A) vs async (B)", "squall_version": "0.1.0"},
        "runs": [{"label": "A", "result": limits["limit-sync"]}, {"label": "B", "result": limits["limit-async"]}],
    }))
    mu = monitored(long_run(with_spectrum(r), 45))
    write("report-monitor-made-up.html", page({"mode": "report", "meta": meta_for("bench-closed", mu), "result": mu}))
    bm = with_spectrum(samples["bench-monitor"])
    b2 = copy.deepcopy(bm)
    b2["monitor"] = monitor_section(
        [(t["label"], [dict(x, cpu_percent=round(x["cpu_percent"] * 1.3, 1), rss_bytes=int(x["rss_bytes"] * 1.1)) for x in t["series"]], None)
         for t in bm["monitor"]["targets"]],
        bm["monitor"]["host"]["series"], bm["monitor"]["host"]["cpus"])
    b2["generator"] = generator_section(True)
    b2["start_unix"] += 600
    write("compare-monitor.html", page({
        "mode": "compare",
        "meta": {"command": "compare", "title": "monitored: A vs B", "squall_version": "0.1.0"},
        "runs": [{"label": "A", "result": bm}, {"label": "B", "result": b2}],
    }))
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
