"""`squall import har` against ground truth.

A real browser recording: Chromium (through Playwright) opens the page of tests/servers/har_app.py,
whose script logs in (a bearer token in JSON, a double-submit cookie), lists the items (a cursor in a
header), fetches one picked from the list and orders it with the CSRF value of the page's hidden form
field. The server is then restarted: new tokens, CSRF value, cursor and ids. The file imported from
the recording is run by squall and by Locust against the new server, which counts what it received
per route and status: every step of the journey must answer 2xx (a replayed value would be 401, 403,
404 or 422), and the static files and the other host must not be requested at all.

Then hand-written HARs in the shapes Chrome and Firefox write (their timings, postData as `params` or
`text`, base64 response bodies, `_resourceType`, time zones) import into files that parse and lint;
and bad input is refused in one line."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import HERE, free_port, squall, squall_get, wait_until

FIXTURES = HERE / "fixtures" / "har"
BIN = Path(sys.executable).parent
RUFF = str(BIN / "ruff") if (BIN / "ruff").exists() else shutil.which("ruff")
RUN = ["--headless", "-u", "2", "-r", "10", "-t", "4s"]
JOURNEY = {
    ("GET", "/app"),
    ("POST", "/api/login"),
    ("GET", "/api/items"),
    ("GET", "/api/items/{item_id}"),
    ("POST", "/api/items/{item_id}/orders"),
}


class App:
    """tests/servers/har_app.py in a process of its own, on a free port."""

    def __init__(self):
        for _ in range(3):
            self.port = free_port()
            command = [BIN / "uvicorn", "--app-dir", HERE / "servers", "har_app:app", "--port", str(self.port)]
            self.proc = subprocess.Popen(
                [*command, "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            self.url = f"http://127.0.0.1:{self.port}"
            try:
                wait_until(self._serves, "the FastAPI app", proc=self.proc, timeout=30)
                return
            except AssertionError:
                self.stop()
        pytest.fail("the FastAPI app did not start")

    def _serves(self):
        try:
            squall_get(self.url + "/__counts")
            return True
        except OSError:
            return False

    def counts(self):
        return {(m, p, s): n for m, p, s, n in json.loads(squall_get(self.url + "/__counts"))}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def recording(browser, tmp_path_factory):
    """A HAR Chromium recorded of the journey, on a server that is gone once it is made."""
    har = tmp_path_factory.mktemp("har") / "journey.har"
    app = App()
    try:
        context = browser.new_context(record_har_path=str(har), record_har_content="embed")
        page = context.new_page()
        page.goto(app.url + "/app")
        page.wait_for_selector("body[data-done]", timeout=20000)
        assert page.evaluate("document.body.dataset.done") == "201"
        context.close()  # writes the HAR
        recorded = app.counts()
    finally:
        app.stop()
    assert {(m, p) for m, p, s in recorded if 200 <= s < 300} >= JOURNEY, recorded
    return har


@pytest.fixture
def fresh_app():
    """The same app restarted: new secrets, new ids, another port."""
    app = App()
    yield app
    app.stop()


def well_formed(path):
    text = Path(path).read_text()
    ast.parse(text)
    assert RUFF, "ruff is missing (requirements/dev.txt pins it)"
    lint = subprocess.run([RUFF, "check", "--isolated", path], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    layout = subprocess.run([RUFF, "format", "--isolated", "--diff", path], capture_output=True, text=True)
    assert layout.returncode == 0, layout.stdout + layout.stderr
    return text


def judge(before, after):
    got = {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}
    wrong = {k: n for k, n in got.items() if not 200 <= k[2] < 300}
    assert not wrong, wrong
    assert {(m, p) for m, p, _ in got} == JOURNEY, got  # no static file, no other host
    counts = [got[k] for k in got]
    assert min(counts) >= 2, got  # the journey ran more than once


@pytest.mark.slow
def test_the_recorded_journey_runs_against_a_restarted_server_with_squall(recording, fresh_app, tmp_path):
    gen = tmp_path / "journey.py"
    p = squall("import", "har", recording, "-o", gen, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("squall import har: 9 requests: 0 tasks, 5 in 1 flow, 4 left out"), p.stderr
    text = well_formed(gen)
    assert "class Journey(SequentialTaskSet):" in text and "time.sleep(" in text
    assert 'self.csrf_token = _hidden(response, "csrf_token")' in text
    assert 'self.token = _json(response, "token")' in text and '"Authorization": f"Bearer {self.token}"' in text
    assert 'self.xsrf = self.client.cookies.get("xsrf")' in text
    assert 'params={"cursor": self.x_page_cursor}' in text
    assert 'name="/api/items/{item_id}/orders"' in text and 'json={"item_id": self.item_id, "quantity": 2}' in text
    assert '"User-Agent"' not in text and "sec-ch-ua" not in text and '"Cookie"' not in text
    before = fresh_app.counts()
    run = squall("-f", gen, *RUN, "-H", fresh_app.url, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    judge(before, fresh_app.counts())


@pytest.mark.slow
def test_the_recorded_journey_runs_against_a_restarted_server_with_locust(recording, fresh_app, tmp_path):
    gen = tmp_path / "journey.py"
    assert squall("import", "har", recording, "-o", gen, timeout=60).returncode == 0
    before = fresh_app.counts()
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", gen, *RUN, "-H", fresh_app.url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    judge(before, fresh_app.counts())


@pytest.mark.slow
def test_static_files_and_other_hosts_are_kept_when_asked(recording, tmp_path):
    p = squall("import", "har", recording, "--keep-static", "--keep-hosts", "--dry-run", timeout=60)
    assert p.returncode == 0, p.stderr
    assert "9 requests: 0 tasks, 9 in 1 flow, 0 left out" in p.stderr, p.stderr
    assert '"/static/logo.png"' in p.stdout and '"http://localhost:' in p.stdout
