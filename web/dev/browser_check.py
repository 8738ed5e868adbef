#!/usr/bin/env python3
"""Opens the pages render.py wrote in headless Chromium (Playwright, Debian's chromium), offline:
every request that is not file:// is aborted and counted. Checks body[data-ready=1], the charts'
data-points, console errors, that hostile strings stayed text, the breaking point, the resources
(`monitor`) and the generator's health; screenshots into /tmp/web-shots/.

    .venv/bin/python web/dev/browser_check.py [PAGES_DIR] [SHOTS_DIR]
"""

from __future__ import annotations

import json
import os
import sys

from playwright.sync_api import sync_playwright

PAGES = sys.argv[1] if len(sys.argv) > 1 else "/tmp/squall-web"
SHOTS = sys.argv[2] if len(sys.argv) > 2 else "/tmp/web-shots"

EXPECT = {
    "report-bench-closed.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "report-bench-closed-nospectrum.html": ["chart-rps", "chart-latency", "chart-users"],
    "report-bench-open.html": ["chart-rps", "chart-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "report-locustfile.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "report-locustfile-rate.html": ["chart-rps", "chart-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "report-mqtt.html": ["chart-mqtt", "chart-mqtt-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "report-hostile.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "report-failing.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "report-thresholds.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "report-empty.html": [],
    "report-long.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum"],
    "compare.html": ["chart-rps", "chart-latency", "chart-spectrum"],
    "compare3.html": ["chart-rps", "chart-latency", "chart-spectrum"],
    "report-limit-sync.html": ["chart-limit", "chart-rps", "chart-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "report-limit-async.html": ["chart-limit", "chart-rps", "chart-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "report-limit-none.html": ["chart-limit", "chart-rps", "chart-latency", "chart-users", "chart-schedule", "chart-spectrum"],
    "compare-limit.html": ["chart-limit-compare", "chart-rps", "chart-latency", "chart-spectrum"],
    "report-bench-monitor.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum", "chart-monitor-cpu", "chart-monitor-memory"],
    "report-monitor-made-up.html": ["chart-rps", "chart-latency", "chart-users", "chart-spectrum", "chart-monitor-cpu", "chart-monitor-memory"],
    "compare-monitor.html": ["chart-rps", "chart-latency", "chart-monitor-compare", "chart-spectrum"],
}

EVIL = '<img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'
LEAD = "The generator, not the target, may be the limit: "
# resources and the generator: charts' points, the table's rows, the banner's lines, the badge
MONITOR = {
    "report-bench-monitor.html": {"points": 3, "rows": ["name nginx", "host"], "errors": 0, "warnings": 0,
                                  "badge": ["generator ok", "ok"], "threads": 5, "tab": True},
    "report-monitor-made-up.html": {"points": 45, "rows": ["pid 4242 (gunicorn)", "container " + EVIL, "host"], "errors": 1,
                                    "warnings": 2, "badge": ["generator saturated", "saturated"], "threads": 5, "tab": True},
    "compare-monitor.html": {"compare": 2, "compare_points": 3, "compare_generator": 1},
}
WITH_MONITOR = tuple(MONITOR)

# --find-limit pages: the headline's number (text, data-value), the steps drawn, the rows, the compare cells
LIMITS = {
    "report-limit-sync.html": {"load": ["91", "90.75"], "points": 8, "rows": 9,
                               "headline": "Limit: 91 req/s within p95<1s, error_rate<1%"},
    "report-limit-async.html": {"load": ["1,859", "1859.25"], "points": 8, "rows": 9,
                                "headline": "Limit: 1,859 req/s within p95<1s, error_rate<1%"},
    "report-limit-none.html": {"load": ["", None], "points": 8, "rows": 9,
                               "headline": "No limit established: at 44: p95<1s failed (measured 527.871 ms) <b>not markup</b>"},
    "compare-limit.html": {"compare": ["limit 91 req/s", "limit 1,859 req/s"]},
}
WITH_LIMIT = tuple(LIMITS)


def main() -> int:
    os.makedirs(SHOTS, exist_ok=True)
    failures = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for scheme in ("light", "dark"):
            for width in (1280, 420) if scheme == "light" else (1280,):
                ctx = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme, device_scale_factor=1)
                blocked: list[str] = []

                def route(r, blocked=blocked):
                    if r.request.url.startswith("file://"):
                        r.continue_()
                    else:
                        blocked.append(r.request.url)
                        r.abort()

                ctx.route("**/*", route)
                for name, charts in EXPECT.items():
                    if width == 420 and name not in WITH_LIMIT + WITH_MONITOR and name not in ("report-locustfile.html", "report-mqtt.html", "compare.html", "report-thresholds.html"):
                        continue
                    if scheme == "dark" and name not in WITH_LIMIT + WITH_MONITOR and name not in ("report-bench-open.html", "report-mqtt.html", "compare.html", "report-thresholds.html"):
                        continue
                    page = ctx.new_page()
                    errors: list[str] = []
                    page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type in ("error", "warning") else None)
                    page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                    page.goto("file://" + os.path.join(PAGES, name))
                    page.wait_for_selector("body[data-ready='1']", timeout=10000)
                    page.wait_for_timeout(300)
                    points = page.evaluate(
                        "() => Object.fromEntries([...document.querySelectorAll('.chart')].map(c => [c.dataset.testid, +c.dataset.points]))"
                    )
                    canvases = page.evaluate("() => document.querySelectorAll('.chart canvas').length")
                    numbers = page.evaluate(
                        "() => Object.fromEntries([...document.querySelectorAll('.card [data-testid], .card .s [data-testid]')]"
                        ".map(e => [e.dataset.testid, [e.textContent, e.dataset.value]]))"
                    )
                    rows = page.evaluate(
                        "() => [...document.querySelectorAll('[data-testid=endpoint-row]')].map(r => [r.dataset.method, r.dataset.name])"
                    )
                    pwned = page.evaluate("() => document.body.dataset.pwned || ''")
                    problems = []
                    for c in charts:
                        if not points.get(c):
                            problems.append(f"{c}: {points.get(c)} points")
                    if canvases < len(charts):
                        problems.append(f"{canvases} canvases for {len(charts)} charts")
                    if name.endswith("nospectrum.html") and "chart-spectrum" in points:
                        problems.append("a spectrum chart without a spectrum")
                    if errors:
                        problems.append("console: " + " | ".join(errors))
                    if pwned:
                        problems.append("hostile markup ran")
                    if name == "report-hostile.html":
                        n = page.evaluate("() => document.querySelectorAll('main img, main script, main b').length")
                        if n:
                            problems.append(f"{n} elements made from data")
                    thr = page.evaluate(
                        "() => ({rows: [...document.querySelectorAll('[data-testid=threshold-row]')].map(r => [r.dataset.threshold, r.dataset.passed]),"
                        " badge: (document.querySelector('[data-testid=thresholds-badge]') || {}).textContent || '',"
                        " stop: (document.querySelector('[data-testid=stop-reason]') || {}).textContent || '',"
                        " tab: !![...document.querySelectorAll('nav.tabs a')].find(a => a.textContent === 'Thresholds' && !a.hidden),"
                        " compare: [...document.querySelectorAll('[data-testid=compare-thresholds]')].map(c => c.textContent)})"
                    )
                    if name == "report-thresholds.html":
                        want = [["p95<300ms", "true"], ["p99<1.5ms", "false"], ["error_rate<1%", "true"], ["rps>1000", "true"],
                                ["GET browse: max<5ms", "false"], ["/typo: p95<100ms", "false"]]
                        if thr["rows"] != want:
                            problems.append(f"threshold rows {thr['rows']}")
                        if thr["badge"] != "6 thresholds: 3 passed, 3 failed" or thr["stop"] != "stopped by a threshold" or not thr["tab"]:
                            problems.append(f"thresholds badge/stop/tab {thr}")
                    elif name == "compare.html":
                        if thr["compare"] != ["3 passed, 3 failedstopped by a threshold", "3 passed, 0 failed"]:
                            problems.append(f"compare thresholds {thr['compare']}")
                    elif name != "report-hostile.html" and (thr["rows"] or thr["badge"] or thr["tab"]):
                        problems.append(f"thresholds shown without any: {thr}")
                    lim = page.evaluate(
                        "() => { const q = (s) => document.querySelector(`[data-testid=${s}]`);"
                        " const l = q('limit-load'), hl = q('limit-headline'), c = q('chart-limit');"
                        " const rows = [...document.querySelectorAll('[data-testid=limit-step]')];"
                        " return {load: l ? [l.textContent, l.getAttribute('data-value')] : null, headline: hl ? hl.textContent : null,"
                        " points: c ? +c.dataset.points : null, rows: rows.length, probe: rows.length ? rows[0].dataset.probe : null,"
                        " first_tab: (document.querySelector('nav.tabs a:not([hidden])') || {}).textContent || '',"
                        " compare: [...document.querySelectorAll('[data-testid=compare-limit]')].map(c => c.textContent),"
                        " badge: (q('limit-badge') || {}).textContent || '', section: !!q('section-limit')} }"
                    )
                    want = LIMITS.get(name)
                    if want is None:
                        if lim["section"] or lim["load"] or "chart-limit" in points or lim["badge"]:
                            problems.append(f"a breaking point without a limit: {lim}")
                    elif "compare" in want:
                        if lim["compare"] != want["compare"] or not lim["section"]:
                            problems.append(f"compare limits {lim}")
                    else:
                        if lim["load"] != want["load"] or lim["headline"] != want["headline"] or lim["points"] != want["points"]:
                            problems.append(f"limit {lim}")
                        if lim["rows"] != want["rows"] or lim["probe"] != "true" or lim["first_tab"] != "Breaking point":
                            problems.append(f"limit table/tab {lim}")
                    mon = page.evaluate(
                        "() => { const q = (s) => document.querySelector(`[data-testid=${s}]`); const vis = (e) => !!e && !!e.offsetParent;"
                        " const c = q('chart-monitor-cpu'), m = q('chart-monitor-memory'), cc = q('chart-monitor-compare'), b = q('generator-badge');"
                        " return {section: vis(q('section-resources')), cpu: c ? +c.dataset.points : null, mem: m ? +m.dataset.points : null,"
                        " rows: [...document.querySelectorAll('[data-testid=monitor-row]')].map(r => r.dataset.label),"
                        " errors: document.querySelectorAll('[data-testid=monitor-error]').length,"
                        " banner: vis(q('generator-warning')), lines: [...document.querySelectorAll('[data-testid=generator-warning-line]')].map(l => l.textContent),"
                        " badge: vis(b) ? [b.textContent, b.dataset.state] : null,"
                        " threads: document.querySelectorAll('[data-testid=generator-thread]').length,"
                        " tab: !![...document.querySelectorAll('nav.tabs a')].find(a => a.textContent === 'Resources' && !a.hidden),"
                        " tabs: [...document.querySelectorAll('nav.tabs a:not([hidden])')].map(a => a.textContent),"
                        " compare: document.querySelectorAll('[data-testid=compare-monitor]').length, compare_points: cc ? +cc.dataset.points : null,"
                        " compare_generator: document.querySelectorAll('[data-testid=compare-generator]').length,"
                        " made: document.querySelectorAll('main img, main script').length} }"
                    )
                    want = MONITOR.get(name)
                    if want is None:
                        if mon["section"] or mon["cpu"] is not None or mon["banner"] or mon["tab"] or mon["compare"]:
                            problems.append(f"resources shown without a monitor: {mon}")
                    elif "compare" in want:
                        got = {k: mon[k] for k in ("compare", "compare_points", "compare_generator")}
                        if got != want:
                            problems.append(f"compare monitor {got}")
                    else:
                        if mon["cpu"] != want["points"] or mon["mem"] != want["points"] or mon["rows"] != want["rows"] or mon["errors"] != want["errors"]:
                            problems.append(f"resources {mon}")
                        if len(mon["lines"]) != want["warnings"] or mon["banner"] != bool(want["warnings"]) or not all(l.startswith(LEAD) for l in mon["lines"]):
                            problems.append(f"generator warnings {mon['lines']}")
                        if mon["badge"] != want["badge"] or mon["threads"] != want["threads"] or mon["tab"] != want["tab"]:
                            problems.append(f"generator badge/table/tab {mon}")
                        if want["warnings"] and not any(EVIL in l for l in mon["lines"]):
                            problems.append("the warning's markup did not show as text")
                        if mon["tabs"][mon["tabs"].index("Charts") + 1] != "Resources":
                            problems.append(f"the Resources tab is not after Charts: {mon['tabs']}")
                    if mon["made"]:
                        problems.append(f"{mon['made']} img/script elements made from data")
                    shot = os.path.join(SHOTS, f"{name[:-5]}-{scheme}-{width}.png")
                    page.screenshot(path=shot, full_page=True)
                    status = "ok" if not problems else "FAIL " + "; ".join(problems)
                    failures += bool(problems)
                    print(f"{name} [{scheme} {width}]: {status}\n  points {json.dumps(points)}\n  numbers {json.dumps(numbers)}\n  rows {rows}\n  -> {shot}")
                    page.close()
                if blocked:
                    failures += 1
                    print("FAIL: requests outside file://:", blocked)
                ctx.close()
        browser.close()
    print("blocked requests: none" if not failures else f"{failures} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
