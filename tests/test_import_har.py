"""`squall import har` against ground truth.

A real browser recording: Chromium (through Playwright) opens the page of tests/servers/har_app.py,
whose script logs in (a bearer token in JSON, a double-submit cookie), lists the items (a cursor in a
header), fetches one picked from the list, orders it with the CSRF value of the page's hidden form
field, then submits the page's form (a urlencoded body with that CSRF value and the id) and follows
its 303 to a receipt page. The server is then restarted: new tokens, CSRF value, cursor, ids and
receipts. The file imported from the recording is run by squall and by Locust against the new server,
which counts what it received per route and status: every step of the journey must answer 2xx (a
replayed value would be 401, 403, 404 or 422), the receipt be fetched once per checkout (the client
follows the redirect), and the static files and the other host must not be requested at all.

Then hand-written HARs in the shapes Chrome and Firefox write (their timings, postData as `params` or
`text`, base64 response bodies, `_resourceType`, time zones) import into files that parse and lint;
and bad input is refused in one line."""

import csv
import json
import subprocess
import sys
import time

import pytest

from support import HERE, CountingApp, one_line_error, squall, well_formed

FIXTURES = HERE / "fixtures" / "har"
RUN = ["--headless", "-u", "2", "-r", "10", "-t", "4s"]
JOURNEY = {
    ("GET", "/app"),
    ("POST", "/api/login"),
    ("GET", "/api/items"),
    ("GET", "/api/items/{item_id}"),
    ("POST", "/api/items/{item_id}/orders"),
    ("POST", "/checkout"),
    ("GET", "/receipts/{receipt}"),
}


@pytest.fixture(scope="module")
def recording(browser, tmp_path_factory):
    """A HAR Chromium recorded of the journey, on a server that is gone once it is made."""
    har = tmp_path_factory.mktemp("har") / "journey.har"
    app = CountingApp("har_app")
    try:
        context = browser.new_context(record_har_path=str(har), record_har_content="embed")
        page = context.new_page()
        page.goto(app.url + "/app")
        page.wait_for_url("**/receipts/*", timeout=20000)  # the journey's last step, the form's redirect
        page.wait_for_selector("body[data-done]", timeout=20000)
        context.close()  # writes the HAR
        recorded = app.counts()
    finally:
        app.stop()
    assert {(m, p) for m, p, s in recorded if 200 <= s < 400} >= JOURNEY, recorded
    return har


@pytest.fixture
def fresh_app():
    """The same app restarted: new secrets, new ids, another port."""
    app = CountingApp("har_app")
    yield app
    app.stop()


def judge(before, after):
    """Every step 2xx (the checkout's 303 is its success), the receipt fetched once per checkout (the
    client followed the redirect; the file did not request it again), no static file, no other host."""
    got = {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}
    wrong = {k: n for k, n in got.items() if not (200 <= k[2] < 300 or k == ("POST", "/checkout", 303))}
    assert not wrong, wrong
    assert {(m, p) for m, p, _ in got} == JOURNEY, got
    assert got[("GET", "/receipts/{receipt}", 200)] == got[("POST", "/checkout", 303)], got
    assert min(got.values()) >= 2, got  # the journey ran more than once


@pytest.mark.slow
def test_the_recorded_journey_runs_against_a_restarted_server_with_squall(recording, fresh_app, tmp_path):
    gen = tmp_path / "journey.py"
    p = squall("import", "har", recording, "-o", gen, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("squall import har: 11 requests: 0 tasks, 6 in 1 flow, 5 left out"), p.stderr
    assert "receipts/" in p.stderr and "the client follows the redirect of POST /checkout to it" in p.stderr
    text = well_formed(gen)
    assert "class Journey(SequentialTaskSet):" in text and "time.sleep(" in text
    assert 'self.csrf_token = _hidden(response, "csrf_token")' in text
    assert 'self.token = _json(response, "token")' in text and '"Authorization": f"Bearer {self.token}"' in text
    assert 'self.xsrf = self.client.cookies.get("xsrf")' in text
    assert 'params={"cursor": self.x_page_cursor}' in text
    assert 'name="/api/items/{item_id}/orders"' in text and 'json={"item_id": self.item_id, "quantity": 2}' in text
    assert 'data={"csrf_token": self.csrf_token, "item_id": str(self.item_id)}' in text
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
    assert "11 requests: 0 tasks, 10 in 1 flow, 1 left out" in p.stderr, p.stderr
    assert '"/static/logo.png"' in p.stdout and '"http://localhost:' in p.stdout


# -- the browsers' shapes, written by hand from HAR 1.2 ------------------------------------------------


def test_a_chrome_har_imports(tmp_path):
    """Chrome's export: HTTP/2 pseudo-headers, _resourceType, UTC times, -1 timings, a form whose postData
    has text and params, a page titled with its URL, a blocked beacon (status 0), a 304."""
    out = tmp_path / "chrome.py"
    p = squall("import", "har", FIXTURES / "chrome.har", "-o", out)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert lines[0] == "squall import har: 6 requests: 0 tasks, 3 in 1 flow, 3 left out", p.stderr
    assert "left out GET https://www.google-analytics.com/analytics.js: another host than shop.example.com" in p.stderr
    assert "site.css?v=3: a static file" in p.stderr and "beacon: it got no answer" in p.stderr
    text = well_formed(out)
    assert "class ShopExampleComUser(HttpUser):" in text
    assert 'self.authenticity_token = _hidden(response, "authenticity_token")' in text
    assert '"email": "ann@example.com"' in text  # the form's text, decoded once
    assert '"authorization": f"Bearer {self.access_token}"' in text and 'name="/api/orders/{id}"' in text
    assert "time.sleep(3.4)" in text and "time.sleep(1.5)" in text
    for dropped in (":authority", "sec-ch-ua", "user-agent", "cookie", "if-none-match", "origin", "content-length"):
        assert f'"{dropped}"' not in text, dropped


def test_a_firefox_har_imports(tmp_path):
    """Firefox's export: local time zone offsets, integer timings, base64 JSON response bodies, form
    params with an empty text, a multipart upload with a file, a CSRF token in a response header."""
    out = tmp_path / "firefox.py"
    p = squall("import", "har", FIXTURES / "firefox.har", "-o", out)
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[0] == "squall import har: 5 requests: 0 tasks, 4 in 1 flow, 1 left out", p.stderr
    text = well_formed(out)
    assert 'self.x_csrf_token = response.headers.get("X-CSRF-Token")' in text
    assert 'self.cart_id = _json(response, "data", "cart", "id")' in text  # from a base64 body
    assert 'f"/carts/{self.cart_id}/items"' in text and 'name="/carts/{cart_id}/items"' in text
    assert 'data={"sku": "HAMMER-01", "qty": "2"}' in text
    assert 'files={"scan": ("receipt.pdf", b"", "application/pdf")}' in text and "sent empty" in text
    assert "time.sleep(1.4)" in text and '"Host"' not in text and '"Cookie"' not in text


def test_a_value_the_response_lacks_fails_its_request_and_ends_the_journey(nginx, tmp_path):
    """Against a server whose `/` sends no X-CSRF-Token (nginx), the journey cannot go on: each of its
    first requests fails, saying which value it lacked, and nothing after it is sent (the journey ended
    quietly, and with no think time began again at once: a loop of GET /, 0 failures, exit 0)."""
    out = tmp_path / "firefox.py"
    assert squall("import", "har", FIXTURES / "firefox.har", "-o", out, "--wait", "0").returncode == 0
    nginx.reset_log()
    prefix = tmp_path / "run"
    p = squall("-f", out, "-H", nginx.url, "--headless", "-u", 1, "-t", "1s", "--csv", prefix, "--only-summary")
    assert p.returncode == 1, p.stderr[-2000:]  # (its failures)
    rows = {r["Name"]: r for r in csv.DictReader(open(f"{prefix}_stats.csv"))}
    assert set(rows) == {"/", "Aggregated"}, rows  # (nothing after the first request)
    sent = int(rows["/"]["Request Count"])
    assert 0 < sent == int(rows["/"]["Failure Count"]) <= nginx.requests_logged() <= sent + 1  # (+ one in flight)
    failures = list(csv.DictReader(open(f"{prefix}_failures.csv")))
    # (in Locust's words: a catch_response failure is its CatchResponseError)
    assert [f["Error"] for f in failures] == [
        "CatchResponseError('no header X-CSRF-Token in the response, so the flow ends here')"
    ]


def test_the_wait_is_between_journeys_and_the_steps_go_back_to_back(nginx, tmp_path):
    """`--wait 1`: a journey's steps go as recorded (10 ms apart here), then the user waits its second
    before the next journey. Before, the flow's steps each waited the user's wait_time (the task set
    took the user's) and its last step's interrupt() started the next journey at once, so the server
    saw a request a second. Ground truth: nginx's log of when each request arrived."""
    entries = [
        _entry("GET", f"https://a.example/step{i}", 200, i / 100, mime="text/plain", text="ok") for i in range(3)
    ]
    (tmp_path / "three.har").write_text(json.dumps({"log": {"entries": entries}}))
    out = tmp_path / "three.py"
    assert squall("import", "har", tmp_path / "three.har", "-o", out, "--wait", "1").returncode == 0
    nginx.reset_log()
    p = squall("-f", out, "-H", nginx.url, "--headless", "-u", 1, "-t", "3.5s", "--only-summary")
    assert p.returncode == 0, p.stderr[-2000:]
    times = sorted(t for t, _ in nginx.log())
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Journeys at about 0, 1, 2 and 3 s (the last maybe cut by -t): within one, 10 ms gaps; between,
    # the wait (and the first step's own recorded 0 s).
    assert len(times) >= 9, times
    assert all(g < 0.2 for i, g in enumerate(gaps) if i % 3 != 2), gaps
    assert all(0.95 < g < 1.3 for i, g in enumerate(gaps) if i % 3 == 2), gaps


def test_short_values_are_not_correlated(tmp_path):
    """A value under six characters that a response returned and a request sent is replayed as it is."""
    har = json.loads((FIXTURES / "firefox.har").read_text())
    entries = har["log"]["entries"]
    entries[0]["response"]["headers"][1]["value"] = "abc12"
    for entry in entries[1:3]:
        for header in entry["request"]["headers"]:
            if header["name"] == "X-CSRF-Token":
                header["value"] = "abc12"
    (tmp_path / "short.har").write_text(json.dumps(har))
    p = squall("import", "har", tmp_path / "short.har", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert '"X-CSRF-Token": "abc12"' in p.stdout and "x_csrf_token" not in p.stdout


BAD = {
    "postman.json": (b'{"info": {"name": "x"}, "item": []}', "is a Postman collection"),
    "openapi.json": (b'{"openapi": "3.0.0", "paths": {}}', "is an OpenAPI document"),
    "no-log.json": (b'{"entries": []}', "is not a HAR file"),
    "empty.har": (b'{"log": {"version": "1.2", "entries": []}}', "has no entry to import"),
    "truncated.har": (b'{"log": {"entries": [', "ends before its JSON does"),
    "list.har": (b"[]", "is not a HAR file"),
    "bad-entry.har": (
        b'{"log": {"entries": [{"startedDateTime": "yesterday", "request": {"method": "GET", "url": "http://a/"}}]}}',
        "has no entry to import (GET http://a/: its startedDateTime 'yesterday' is not a date and time)",
    ),
    "only-static.har": (
        b'{"log": {"entries": [{"startedDateTime": "2025-01-01T00:00:00Z", "request": {"method": "GET", '
        b'"url": "http://a/x.png"}, "response": {"status": 200, "content": {"mimeType": "image/png"}}}]}}',
        "no request of",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_hars_are_refused_in_one_line(name, tmp_path):
    data, expected = BAD[name]
    (tmp_path / name).write_bytes(data)
    one_line_error(squall("import", "har", tmp_path / name, "-o", tmp_path / "out.py"), expected)
    assert not (tmp_path / "out.py").exists()


def test_a_value_inside_a_longer_one_is_not_correlated(tmp_path):
    """The cart's id inside a longer word (a SKU) is left as recorded; where it stands alone (the path),
    it is taken from the response."""
    har = json.loads((FIXTURES / "firefox.har").read_text())
    form = har["log"]["entries"][2]["request"]["postData"]["params"]
    form[0]["value"] = "HAMMER981273645X"
    (tmp_path / "inside.har").write_text(json.dumps(har))
    p = squall("import", "har", tmp_path / "inside.har", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert '"sku": "HAMMER981273645X"' in p.stdout and 'f"/carts/{self.cart_id}/items"' in p.stdout


def _entry(method, url, status, started, mime="application/json", text="", headers=(), response_headers=(), **more):
    request = {"method": method, "url": url, "headers": [{"name": k, "value": v} for k, v in headers]}
    request.update(more.pop("request", {}))
    response = {
        "status": status,
        "headers": [{"name": k, "value": v} for k, v in response_headers],
        "content": {"mimeType": mime, "text": text},
        "redirectURL": more.pop("redirect", ""),
    }
    return {
        "startedDateTime": f"2025-03-01T10:00:{started:06.3f}Z",
        "time": 10,
        "request": request,
        "response": response,
    }


def test_a_redirect_is_followed_by_the_client_and_a_preflight_left_out(tmp_path):
    """A form POST answered 302, then the page it led to (recorded as a request of its own): the client
    follows the redirect itself, so the page is not requested twice, and a hidden field of that page is
    taken from the POST's final response. A CORS preflight is left out."""
    page = '<form><input type="hidden" name="step_token" value="tok-2f9e8d7c6b"></form>'
    entries = [
        _entry("GET", "https://a.example/login", 200, 0, mime="text/html", text="<html></html>"),
        _entry("POST", "https://a.example/login", 302, 1, mime="text/html", redirect="/account"),
        _entry("GET", "https://a.example/account", 200, 1.1, mime="text/html", text=page),
        _entry(
            "OPTIONS",
            "https://a.example/api/next",
            204,
            2,
            headers=[("Access-Control-Request-Method", "POST")],
        ),
        _entry("POST", "https://a.example/api/next", 200, 2.1, headers=[("X-Step", "tok-2f9e8d7c6b")]),
    ]
    (tmp_path / "redirect.har").write_text(json.dumps({"log": {"entries": entries}}))
    p = squall("import", "har", tmp_path / "redirect.har", "-o", tmp_path / "redirect.py")
    assert p.returncode == 0, p.stderr
    assert "5 requests: 0 tasks, 3 in 1 flow, 2 left out" in p.stderr, p.stderr
    assert "left out GET https://a.example/account: the client follows the redirect of POST /login to it" in p.stderr
    assert "left out OPTIONS https://a.example/api/next: a CORS preflight" in p.stderr
    text = well_formed(tmp_path / "redirect.py")
    assert 'self.step_token = _hidden(response, "step_token")' in text
    assert text.index("def post_login") < text.index("self.step_token = _hidden") < text.index("def post_api_next")
    assert '"X-Step": self.step_token' in text


def test_cookies_no_response_set_are_sent_as_recorded(tmp_path):
    """The jar sends what the journey's responses set (sid); a cookie a script set (consent) goes as recorded."""
    har = json.loads((FIXTURES / "chrome.har").read_text())
    post = har["log"]["entries"][3]["request"]
    next(h for h in post["headers"] if h["name"] == "cookie")["value"] = "sid=8f14e45fceea167a; consent=all-2025"
    (tmp_path / "cookies.har").write_text(json.dumps(har))
    p = squall("import", "har", tmp_path / "cookies.har", "-o", tmp_path / "cookies.py")
    assert p.returncode == 0, p.stderr
    text = well_formed(tmp_path / "cookies.py")
    assert 'cookies={"consent": "all-2025"}' in text and "Sends the cookies consent as recorded" in text
    assert "8f14e45fceea167a" not in text.split("def post_session")[1]


def test_a_large_recording_imports_in_seconds(tmp_path):
    """100 pages of 250 items (2.8 MB of JSON), each page's request carrying the last id of the page
    before: every id is correlated, in about a second on the development host; 10 s is the bound."""
    entries = []
    last = None
    for i in range(100):
        items = [{"id": f"{i:04d}{j:04d}-{'ab' * 8}", "name": f"thing {j}", "ref": f"r{i}x{j}" * 3} for j in range(250)]
        url = f"https://big.example/api/pages/{i}" + (f"?after={last}" if last else "")
        entries.append(_entry("GET", url, 200, i * 0.05, text=json.dumps({"items": items})))
        last = items[-1]["id"]
    (tmp_path / "big.har").write_text(json.dumps({"log": {"entries": entries}}))
    started = time.monotonic()
    p = squall("import", "har", tmp_path / "big.har", "-o", tmp_path / "big.py", timeout=60)
    assert time.monotonic() - started < 10
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "big.py").read_text()
    assert text.count('= _json(response, "items", "249", "id")') == 99
    assert (
        'params={"after": self.item_id_99}' in text
        and 'self.item_id_99 = _json(response, "items", "249", "id")' in text
    )


def test_a_credential_no_response_gave_is_said_to_be_sent_as_recorded(tmp_path):
    """A token the journey's responses never gave (its login was before the recording) goes as recorded,
    and the file and the summary say so, since it will expire; one a response gave is read at run time
    and not said."""
    entries = [
        _entry("POST", "https://a.example/api/login", 200, 0, text='{"token": "tok-9f8e7d6c5b4a"}'),
        _entry("GET", "https://a.example/api/me", 200, 1, headers=[("Authorization", "Bearer tok-9f8e7d6c5b4a")]),
        _entry("GET", "https://a.example/api/orders", 200, 2, headers=[("X-Api-Key", "k-0123456789ab")]),
    ]
    (tmp_path / "stale.har").write_text(json.dumps({"log": {"entries": entries}}))
    p = squall("import", "har", tmp_path / "stale.har", "-o", tmp_path / "stale.py")
    assert p.returncode == 0, p.stderr
    assert (
        "note: credentials sent as recorded (no response of the journey gave them; they expire): X-Api-Key" in p.stderr
    )
    text = well_formed(tmp_path / "stale.py")
    assert "Sends X-Api-Key as recorded" in text and "Sends Authorization as recorded" not in text
