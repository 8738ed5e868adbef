"""The dashboard cannot be driven by a page the user visits (issue 26): another origin's requests, a foreign
Host (DNS rebinding) and control values the command line refuses are all turned away, with a one-line
answer, and nothing starts. Ground truth: the target's own count (nginx's access log) and the run's own
`/api/live`; the attacks run in a real browser (Chromium) from a page on another loopback port."""

import http.client
import signal
import subprocess
import sys
import time

import pytest

from support import free_port, squall, squall_process, wait_for_port, wait_until
from test_web import FILES, open_page, shot
from web_client import control, live

# The page another origin serves: it tries to start (or stop) the dashboard's test by every request a page
# can send without the dashboard's consent: fetch in no-cors mode with a text/plain JSON body (the issue's),
# with a form body, with a JSON Blob, a CORS fetch with a JSON content type (which needs a preflight), and a
# form posting a text/plain body shaped as JSON into a frame. Against 127.0.0.1 (cross-site) and localhost
# (same-site: another port of the same host). It shows and records what each attempt got.
ATTACK = """<!doctype html><html><head><title>a page the user visits</title></head><body>
<h1>A page on another origin</h1><pre id="log"></pre><iframe name="sink" width="600" height="80"></iframe>
<script>
const action = new URLSearchParams(location.search).get("action") || "start";
const body = JSON.stringify(action === "start" ? {users: 1, spawn_rate: 1, host: "NGINX"} : {});
const targets = ["http://127.0.0.1:PORT", "http://localhost:PORT"];
const log = (s) => { document.getElementById("log").textContent += s + "\\n"; };
async function attack() {
  for (const t of targets) {
    const tries = [
      ["no-cors text/plain", {method: "POST", mode: "no-cors", body}],
      ["no-cors form", {method: "POST", mode: "no-cors", body: new URLSearchParams({users: "1", spawn_rate: "1"})}],
      ["no-cors json blob", {method: "POST", mode: "no-cors", body: new Blob([body], {type: "application/json"})}],
      ["cors json", {method: "POST", headers: {"Content-Type": "application/json"}, body}],
    ];
    for (const [what, init] of tries) {
      try { const r = await fetch(t + "/api/" + action, init); log(t + " " + what + ": " + r.type + " " + r.status); }
      catch (e) { log(t + " " + what + ": refused (" + e + ")"); }
    }
    const f = document.createElement("form");
    f.method = "POST"; f.action = t + "/api/" + action; f.enctype = "text/plain"; f.target = "sink";
    const i = document.createElement("input");
    i.type = "hidden"; i.name = body.slice(0, -1) + ', "x": "'; i.value = '"}';
    f.appendChild(i); document.body.appendChild(f);
    await new Promise((done) => {
      document.querySelector("iframe").onload = done; f.submit(); setTimeout(done, 3000);
    });
    log(t + " form text/plain: submitted");
  }
  document.body.dataset.done = "1";
}
attack();
</script></body></html>
"""


@pytest.fixture
def attacker(tmp_path):
    """A tiny http.server on another loopback port, serving ATTACK (in a process: threads left in pytest's
    process deadlock a later import of gevent); yields a function that writes the page for a dashboard."""
    port, root = free_port(), tmp_path / "attacker"
    root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)

        def page_for(dashboard_port, nginx_url):
            (root / "index.html").write_text(ATTACK.replace("PORT", str(dashboard_port)).replace("NGINX", nginx_url))
            return f"http://localhost:{port}/"

        yield page_for
    finally:
        proc.kill()
        proc.wait()


def run_attack(browser, url, action, name):
    page = browser.new_page(viewport={"width": 900, "height": 700})
    page.goto(f"{url}?action={action}")
    page.wait_for_selector("body[data-done='1']", timeout=60_000)
    shot(page, name)
    tried = page.inner_text("#log")
    page.close()
    return tried


@pytest.mark.slow
def test_a_page_on_another_origin_can_neither_start_nor_stop_a_test(nginx, browser, attacker, tmp_path):
    nginx.reset_log()
    port, err = free_port(), tmp_path / "stderr"
    with err.open("w") as stderr:
        proc = squall_process(
            "-f", FILES / "dashboard.py", "-H", nginx.url, "--web-port", port, "--only-summary", "-t", "30s",
            "--autoquit", 0, stderr=stderr,
        )  # fmt: skip
    try:
        wait_for_port(port)
        url = attacker(port, nginx.url)
        # Start: every request the other origin can send, then what the target and the run say.
        tried = run_attack(browser, url, "start", "safety-01-attacker-start")
        assert tried.count("\n") == 10, tried  # 2 targets x (4 fetches + the form): each one was tried
        time.sleep(1.5)  # a start taken would have its first request within milliseconds
        assert nginx.requests_logged() == 0, tried
        state = live(port)
        assert (state["state"], state["test"], state["startable"]) == ("ready", 0, True), tried

        # Its own page still starts a test (it sends what the server requires) ...
        page = open_page(browser, f"http://127.0.0.1:{port}/")
        page.fill("[data-testid='start-users']", "1")
        page.fill("[data-testid='start-rate']", "10")
        page.click("[data-testid='start-button']")
        wait_until(lambda: live(port)["users"] == 1, "1 user", proc)
        # ... which the other origin cannot stop.
        tried = run_attack(browser, url, "stop", "safety-02-attacker-stop")
        before = nginx.requests_logged()
        time.sleep(1.5)
        state = live(port)
        assert (state["state"], state["test"], state["users"]) == ("running", 1, 1), tried
        assert nginx.requests_logged() > before  # the test goes on
        shot(page, "safety-03-dashboard-still-running")
        # Its own page stops it.
        page.click("[data-testid='stop-button']")
        proc.wait(timeout=60)
        assert proc.returncode == 0, err.read_text()[-2000:]
        assert page.console_errors == []
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    assert "Traceback" not in err.read_text()


def raw(port, method, path, headers, body=None):
    """(status, body) of one request with exactly these headers (Host among them, as given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


@pytest.mark.slow
def test_the_controls_refuse_what_a_browser_sends_for_another_origin(nginx):
    """Each layer on its own: a cross-origin Origin, Sec-Fetch-Site other than same-origin (another port of
    localhost is same-site), a body that is not declared JSON, a missing or wrong token: each refused, and
    nothing starts; the request the page sends is taken."""
    nginx.reset_log()
    port = free_port()
    proc = squall_process(
        "-f", FILES / "dashboard.py", "-H", nginx.url, "--web-port", port, "--only-summary", "-t", "3s",
        "--autoquit", 0,
    )  # fmt: skip
    try:
        wait_for_port(port)
        start = {"users": 1, "spawn_rate": 1}
        refused = [
            ({"Origin": "http://localhost:1"}, 403),
            ({"Origin": "null"}, 403),
            ({"Origin": f"http://127.0.0.1:{port}.evil.test"}, 403),
            ({"Sec-Fetch-Site": "same-site"}, 403),
            ({"Sec-Fetch-Site": "cross-site"}, 403),
            ({"Content-Type": "text/plain"}, 415),
            ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
            ({"Content-Type": None}, 415),
            ({"X-Squall-Token": None}, 403),
            ({"X-Squall-Token": "not-the-token"}, 403),
        ]
        for headers, status in refused:
            code, answer = control(port, "start", start, **headers)
            assert (code, answer["ok"]) == (status, False), (headers, code, answer)
            assert answer["error"] and "\n" not in answer["error"]
        time.sleep(1.0)
        assert nginx.requests_logged() == 0 and live(port)["test"] == 0
        # The page's own request (same origin, JSON, the token) starts the test.
        own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
        code, answer = control(port, "start", start, **own)
        assert (code, answer) == (200, {"ok": True})
        proc.wait(timeout=60)
        assert nginx.requests_logged() > 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_dashboard_answers_only_its_own_host_names(nginx, browser, tmp_path):
    """DNS rebinding: a page of evil.test whose name comes to resolve to 127.0.0.1 sends `Host: evil.test`.
    Bound to loopback, the dashboard answers only localhost and IP addresses (a rebinding page's Host is a
    name); bound beyond it (--web-host), every name, since it is reached by names it cannot list (and its
    controls need --web-auth there)."""
    nginx.reset_log()
    port = free_port()
    proc = squall_process(
        "-f", FILES / "dashboard.py", "-H", nginx.url, "--web-port", port, "--only-summary", "-t", "3s",
        "--autoquit", 0,
    )  # fmt: skip
    try:
        wait_for_port(port)
        for host in ("evil.test", f"evil.test:{port}", f"localhost.evil.test:{port}", "127.0.0.1.nip.io"):
            for path in ("/", "/api/live", "/metrics", "/download/result.json"):
                status, text = raw(port, "GET", path, {"Host": host})
                assert status == 403 and text.count("\n") == 1 and host in text, (host, path, status, text)
            status, text = raw(port, "POST", "/api/stop", {"Host": host, "Content-Type": "application/json"}, b"{}")
            assert status == 403, (host, status, text)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}", "127.0.0.1"):
            assert raw(port, "GET", "/api/live", {"Host": host})[0] == 200, host
        assert raw(port, "GET", "/api/live", {"Host": "evil.test", "X": "y"})[0] == 403
        # Chromium resolving evil.test to 127.0.0.1, as a rebinding page's browser does.
        rebinding = browser.browser_type.launch(
            executable_path=browser_path(), args=["--no-sandbox", "--host-resolver-rules=MAP evil.test 127.0.0.1"]
        )
        try:
            page = rebinding.new_page()
            resp = page.goto(f"http://evil.test:{port}/api/live")
            assert resp.status == 403, resp.status
            shot(page, "safety-04-rebinding-refused")
            resp = page.goto(f"http://localhost:{port}/")
            assert resp.status == 200
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        finally:
            rebinding.close()
        assert live(port)["test"] == 0 and nginx.requests_logged() == 0
    finally:
        proc.kill()
        proc.wait()
    # Beyond loopback: Prometheus scrapes it by whatever name reaches it.
    port = free_port()
    proc = squall_process(
        "bench", nginx.url + "/", "-c", 1, "--rate", 10, "-t", "2s", "--web-port", port, "--web-host", "0.0.0.0",
        "-q", "--autoquit", 5,
    )  # fmt: skip
    try:
        wait_for_port(port)
        status, text = raw(port, "GET", "/metrics", {"Host": f"loadgen-7.cluster.example:{port}"})
        assert status == 200 and "squall_" in text
        json_type = {"Host": "evil.test", "Content-Type": "application/json"}
        assert raw(port, "POST", "/api/stop", json_type, b"{}")[0] == 403  # disabled without --web-auth
    finally:
        proc.kill()
        proc.wait()


def browser_path():
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


def cli_error(nginx, *args):
    """The one-line error of `squall -f ... ARGS` (exit 2), without its `squall run: error: ` prefix."""
    p = squall("-f", FILES / "dashboard.py", "-H", nginx.url, "--headless", "-t", "1s", "--only-summary", *args)
    lines = [line for line in p.stderr.splitlines() if "error: " in line]
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, (args, p.returncode, p.stderr)
    return lines[0].split("error: ", 1)[1]


@pytest.mark.slow
def test_the_pages_controls_get_the_command_lines_validation(nginx, tmp_path):
    """`{"users": 1e999}` got no answer (an OverflowError traceback), `{"spawn_rate": NaN}` ramped at nan,
    `{"users": 10000000}` was taken where `-u 10000000` is refused. Each is a 400 with the command line's own
    message, and nothing starts; Edit gets the same checks; the run still ends on Ctrl-C."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 10_000_064:
        pytest.skip("the open-file hard limit allows 10,000,000 users")
    nginx.reset_log()
    cases = [  # (the body the page sends, the command line's -u and -r)
        (b'{"users": 1e999, "spawn_rate": 1}', ("1e999", "1")),
        (b'{"users": 1, "spawn_rate": NaN}', ("1", "NaN")),
        (b'{"users": 1, "spawn_rate": Infinity}', ("1", "Infinity")),
        (b'{"users": 10000000, "spawn_rate": 1}', ("10000000", "1")),
        (b'{"users": -1, "spawn_rate": 1}', ("-1", "1")),
        (b'{"users": 0, "spawn_rate": 1}', ("0", "1")),
        (b'{"users": 2.5, "spawn_rate": 1}', ("2.5", "1")),
        (b'{"users": "many", "spawn_rate": 1}', ("many", "1")),
        (b'{"users": 1, "spawn_rate": 0}', ("1", "0")),
    ]
    expected = {body: cli_error(nginx, "-u", u, "-r", r) for body, (u, r) in cases}
    expected[b'{"users": 1, "spawn_rate": 1, "host": "ftp://x"}'] = cli_error(nginx, "-u", 1, "-H", "ftp://x")
    port, err = free_port(), tmp_path / "stderr"
    with err.open("w") as stderr:
        proc = squall_process(
            "-f", FILES / "dashboard.py", "-H", nginx.url, "--web-port", port, "--only-summary", "-t", "30s",
            stderr=stderr,
        )  # fmt: skip
    try:
        wait_for_port(port)
        for body, message in expected.items():
            assert control(port, "start", body) == (400, {"ok": False, "error": message}), body
        time.sleep(1.0)
        assert nginx.requests_logged() == 0 and live(port)["state"] == "ready" and live(port)["test"] == 0
        # Edit, while a test runs: the same checks (0 users is an Edit's to ask).
        assert control(port, "start", {"users": 1, "spawn_rate": 10}) == (200, {"ok": True})
        wait_until(lambda: live(port)["users"] == 1, "1 user", proc)
        for body, message in expected.items():
            if b"ftp" in body or b'"users": 0,' in body:
                continue
            assert control(port, "users", body) == (400, {"ok": False, "error": message}), body
        time.sleep(1.0)
        state = live(port)
        assert (state["users"], state["target_users"], state["spawn_rate"]) == (1, 1, 10)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)  # Ctrl-C ends it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err.read_text(), err.read_text()[-3000:]
    assert "rate of nan" not in err.read_text()
