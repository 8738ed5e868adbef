#!/usr/bin/env python3
"""A stand-in for squall's live server (stdlib only): serves the page in live mode and replays a sample's
timeseries through /api/live, one second per second, with the controls of the contract.

    python3 web/dev/fake_live.py [--sample locustfile] [--port 8089] [--no-start] [--outage 4:7] [--repeat 3]
                                 [--thresholds] [--threshold-stop] [--verdict-delay 1.5] [--no-live-schedule]
                                 [--delay 2] [--monitor] [--monitor-delta] [--generator-warn-after 4]

--no-start: the run starts at once (bench, mqtt) instead of waiting for POST /api/start.
--outage A:B: /api/live fails from second A to second B of the replay (the page must say "disconnected").
--thresholds: meta.thresholds lists texts (pending in the page) and the final result holds their verdicts
(render.verdicts: some fail); --threshold-stop: its stop_reason is "threshold"; --verdict-delay S: for S
seconds after the run ends /api/result answers without `thresholds` (as squall, which publishes the
result a moment before it judges it). meta.load is set as squall's commands set it; --no-live-schedule:
/api/live's schedule stays null (the page's intended rate then comes from meta.load.rate).
--delay S: a run that starts at once (bench, mqtt, --no-start) starts S seconds after the server.
Resources: a sample with `monitor` (bench-monitor), or any with --monitor (render.made_up_monitor), gets
meta.monitor = [] and /api/live's `monitor`: every sample so far each second, as squall sends it (its
seconds repeated with the timeseries'); --monitor-delta: only the samples from the cursor's second on.
`generator`: the sample's (else render.generator_section) once the run started; --generator-warn-after S:
saturated, with warnings, from S seconds into the run.
Ctrl-C stops it. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render  # noqa: E402  (the template filling and the spectrum of the samples)


class Replay:
    def __init__(self, result: dict, command: str, wait_for_start: bool, outage: tuple[float, float] | None, repeat: int = 1,
                 verdict_delay: float = 0.0, live_schedule: bool = True, delay: float = 0.0, monitor_delta: bool = False,
                 warn_after: float | None = None):
        self.result = render.with_spectrum(result)
        self.live_schedule = live_schedule
        self.verdict_delay = verdict_delay
        self.result_fetches = 0
        self.command = command
        base = self.result["timeseries"]
        self.points = [dict(p, t=p["t"] + i * len(base)) for i in range(repeat) for p in base]
        self.lock = threading.Lock()
        self.started: float | None = None if wait_for_start else time.monotonic() + delay
        self.monitor_delta = monitor_delta
        self.warn_after = warn_after
        # the monitor's samples, repeated as the seconds are
        mon = self.result.get("monitor")
        self.mon: dict | None = None
        if mon:
            shift = lambda series, i: [dict(x, t=x["t"] + i * len(base)) for x in series]  # noqa: E731
            self.mon = {
                "targets": [dict(t, series=[x for i in range(repeat) for x in shift(t["series"], i)]) for t in mon["targets"]],
                "host": dict(mon["host"], series=[x for i in range(repeat) for x in shift(mon["host"]["series"], i)]),
            }
        self.stopped_at: int | None = None
        self.target: int | None = None
        self.baseline: dict[str, dict] = {}
        self.outage = outage
        self.calls: list[str] = []

    def published(self) -> int:
        if self.started is None or time.monotonic() < self.started:
            return 0
        n = int(time.monotonic() - self.started)
        if self.stopped_at is not None:
            n = min(n, self.stopped_at)
        return min(n, len(self.points))

    def state(self, n: int) -> tuple[str, bool]:
        if self.started is None or time.monotonic() < self.started:
            return "ready", False
        elapsed = time.monotonic() - self.started
        end = self.stopped_at if self.stopped_at is not None else len(self.points)
        if elapsed >= end + 2:
            return "stopped", True
        if elapsed >= end:
            return "stopping", False
        return ("spawning" if n < 2 and self.command == "run" else "running"), False

    def final(self) -> dict:
        """/api/result: without the verdicts for --verdict-delay seconds after the run ended."""
        with self.lock:
            self.result_fetches += 1
            if self.started is None or "thresholds" not in self.result:
                return self.result
            end = self.stopped_at if self.stopped_at is not None else len(self.points)
            if time.monotonic() - self.started < end + 2 + self.verdict_delay:
                return {k: v for k, v in self.result.items() if k != "thresholds"}
            return self.result

    def monitor(self, n: int, cursor: int) -> dict | None:
        """`monitor` as squall's Monitor.latest() (or .since(cursor) with --monitor-delta) after n seconds."""
        if self.mon is None:
            return None
        out = []
        for t in self.mon["targets"]:
            series = [x for x in t["series"] if x["t"] < n]
            peak, mean = render._stats(series, render.TARGET_KEYS)
            doc = {"label": t["label"], "series": series, "peak": peak, "mean": mean}
            if t.get("error") and any(x["cpu_percent"] is None for x in series):
                doc["error"] = t["error"]
            out.append(doc)
        host = [x for x in self.mon["host"]["series"] if x["t"] < n]
        peak, mean = render._stats(host, render.HOST_KEYS)
        doc = {"targets": out, "host": {"cpus": self.mon["host"]["cpus"], "series": host, "peak": peak, "mean": mean}}
        if self.monitor_delta:
            for t in doc["targets"]:
                t["series"] = [x for x in t["series"] if x["t"] >= cursor]
            doc["host"]["series"] = [x for x in doc["host"]["series"] if x["t"] >= cursor]
        return doc

    def generator(self) -> dict | None:
        if self.started is None or time.monotonic() < self.started:
            return None
        if self.warn_after is not None:
            return render.generator_section(time.monotonic() - self.started >= self.warn_after)
        return self.result.get("generator") or render.generator_section(False)

    def in_outage(self) -> bool:
        if not self.outage or self.started is None:
            return False
        e = time.monotonic() - self.started
        return self.outage[0] <= e < self.outage[1]

    def totals(self, n: int) -> dict:
        """Cumulative totals of the first n seconds (percentiles and spectra borrowed from the final result)."""
        pts = self.points[:n]
        final = {(e["method"], e["name"]): e for e in self.result["endpoints"]}
        eps = []
        for k, e in final.items():
            req = sum(x["requests"] for p in pts for x in p["endpoints"] if (x["method"], x["name"]) == k)
            fail = sum(x["failures"] for p in pts for x in p["endpoints"] if (x["method"], x["name"]) == k)
            base = self.baseline.get(f"{k[0]} {k[1]}", {"requests": 0, "failures": 0})
            req, fail = req - base["requests"], fail - base["failures"]
            if req <= 0:
                continue
            t = {kk: vv for kk, vv in e.items() if kk != "histogram"}
            frac = req / max(1, e["requests"])
            t.update(requests=req, failures=fail, body_bytes=int(e["body_bytes"] * frac), wire_bytes=int(e["wire_bytes"] * frac))
            t["status_codes"] = {c: int(v * frac) for c, v in e.get("status_codes", {}).items()}
            eps.append(t)
        agg = {k: v for k, v in self.result["aggregate"].items() if k != "histogram"}
        r = sum(e["requests"] for e in eps)
        frac = r / max(1, agg["requests"])
        agg.update(requests=r, failures=sum(e["failures"] for e in eps),
                   body_bytes=int(agg["body_bytes"] * frac), wire_bytes=int(agg["wire_bytes"] * frac))
        agg["status_codes"] = {c: int(v * frac) for c, v in agg.get("status_codes", {}).items()}
        if not r:
            agg.update(percentiles_us={}, spectrum=[], min_us=0, max_us=0, mean_us=0)
        return {"aggregate": agg, "endpoints": eps, "errors": self.result["errors"] if n > 2 else [],
                "exceptions": self.result.get("exceptions", []) if self.command == "run" else []}

    def live(self, cursor: int) -> dict:
        with self.lock:
            n = self.published()
            state, finished = self.state(n)
            frac = n / max(1, len(self.points))
            sched = self.result.get("schedule") if self.live_schedule else None
            if sched:
                sched = dict(sched, intended=int(sched["intended"] * frac), sent=int(sched["sent"] * frac),
                             late=int(sched["late"] * frac))
            mqtt = None
            if self.result.get("mqtt"):
                m = self.result["mqtt"]
                mqtt = {"connected": m["clients"] if n else 0, "sent": int(m["sent"] * frac),
                        "published": int(m["published"] * frac),
                        "delivered": int((m.get("delivery") or {}).get("delivered", 0) * frac), "failed": 0}
            series = []
            for p in self.points[min(cursor, n):n]:
                q = {k: v for k, v in p.items() if k != "histogram"}
                q["endpoints"] = [{k: v for k, v in e.items() if k != "histogram"} for e in p["endpoints"]]
                series.append(q)
            return {
                "state": state,
                "kind": "mqtt" if self.command == "mqtt" else "http",
                "elapsed_s": max(0.0, round(time.monotonic() - self.started, 3)) if self.started else 0.0,
                "users": self.points[n - 1]["users"] if n else 0,
                "target_users": (self.target or 20) if self.command == "run" else None,
                "cursor": n,
                "timeseries": series,
                "totals": self.totals(n),
                "schedule": sched,
                "mqtt": mqtt,
                "monitor": self.monitor(n, cursor),
                "generator": self.generator(),
                "finished": finished,
            }

    def control(self, path: str, body: dict) -> dict:
        with self.lock:
            self.calls.append(path + " " + json.dumps(body, sort_keys=True))
            if path == "/api/start":
                if self.started is not None:
                    return {"ok": False, "error": "already running"}
                if not isinstance(body.get("users"), (int, float)) or body["users"] < 1:
                    return {"ok": False, "error": "users must be at least 1"}
                self.started = time.monotonic()
                self.target = int(body["users"])
            elif path == "/api/users":
                self.target = int(body.get("users", 0))
            elif path == "/api/stop":
                if self.started is not None:
                    self.stopped_at = self.published()
            elif path == "/api/reset":
                n = self.published()
                self.baseline = {}
                for p in self.points[:n]:
                    for e in p["endpoints"]:
                        b = self.baseline.setdefault(f"{e['method']} {e['name']}", {"requests": 0, "failures": 0})
                        b["requests"] += e["requests"]
                        b["failures"] += e["failures"]
            else:
                return {"ok": False, "error": "unknown control"}
            return {"ok": True}


def live_load(result: dict, command: str, repeat: int) -> dict:
    """meta.load as squall's commands set it for the dashboard (bench's _load, run's load; mqtt: {})."""
    sched = result.get("schedule") or {}
    if command == "bench":
        return {"model": "open" if sched else "closed", "connections": result["load"]["connections"],
                "requests": result["load"].get("requests"), "duration_s": len(result["timeseries"]) * repeat,
                "rate": sched.get("rate"), "http2": result["load"].get("http2", False)}
    if command == "run":  # no rate: squall's run command does not put --rate into meta.load
        return {"model": "open" if sched else "users", "users": 20, "spawn_rate": 10}
    return {}


def make_handler(replay: Replay, page: str, assets: str):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet
            pass

        def send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            u = urlparse(self.path)
            if u.path in ("/", "/index.html"):
                return self.send(200, page.encode(), "text/html; charset=utf-8")
            if u.path in ("/assets/app.js", "/assets/app.css"):
                with open(os.path.join(assets, u.path.rsplit("/", 1)[1]), "rb") as f:
                    ctype = "text/javascript" if u.path.endswith(".js") else "text/css"
                    return self.send(200, f.read(), ctype + "; charset=utf-8")
            if u.path == "/api/live":
                if replay.in_outage():
                    return self.send(503, b"outage", "text/plain")
                cursor = int(parse_qs(u.query).get("cursor", ["0"])[0])
                return self.send(200, json.dumps(replay.live(cursor)).encode(), "application/json")
            if u.path == "/api/result":
                return self.send(200, json.dumps(replay.final()).encode(), "application/json")
            if u.path == "/download/result.json":
                return self.send(200, json.dumps(replay.result).encode(), "application/json")
            if u.path == "/download/stats.csv":
                return self.send(200, b"Type,Name\n", "text/csv")
            if u.path == "/download/report.html":
                return self.send(200, b"<!doctype html><title>report</title>", "text/html")
            if u.path == "/_result_fetches":  # for the browser check: the late verdicts were asked for again
                return self.send(200, json.dumps(replay.result_fetches).encode(), "application/json")
            if u.path == "/_calls":  # for the browser check: the controls the page posted
                return self.send(200, json.dumps(replay.calls).encode(), "application/json")
            return self.send(404, b"not found", "text/plain")

        def do_POST(self):
            u = urlparse(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except ValueError:
                return self.send(400, json.dumps({"ok": False, "error": "bad JSON"}).encode(), "application/json")
            return self.send(200, json.dumps(replay.control(u.path, body)).encode(), "application/json")

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="locustfile")
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--no-start", action="store_true")
    ap.add_argument("--outage", default="")
    ap.add_argument("--repeat", type=int, default=1, help="replay the seconds this many times (a longer run)")
    ap.add_argument("--thresholds", action="store_true", help="configured thresholds: pending, then verdicts")
    ap.add_argument("--threshold-stop", action="store_true", help='the result\'s stop_reason is "threshold"')
    ap.add_argument("--verdict-delay", type=float, default=0.0)
    ap.add_argument("--no-live-schedule", action="store_true")
    ap.add_argument("--delay", type=float, default=0.0, help="a run that starts at once starts this many seconds later")
    ap.add_argument("--monitor", action="store_true", help="a made-up monitor when the sample has none")
    ap.add_argument("--monitor-delta", action="store_true", help="send the monitor's samples from the cursor on only")
    ap.add_argument("--generator-warn-after", type=float, default=None)
    a = ap.parse_args()
    result = json.loads(render.read(os.path.join(render.SAMPLES, a.sample + ".json")))
    if a.monitor and not result.get("monitor"):
        result["monitor"] = render.made_up_monitor(result)
    if a.thresholds:
        result = render.with_thresholds(result, stopped=a.threshold_stop)
    command = {"mqtt": "mqtt", "script": "run"}.get(result["kind"], "bench")
    wait = command == "run" and not a.no_start
    outage = tuple(float(x) for x in a.outage.split(":")) if a.outage else None
    replay = Replay(result, command, wait, outage, a.repeat, a.verdict_delay, not a.no_live_schedule,  # type: ignore[arg-type]
                    a.delay, a.monitor_delta, a.generator_warn_after)
    ctl = command == "run"
    meta = render.meta_for(a.sample, result, title=f"{a.sample} (live)",
                           controls={"start": ctl, "users": ctl, "stop": True, "reset": True},
                           form={"users": 20, "spawn_rate": 10, "host": result["url"]} if ctl else None,
                           load=live_load(result, command, a.repeat),
                           thresholds=[v["threshold"] for v in result["thresholds"]] if a.thresholds else None,
                           monitor=[] if result.get("monitor") else None)
    page = render.page({"mode": "live", "meta": meta}, inline=False)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(replay, page, os.path.join(render.WEB, "assets")))
    print(f"http://127.0.0.1:{srv.server_address[1]}/  ({a.sample}, {command})", flush=True)
    try:
        srv.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
