"""Locust's web-UI workflow on squall's dashboard, in a real browser against a recording server (issue 24,
section 2): Start (refused without a host), Edit, Stop, the downloads, New, and the numbers of each test
checked against what the server received between its Start and its Stop."""

import csv
import io
import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from support import free_port, serving, wait_for_port, wait_until
from test_web import FILES, SHOTS, number, open_page, points, shot
from web_client import control

pytestmark = pytest.mark.slow

IDLE_S = 5.0  # the page is open this long before Start: none of it may count as test time


def api(port, path, body=None):
    if body is not None:  # a control, as the page sends it (its JSON type and the run's token)
        return control(port, path.removeprefix("/api/"), body)[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
        return json.loads(resp.read())


def received(port, since=0.0):
    """The recording server's requests (time of arrival, path), in order, from `since` on."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__log", timeout=10) as r:
        return [(x["t"], x["path"]) for x in json.loads(r.read()) if x["t"] >= since]


def hook(page, name):
    return page.locator(f"[data-testid='{name}']").first


def download(page, name):
    """Clicks a download link; returns the file's text."""
    with page.expect_download() as d:
        hook(page, name).click()
    return open(d.value.path(), encoding="utf-8").read()


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def check_against_the_server(result, seen, clicked_start):
    """A test's duration and rate are the server's between Start and Stop. The first user starts at once
    (its first request within milliseconds of the Start), and the run ends within its 0.1 s loop of the
    Stop, after the last request (a user sends one every 50 ms): so the test's span holds the server's
    first-to-last window with at most a few tenths of a second to spare (and a request in flight at the
    Stop stamped by the server's thread after it), where counting the IDLE_S before
    the Start (the bug) adds 5 s to a test of 5-8 s."""
    assert result["start_unix"] >= clicked_start - 0.05, "the test started before its Start"
    first, last = seen[0][0], seen[-1][0]
    end = result["start_unix"] + result["duration_s"]
    assert 0 <= first - result["start_unix"] < 0.3, (first, result["start_unix"])
    # The server stamps a request once its thread has read it: one sent just before the end, in flight when
    # the run stopped, may be stamped after it on a loaded machine (seen in a parallel run of the suite).
    assert -0.2 <= end - last < 0.6, (end, last)
    window = last - first
    # What the server received is what the result counts, plus requests cancelled in flight at the end.
    n = len(seen)
    assert result["aggregate"]["requests"] <= n <= result["aggregate"]["requests"] + result["abandoned"]
    # The rate over the test's span against the server's over its window: within the 0.9 s the span may
    # exceed it (8 to 15% of these tests, far from the 40 to 50% of the idle time counted).
    rate, server_rate = result["aggregate"]["requests"] / result["duration_s"], n / window
    assert server_rate * (1 - 0.9 / window) - 1 <= rate <= server_rate + 1, (rate, server_rate)
    # The seconds start at the Start: the first one already has requests (no idle zeros before the ramp).
    assert result["timeseries"][0]["t"] == 0 and result["timeseries"][0]["requests"] > 0


def test_locusts_web_ui_workflow_start_edit_stop_new_and_downloads(browser, tmp_path):
    with serving("recorder.py") as target_port:
        host = f"http://127.0.0.1:{target_port}"
        port, prefix, log = free_port(), tmp_path / "out", tmp_path / "stderr.log"
        # stderr to a file: the task's exceptions log a traceback each (tens a second), which would fill a
        # pipe nobody reads until the end and stop the run at its next log line.
        command = ["-f", FILES / "webui.py", "--web-port", port, "--csv", prefix, "-u", 2, "-r", 20]
        proc = subprocess.Popen(
            [sys.executable, "-m", "squall", *map(str, command)], stdout=subprocess.DEVNULL, stderr=open(log, "w")
        )
        try:
            wait_for_port(port)
            page = open_page(browser, f"http://127.0.0.1:{port}/")
            assert hook(page, "state").inner_text().strip() == "ready"
            assert hook(page, "fact-command").inner_text().startswith("squall -f ")  # as typed, no `run`
            shot(page, "workflow-01-form")

            # Start without a host: the form refuses it (so does the server), nothing is sent.
            assert "Steady has no host" in hook(page, "host-required").inner_text()
            hook(page, "start-button").click()
            assert page.locator("[data-testid='start-host']:invalid").count() == 1
            refused = api(port, "/api/start", {"users": 2, "spawn_rate": 20})
            assert refused["ok"] is False and "Steady has no host" in refused["error"]
            time.sleep(IDLE_S)  # the page waits for its Start, as a user reads it
            assert received(target_port) == [] and api(port, "/api/live?cursor=0")["state"] == "ready"
            shot(page, "workflow-02-no-host-refused")

            # Start: 2 users at 20 a second.
            page.fill("[data-testid='start-host']", host)
            clicked_start = time.time()
            hook(page, "start-button").click()
            wait_until(lambda: api(port, "/api/live?cursor=0")["users"] == 2, "2 users", proc)

            # Edit shows the running test's numbers (the spawn rate too, not the default 1), and 10 more
            # users at 20 a second take half a second (at 1 a second they would take 9).
            hook(page, "edit-users-button").click()
            assert page.input_value("[data-testid='edit-users']") == "2"
            assert float(page.input_value("[data-testid='edit-rate']")) == 20
            shot(page, "workflow-03-edit")
            page.fill("[data-testid='edit-users']", "12")
            applied = time.monotonic()
            hook(page, "edit-submit").click()
            wait_until(lambda: api(port, "/api/live?cursor=0")["users"] == 12, "12 users", proc)
            assert time.monotonic() - applied < 3.0
            wait_until(lambda: points(page, "rps") >= 5, "five seconds drawn", proc)

            # The header: host, status, users, and the current RPS, which is Locust's: the mean of the last
            # 10 seconds published, here against what the server received in those same seconds.
            assert hook(page, "header-host").inner_text() == host
            assert hook(page, "state").inner_text().strip() == "running"
            wait_until(lambda: hook(page, "header-users").get_attribute("data-value") == "12", "12 in the header")

            snap = {}

            def same_seconds():  # the page's reading and the API's, of the same seconds
                shown = float(hook(page, "header-rps").get_attribute("data-value"))
                seconds = api(port, "/api/live?cursor=0")["timeseries"][-10:]
                mean = sum(s["requests"] for s in seconds) / len(seconds)
                snap.update(shown=shown, seconds=seconds)
                return abs(shown - mean) < 0.0011  # the page keeps 3 decimals

            wait_until(same_seconds, "the header's RPS over the seconds published", proc)
            shown, seconds = snap["shown"], snap["seconds"]
            lo, hi = seconds[0]["unix"], seconds[-1]["unix"] + 1
            counted = sum(1 for t, _ in received(target_port) if lo <= t < hi)
            # A request is counted in the second it completed and received in the second it arrived: they
            # differ only for those within a response time (~1 ms) of a second's edge.
            assert abs(counted - shown * len(seconds)) <= 0.03 * counted + 5, (counted, shown, len(seconds))
            assert hook(page, "rps").get_attribute("data-value") == hook(page, "header-rps").get_attribute(
                "data-value"
            )  # the card and the header agree
            fail_pct = float(hook(page, "header-fail-pct").get_attribute("data-value"))
            assert 0 < fail_pct < 100

            # Current ratio (Locust's get_ratio) and the logs.
            ratios = {
                r.get_attribute("data-name"): float(r.get_attribute("data-ratio"))
                for r in page.locator("[data-testid='ratio-per-class'] [data-testid='ratio-row']").all()
            }
            assert ratios == {"Steady": 1.0, "index": 0.6, "broken": 0.2, "raises": 0.2}
            ramping = "Ramping to 12 users at a rate of 20.00 per second"
            wait_until(lambda: ramping in hook(page, "log-lines").inner_text(), "the log line")
            shot(page, "workflow-04-running")
            hook(page, "section-ratio").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "workflow-05-ratio-and-logs.png"))  # the view: the header stays

            # Stop: the result is the test's, from its Start to its Stop.
            hook(page, "stop-button").click()
            page.wait_for_selector("body[data-finished='1']", timeout=30_000)
            clicked_stop = time.time()
            result = json.loads(download(page, "download-json"))
            seen = received(target_port)
            assert seen[-1][0] < clicked_stop
            check_against_the_server(result, seen, clicked_start)
            assert result["stop_reason"] == "interrupted"  # stopped by hand, not "completed"
            assert hook(page, "stop-reason").inner_text() == "interrupted"
            started = time.strftime("%H:%M:%S", time.gmtime(result["start_unix"]))
            assert started in hook(page, "fact-start").inner_text()  # the Start, not the process's start
            assert points(page, "rps") == len(result["timeseries"])
            assert number(page, "total-requests") == result["aggregate"]["requests"]
            rate = float(hook(page, "rps").get_attribute("data-value"))
            assert rate == pytest.approx(result["aggregate"]["requests"] / result["duration_s"], abs=0.001)
            assert float(hook(page, "header-rps").get_attribute("data-value")) == rate
            page.mouse.wheel(0, -100_000)  # back to the top: the sticky header where it belongs in the shot
            page.wait_for_timeout(500)  # the wheel does not wait for the scroll
            shot(page, "workflow-06-stopped")

            # The failures as Locust writes them, on the page and in its CSV; the exceptions CSV.
            bad = sum(1 for _, path in seen if path == "/status/500")
            locust_text = "HTTPError('500 Server Error: Internal Server Error for url: /status/500')"
            assert hook(page, "error-message").inner_text() == locust_text
            texts = {n: download(page, n) for n in ("download-csv", "download-failures-csv", "download-exceptions-csv")}
            failures = csv_rows(texts["download-failures-csv"])
            assert [(f["Name"], f["Error"]) for f in failures] == [("/status/500", locust_text)]
            assert int(failures[0]["Occurrences"]) <= bad <= int(failures[0]["Occurrences"]) + result["abandoned"]
            exceptions = csv_rows(texts["download-exceptions-csv"])
            assert [x["Message"] for x in exceptions] == ["a task that breaks"]
            assert int(exceptions[0]["Count"]) == sum(x["count"] for x in result["exceptions"]) > 0
            stats = {r["Name"]: r for r in csv_rows(texts["download-csv"])}
            assert int(stats["Aggregated"]["Request Count"]) == result["aggregate"]["requests"]
            rps = float(stats["Aggregated"]["Requests/s"])
            assert rps == pytest.approx(result["aggregate"]["requests"] / result["duration_s"], rel=1e-6)
            report = tmp_path / "report.html"
            report.write_text(download(page, "download-html"))
            offline = open_page(browser, report.as_uri(), offline=True)
            assert number(offline, "total-requests") == result["aggregate"]["requests"]
            assert offline.blocked == [] and offline.console_errors == []
            # The report's own CSV downloads are the dashboard's, byte for byte (one writer: locust_csv).
            assert {n: download(offline, n) for n in texts} == texts
            shot(offline, "workflow-07-report")
            offline.close()

            # New: another test in the same process, the form filled with the last one's numbers.
            hook(page, "new-button").click()
            assert page.input_value("[data-testid='start-users']") == "12"
            assert float(page.input_value("[data-testid='start-rate']")) == 20
            assert page.input_value("[data-testid='start-host']") == host
            shot(page, "workflow-08-new")
            page.fill("[data-testid='start-users']", "3")
            urllib.request.urlopen(urllib.request.Request(host + "/__reset", method="POST"), timeout=10).read()
            clicked_start = time.time()
            hook(page, "start-button").click()
            wait_until(lambda: page.locator("body[data-finished='1']").count() == 0, "the new test's page", proc)
            wait_until(lambda: api(port, "/api/live?cursor=0")["users"] == 3, "3 users", proc)
            wait_until(lambda: points(page, "rps") >= 3, "the new test's seconds", proc)
            live = api(port, "/api/live?cursor=0")
            assert live["test"] == 2 and live["timeseries"][0]["t"] == 0
            # Fresh statistics: the new test's, not added to the first one's.
            assert 0 < number(page, "total-requests") < result["aggregate"]["requests"]
            shot(page, "workflow-09-second-test")
            hook(page, "stop-button").click()
            page.wait_for_selector("body[data-finished='1']", timeout=30_000)
            second = json.loads(download(page, "download-json"))
            check_against_the_server(second, received(target_port), clicked_start)
            assert max(s["users"] for s in second["timeseries"]) == 3
            page.mouse.wheel(0, -100_000)  # back to the top: the sticky header where it belongs in the shot
            page.wait_for_timeout(500)  # the wheel does not wait for the scroll
            shot(page, "workflow-10-second-stopped")
            assert page.console_errors == []
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
            stderr = log.read_text()
        # Ctrl-C ends the process as Locust's does after its web UI's tests: the exit code of the last
        # test (failures: 1), its files (--csv) those of the last test.
        assert proc.returncode == 1, stderr[-3000:]
        # The only tracebacks are the task's, logged as Locust logs them: none of squall's own.
        assert stderr.count("Traceback (most recent call last):") == stderr.count("ValueError: a task that breaks")
        rows = {r["Name"]: r for r in csv.DictReader(open(f"{prefix}_stats.csv"))}
        assert int(rows["Aggregated"]["Request Count"]) == second["aggregate"]["requests"]
