"""The connections open over time (`connections` in each second of the result and the live stream; the
users chart's dashed line): the engine counts its TCP connections as they open and close, and a run's
loop reads the count a few times a second. Checked against the server's own count of the connections
it holds open (the demo target's /ws/stats) and against known math (keep-alive users hold one each)."""

import json
import time
import urllib.request

import pytest

from support import free_port, listening, squall, squall_process, wait_until

pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def target():
    port = free_port()
    proc = squall_process("demo", "--serve", "--port", port)
    try:
        wait_until(lambda: listening(port), "the demo target", proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def ws_stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ws/stats", timeout=5) as r:
        return json.loads(r.read())


def test_websocket_connections_open_are_the_servers(target, tmp_path):
    """25 WebSockets exchanging for 3 s: the server holds 25 open mid-run, and every second of the
    result says 25 (second 0 included: they open within milliseconds, and a second's count is the
    most seen in it)."""
    before = ws_stats(target)
    out = tmp_path / "r.json"
    proc = squall_process("bench", f"ws://127.0.0.1:{target}/ws?delay_ms=5", "-c", 25, "-t", "3s", "--json", out, "-q")
    try:
        time.sleep(1.5)
        mid = ws_stats(target)
    finally:
        assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    r = json.loads(out.read_text())
    assert mid["open"] - before["open"] == 25
    # The preflight's handshake (before the run: a wrong path is one line) and the run's 25, none twice.
    assert ws_stats(target)["opened"] - before["opened"] == 26
    assert [s["connections"] for s in r["timeseries"]][:3] == [25, 25, 25], r["timeseries"]


def test_keepalive_users_hold_a_connection_each(target, tmp_path):
    """A locustfile of 4 users, each making requests on its keep-alive connection (HttpUser): 4 open
    once they have all started."""
    locustfile = tmp_path / "f.py"
    locustfile.write_text(
        "from locust import HttpUser, constant, task\n\n\n"
        "class U(HttpUser):\n"
        "    wait_time = constant(0.05)\n\n"
        "    @task\n"
        "    def slow(self):\n"
        "        self.client.get('/slow?ms=20')\n"
    )
    out = tmp_path / "r.json"
    args = ("-H", f"http://127.0.0.1:{target}", "--headless", "-u", 4, "-r", 100, "-t", "3s")
    p = squall("-f", locustfile, *args, "--result-json", out)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(out.read_text())
    conns = [s["connections"] for s in r["timeseries"]]
    assert conns[1] == 4 and max(conns) == 4, conns
