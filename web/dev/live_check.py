#!/usr/bin/env python3
"""Drives the live dashboard against fake_live.py in headless Chromium: the start form, charts growing
each second on the same canvas, edit users, reset, a network outage ("disconnected"), the final report;
thresholds pending while live and their verdicts once the result arrives (late: squall judges the
result after publishing it); the load from meta.load while live (bench: the intended rate too); the
Resources section waiting, then its charts growing each second (whole or partial monitor answers) and the
generator's warning banner and badge once it saturates.

    .venv/bin/python web/dev/live_check.py [SHOTS_DIR]
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
SHOTS = sys.argv[1] if len(sys.argv) > 1 else "/tmp/web-shots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*args: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_live.py"), "--port", str(port), *args],
                         stdout=subprocess.PIPE, text=True)
    p.stdout.readline()  # the URL: it listens
    return p, f"http://127.0.0.1:{port}/"


def thresholds(page) -> dict:
    return page.evaluate(
        "() => ({rows: [...document.querySelectorAll('[data-testid=threshold-row]')].map(r => [r.dataset.threshold, r.dataset.passed || null, r.dataset.state]),"
        " endpoints: [...document.querySelectorAll('[data-testid=threshold-row] td:nth-child(3)')].map(td => td.textContent),"
        " badge: (document.querySelector('[data-testid=thresholds-badge]') || {}).textContent || '',"
        " badges: document.querySelectorAll('[data-testid=thresholds-badge]').length})"
    )


def check(cond: bool, what: str, problems: list[str]) -> None:
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        problems.append(what)


def main() -> int:
    os.makedirs(SHOTS, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])

        # 1. a locustfile: ready -> start -> running -> edit users -> reset -> outage -> finished
        proc, url = serve("--sample", "locustfile", "--repeat", "2", "--outage", "6:8.5",
                          "--thresholds", "--threshold-stop", "--verdict-delay", "1.5")
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # wait_for_function evaluates strings
            page = ctx.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "503" not in m.text else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']", timeout=10000)
            check(page.text_content("[data-testid=state]") == "ready", "state ready before start", problems)
            check(page.is_visible("[data-testid=start-form]"), "start form shown when ready", problems)
            check(page.input_value("[data-testid=start-users]") == "20", "start form prefilled from meta.form", problems)
            check(not page.is_visible("[data-testid=stop-button]"), "no stop button before start", problems)
            thr = thresholds(page)
            check(len(thr["rows"]) == 6 and all(r == [r[0], None, "pending"] for r in thr["rows"]), f"thresholds pending while live {thr['rows']}", problems)
            check(thr["rows"][4][0] == "GET browse: max<5ms" and thr["endpoints"][4] == "GET browse" and thr["endpoints"][0] == "all",
                  f"pending thresholds' endpoints from their text {thr['endpoints']}", problems)
            check(thr["badge"] == "6 thresholds: pending", f"thresholds badge pending: {thr['badge']!r}", problems)
            check(page.text_content("[data-testid=fact-load]") == "20 users · spawn rate 10/s", "load from meta.load: "
                  + repr(page.text_content("[data-testid=fact-load]")), problems)
            page.screenshot(path=os.path.join(SHOTS, "live-ready.png"))
            page.fill("[data-testid=start-users]", "0")
            page.click("[data-testid=start-button]")
            page.wait_for_timeout(300)
            # users=0 is refused by the browser (min=1) or by the server: either way no start
            check(page.text_content("[data-testid=state]") == "ready", "users 0 does not start", problems)
            page.fill("[data-testid=start-users]", "25")
            page.fill("[data-testid=start-rate]", "5")
            page.click("[data-testid=start-button]")
            page.wait_for_function("document.querySelector('[data-testid=state]').textContent.match(/spawning|running/)", timeout=5000)
            check(not page.is_visible("[data-testid=start-form]"), "start form hidden once running", problems)
            page.wait_for_function("+document.querySelector('[data-testid=chart-rps]').dataset.points >= 2", timeout=8000)
            page.evaluate("window.__canvas = document.querySelector('[data-testid=chart-rps] canvas')")
            n1 = int(page.get_attribute("[data-testid=chart-rps]", "data-points"))
            page.wait_for_function(f"+document.querySelector('[data-testid=chart-rps]').dataset.points > {n1}", timeout=5000)
            same = page.evaluate("window.__canvas === document.querySelector('[data-testid=chart-rps] canvas')")
            check(same, "points appended on the same canvas (no re-creation)", problems)
            check(page.is_visible("[data-testid=stop-button]") and page.is_visible("[data-testid=reset-button]"), "stop and reset shown while running", problems)
            page.click("[data-testid=edit-users-button]")
            page.fill("[data-testid=edit-users]", "40")
            page.fill("[data-testid=edit-rate]", "8")
            page.screenshot(path=os.path.join(SHOTS, "live-running-edit.png"))
            page.click("[data-testid=edit-submit]")
            page.wait_for_timeout(400)
            page.click("[data-testid=reset-button]")
            page.wait_for_timeout(400)
            calls = json.loads(urllib.request.urlopen(url + "_calls").read())
            check(any(c.startswith('/api/start {"host": "http://127.0.0.1:57511", "spawn_rate": 5, "users": 25}') for c in calls), "POST /api/start with the form", problems)
            check('/api/users {"spawn_rate": 8, "users": 40}' in calls, "POST /api/users", problems)
            check("/api/reset {}" in calls, "POST /api/reset", problems)
            page.wait_for_selector("[data-testid=connection]:visible", timeout=9000)
            check(page.text_content("[data-testid=connection]") == "disconnected", "outage shows disconnected", problems)
            page.screenshot(path=os.path.join(SHOTS, "live-disconnected.png"))
            page.wait_for_selector("[data-testid=connection]", state="hidden", timeout=8000)
            check(True, "reconnects after the outage", problems)
            page.wait_for_selector("body[data-finished='1']", timeout=20000)
            page.wait_for_timeout(300)
            pts = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.dataset.testid, +c.dataset.points]))")
            check(pts.get("chart-rps") == 6 and pts.get("chart-spectrum", 0) > 0, f"final report drawn {pts}", problems)
            check(page.text_content("[data-testid=total-requests]") == "22,240", "final totals from /api/result", problems)
            check(page.is_visible("[data-testid=download-json]"), "download links kept", problems)
            check(not page.is_visible("[data-testid=stop-button]"), "no stop once finished", problems)
            thr = thresholds(page)
            want = [["p95<300ms", "true", "pass"], ["p99<1.5ms", "false", "fail"], ["error_rate<1%", "true", "pass"],
                    ["rps>1000", "true", "pass"], ["GET browse: max<5ms", "false", "fail"], ["/typo: p95<100ms", "false", "fail"]]
            check(thr["rows"] == want, f"final verdicts replace the pending rows {thr['rows']}", problems)
            check(thr["badge"] == "6 thresholds: 3 passed, 3 failed" and thr["badges"] == 1, f"one thresholds badge, final: {thr}", problems)
            check(page.text_content("[data-testid=stop-reason]") == "stopped by a threshold", "stop reason: stopped by a threshold", problems)
            fetches = json.loads(urllib.request.urlopen(url + "_result_fetches").read())
            check(fetches >= 2, f"the page asked again for the late verdicts ({fetches} fetches of /api/result)", problems)
            page.screenshot(path=os.path.join(SHOTS, "live-finished.png"), full_page=True)
            check(not errors, "no console errors " + " | ".join(errors), problems)
            ctx.close()
        finally:
            proc.terminate()
            proc.wait()

        # 2. mqtt and bench: no start form, starts at once (bench: no live schedule, the rate from meta.load)
        for sample in ("mqtt", "bench-open"):
            proc, url = serve("--sample", sample, "--no-start", "--repeat", "2", *(["--no-live-schedule"] if sample == "bench-open" else []))
            try:
                ctx = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark", bypass_csp=True)
                page = ctx.new_page()
                errors = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']", timeout=10000)
                check(not page.is_visible("[data-testid=start-form]"), f"{sample}: no start form", problems)
                check(not page.is_visible("[data-testid=edit-users-button]"), f"{sample}: no edit users", problems)
                page.wait_for_function("+document.querySelector('.chart').dataset.points >= 3", timeout=8000)
                page.wait_for_timeout(200)
                page.screenshot(path=os.path.join(SHOTS, f"live-{sample}-running.png"), full_page=True)
                pts = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.dataset.testid, +c.dataset.points]))")
                print("   ", sample, "running", pts)
                load = page.text_content("[data-testid=fact-load]")
                if sample == "mqtt":  # meta.load is {}: the load shows once the live schedule tells the rate
                    check(load == "open model, 1,000 msg/s" and page.is_visible("[data-testid=fact-load]"), f"mqtt: load from the schedule {load!r}", problems)
                else:
                    check(load == "open model, 3,000 requests/s · up to 20 connections · run time 12 s", f"bench: load from meta.load {load!r}", problems)
                    intended = page.text_content("[data-testid=chart-schedule] .u-legend .u-series:nth-child(2) .u-value")
                    check(pts.get("chart-schedule", 0) >= 3 and intended == "3,000", f"bench: intended rate from meta.load.rate ({intended!r})", problems)
                check(page.locator("[data-testid=thresholds-table]").count() == 0, f"{sample}: no thresholds section without thresholds", problems)
                page.wait_for_selector("body[data-finished='1']", timeout=20000)
                check(not errors, f"{sample}: no console errors " + " | ".join(errors), problems)
                ctx.close()
            finally:
                proc.terminate()
                proc.wait()

        # 3. resources (bench --monitor-*): waiting before the first sample, charts that grow on the same canvas
        # with the load's (squall sends every sample each second; --monitor-delta: only the new ones), the
        # generator's banner and badge once it saturates; the final result's own numbers at the end
        for delta in (False, True):
            tag = "delta" if delta else "full"
            proc, url = serve("--sample", "bench-monitor", "--repeat", "4", "--delay", "2.5", "--generator-warn-after", "4",
                              *(["--monitor-delta"] if delta else []))
            try:
                ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
                page = ctx.new_page()
                errors = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']", timeout=10000)
                check(page.is_visible("[data-testid=section-resources]") and page.is_visible("[data-testid=monitor-waiting]")
                      and page.locator("[data-testid=chart-monitor-cpu]").count() == 0, f"{tag}: resources waiting for the first sample", problems)
                check(not page.is_visible("[data-testid=generator-badge]") and not page.is_visible("[data-testid=generator-warning]"),
                      f"{tag}: no generator badge before the run", problems)
                if not delta:
                    page.screenshot(path=os.path.join(SHOTS, "live-monitor-waiting.png"))
                page.wait_for_function("+((document.querySelector('[data-testid=chart-monitor-cpu]') || {}).dataset || {}).points >= 2", timeout=10000)
                page.evaluate("window.__mc = document.querySelector('[data-testid=chart-monitor-cpu] canvas')")
                n1 = int(page.get_attribute("[data-testid=chart-monitor-cpu]", "data-points"))
                page.wait_for_function(f"+document.querySelector('[data-testid=chart-monitor-cpu]').dataset.points > {n1}", timeout=5000)
                same = page.evaluate("window.__mc === document.querySelector('[data-testid=chart-monitor-cpu] canvas')")
                check(same, f"{tag}: monitor samples appended on the same canvas", problems)
                pts = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.dataset.testid, +c.dataset.points]))")
                check(pts["chart-monitor-cpu"] == pts["chart-monitor-memory"] == pts["chart-rps"] and not page.is_visible("[data-testid=monitor-waiting]"),
                      f"{tag}: resources in step with the load {pts}", problems)
                rows = page.evaluate("() => [...document.querySelectorAll('[data-testid=monitor-row]')].map(r => r.dataset.label)")
                check(rows == ["name nginx", "host"], f"{tag}: monitor table rows {rows}", problems)
                page.wait_for_selector("[data-testid=generator-warning]:visible", timeout=8000)
                lines = page.evaluate("() => [...document.querySelectorAll('[data-testid=generator-warning-line]')].map(l => l.textContent)")
                badge = page.text_content("[data-testid=generator-badge]")
                check(len(lines) == 2 and all(x.startswith("The generator, not the target, may be the limit: ") for x in lines)
                      and badge == "generator saturated", f"{tag}: generator warnings live ({badge!r}, {lines})", problems)
                check(page.locator("[data-testid=generator-table] [data-testid=generator-thread]").count() == 5, f"{tag}: squall's threads live", problems)
                if not delta:
                    page.wait_for_timeout(1500)
                    page.screenshot(path=os.path.join(SHOTS, "live-monitor-running.png"), full_page=True)
                page.wait_for_selector("body[data-finished='1']", timeout=25000)
                page.wait_for_timeout(300)
                pts = page.evaluate("() => Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.dataset.testid, +c.dataset.points]))")
                badge = page.text_content("[data-testid=generator-badge]")
                check(pts.get("chart-monitor-cpu") == 3 and badge == "generator ok" and not page.is_visible("[data-testid=generator-warning]")
                      and page.locator("[data-testid=generator-badge]").count() == 1,
                      f"{tag}: the final result's resources and generator ({pts}, {badge!r})", problems)
                check(not errors, f"{tag}: no console errors " + " | ".join(errors), problems)
                if not delta:
                    page.screenshot(path=os.path.join(SHOTS, "live-monitor-finished.png"), full_page=True)
                ctx.close()
            finally:
                proc.terminate()
                proc.wait()
        browser.close()
    print(f"{len(problems)} problem(s)" if problems else "all live checks passed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
