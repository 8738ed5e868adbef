"""The web UI's extension points (issue 25): `environment.web_ui.app` is a Flask app in Locust, and
locustfiles add routes, blueprints and `after_request` hooks to it; `--web-login` puts Flask-Login in
front of it. squall serves the same Flask app beside its dashboard. Each file is run by Locust 2.47 and
by squall, the users pointed at the tool's own web UI (as Locust's examples do), the runs bounded by a
number of tasks; the counts, failures and exit codes, and what the UI answers, are compared."""

import csv
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from support import free_port, squall_process, wait_until

FILES = Path(__file__).parent / "locustfiles"
WEB_UI = FILES / "web_ui"
# (the corpus's _bounded after any PYTHONPATH given: a checkout's package run in place of the installed one)
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(FILES / "corpus")])))
ENV["ITERATIONS"] = "5"


def stats(prefix):
    return {
        (r["Type"], r["Name"]): (r["Request Count"], r["Failure Count"])
        for r in csv.DictReader(open(f"{prefix}_stats.csv"))
    }


def failures(prefix):
    # The reason phrase's case aside: Flask says "NOT FOUND", which requests repeats and squall's engine
    # writes as the standard "Not Found".
    return {
        (r["Method"], r["Name"], r["Error"].lower()): r["Occurrences"]
        for r in csv.DictReader(open(f"{prefix}_failures.csv"))
    }


def start(tool, *args, env=ENV):
    if tool == "locust":
        cmd = [sys.executable, "-m", "locust", *map(str, args)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return squall_process(*args, env=env)


def get(url, opener=None, data=None, headers=None):
    """(status, headers, body) of a request the test makes, redirects not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **kw):
            return None

    opener = opener or urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener.open(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
    except (urllib.error.URLError, TimeoutError):  # not listening (or answering) yet
        return 0, {}, ""


@pytest.mark.parametrize(
    "name, code", [("bottlenecked_server.py", 1), ("response_validations.py", 1), ("extend_web_ui.py", 0)]
)
@pytest.mark.slow
def test_routes_added_to_the_web_ui_are_served_as_by_locust(tmp_path, name, code):
    """Locust's examples that load-test routes they add to the web UI: the users (2, 5 tasks each) hit the
    tool's own UI; the same requests succeed and fail alike (the app's 404 and its route's exception, a
    plain 500 as Locust's server sends), and the exit codes agree (1 where requests failed)."""
    out = {}
    for tool in ("locust", "squall"):
        port = free_port()
        args = ["-f", WEB_UI / name, "--autostart", "--autoquit", 0, "-u", 2, "-r", 50, "-t", "8s"]
        args += ["--web-port", port, "-H", f"http://127.0.0.1:{port}", "--csv", tmp_path / tool, "--only-summary"]
        proc = start(tool, *args)
        _, err = proc.communicate(timeout=90)
        out[tool] = (proc.returncode, stats(tmp_path / tool), failures(tmp_path / tool), err)
    (lcode, lstats, lfail, lerr), (scode, sstats, sfail, serr) = out["locust"], out["squall"]
    assert scode == lcode == code, (lerr[-2000:], serr[-2000:])
    assert sstats == lstats and int(sstats[("", "Aggregated")][0]) >= 10, (lstats, sstats)
    assert sfail == lfail, (lfail, sfail)


def test_an_after_request_hook_extends_locusts_stats_json(tmp_path):
    """extend_web_ui.py's hook adds `extended_stats` to Locust's `/stats/requests`, and its blueprint
    serves `/content-length/csv`: squall answers both as Locust does, with Locust's keys."""
    seen = {}
    for tool in ("locust", "squall"):
        port = free_port()
        proc = start(tool, "-f", WEB_UI / "extend_web_ui.py", "--web-port", port, "-H", f"http://127.0.0.1:{port}")
        try:
            wait_until(lambda: get(f"http://127.0.0.1:{port}/stats/requests")[0] == 200, "the web UI", proc)  # noqa: B023
            status, _, body = get(f"http://127.0.0.1:{port}/stats/requests")
            doc = json.loads(body)
            csv_status, headers, text = get(f"http://127.0.0.1:{port}/content-length/csv")
            seen[tool] = (status, sorted(doc), sorted(doc["stats"][-1]), doc["extended_stats"], csv_status, text)
            assert headers["Content-type" if "Content-type" in headers else "Content-Type"] == "text/csv"
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert seen["squall"] == seen["locust"], seen
    assert seen["squall"][3] == [{"key": "content-length", "data": []}]


def test_a_route_that_renders_index_html_answers_the_tools_own_page_with_its_tabs(browser):
    """Locust's extend_web_ui.py's `/extend` renders Locust's page (`render_template("index.html",
    template_args=...)`) with a "Content Length" tab, its table and its CSV: squall answered 500
    (TemplateNotFound: index.html). Both tools now answer 200 with their own page, given what the route
    adds (Locust's page its template_args, squall's dashboard its tabs and downloads); in squall's, drawn
    in a browser, the tab's table holds the rows the file's hook adds to `/stats/requests` (the users,
    2 of 5 tasks each, requested the UI), and the CSV is among the downloads."""
    given = {}
    for tool in ("locust", "squall"):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        args = ["-f", WEB_UI / "extend_web_ui.py", "--web-port", port, "-H", base, "--autostart", "-u", 2, "-r", 50]
        proc = start(tool, *args)
        try:
            wait_until(lambda: get(base + "/extend")[0] != 0, "the web UI", proc)  # noqa: B023
            status, headers, body = get(base + "/extend")
            assert status == 200 and headers["Content-Type"].startswith("text/html"), (tool, status, body[:2000])
            if tool == "locust":
                template_args = json.loads(body.split("window.templateArgs = ", 1)[1].split("\n", 1)[0])
                given[tool] = {k: template_args[k] for k in ("extended_tabs", "extended_tables", "extended_csv_files")}
                continue
            data = json.loads(body.split('<script id="squall-data" type="application/json">')[1].split("</script>")[0])
            assert data["mode"] == "live" and data["meta"]["command"] == "run" and data["token"], data
            assert '<div id="app"></div>' in body and '<script src="/assets/app.js"></script>' in body
            given[tool] = data["extension"]
            # the users' 10 requests made (squall's test ends with its users): their lengths are the hook's rows
            stats = lambda: json.loads(get(base + "/stats/requests")[2])  # noqa: B023
            wait_until(lambda: stats()["state"] == "stopped", "the users' requests", proc)  # noqa: B023
            rows = stats()["extended_stats"][0]["data"]
            assert len(rows) == 2, rows
            page = browser.new_page()
            try:
                page.goto(base + "/extend")
                page.wait_for_selector("body[data-ready='1']", timeout=30_000)
                assert page.locator("[data-testid='section-extension-0'] h2").inner_text() == "Content Length"
                page.wait_for_selector("[data-testid='extension-table-0'] [data-testid='extension-row']")
                heads = page.locator("[data-testid='extension-table-0'] th").all_inner_texts()
                assert heads == ["Name", "Total content length"], heads
                drawn = {
                    tuple(r.locator("td").all_inner_texts())
                    for r in page.locator("[data-testid='extension-table-0'] [data-testid='extension-row']").all()
                }
                assert drawn == {(r["name"], f"{r['content_length']:,}") for r in rows}, (drawn, rows)
                link = page.locator("[data-testid='download-extension-csv']")
                assert link.inner_text() == "Download content length statistics CSV"
                assert link.get_attribute("href") == "/content-length/csv"
                assert page.locator("[data-testid='state']").count() == 1  # the dashboard itself
            finally:
                page.close()
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    tables = {t["key"]: t["structure"] for t in given["locust"]["extended_tables"]}
    tabs = [{**t, "columns": tables.get(t["key"])} for t in given["locust"]["extended_tabs"]]
    assert given["squall"] == {"tabs": tabs, "csv_files": given["locust"]["extended_csv_files"]}, given


def test_web_login_guards_the_ui_as_locusts_does(tmp_path):
    """--web-login with Locust's web_ui_auth example: the page sends a stranger to /login, which offers
    the locustfile's form; a wrong password comes back to the login page, the right one logs in (a
    session cookie), and then the page and its data are served. Both tools answer each step alike."""
    steps = {}
    for tool in ("locust", "squall"):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start(tool, "-f", WEB_UI / "web_login.py", "--web-login", "--web-port", port, "-H", base)
        try:
            wait_until(lambda: get(base + "/login")[0] == 200, "the login page", proc)  # noqa: B023
            seen = []
            status, headers, _ = get(base + "/")
            seen.append(("stranger", status, headers.get("Location", "").split("?")[0].replace(base, "")))
            status, _, body = get(base + "/login")
            seen.append(("login page", status, 'action="/login_submit"' in body or "/login_submit" in body))
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            status, headers, _ = get(base + "/login_submit", data=b"username=u&password=wrong", headers=form)
            seen.append(("wrong", status, headers.get("Location", "").replace(base, "")))
            jar = CookieJar()

            class NoRedirect(urllib.request.HTTPRedirectHandler):
                def redirect_request(self, *a, **kw):
                    return None

            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
            status, headers, _ = get(base + "/login_submit", opener, b"username=u&password=right", form)
            seen.append(("right", status, headers.get("Location", "").replace(base, ""), len(jar) > 0))
            status, _, body = get(base + "/", opener)
            seen.append(("page", status, "<html" in body.lower()))
            steps[tool] = seen
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert steps["squall"] == steps["locust"], steps
    assert steps["squall"][0] == ("stranger", 302, "/login") and steps["squall"][-1] == ("page", 200, True)


def test_squalls_own_data_needs_the_login_too(tmp_path):
    """Beyond Locust's page: squall's live data, downloads and /metrics are the dashboard's too."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start("squall", "-f", WEB_UI / "web_login.py", "--web-login", "--web-port", port, "-H", base)
    try:
        wait_until(lambda: get(base + "/login")[0] == 200, "the login page", proc)
        for path in ("/api/live", "/download/stats.csv", "/metrics"):
            status, headers, _ = get(base + path)
            assert status == 302 and headers["Location"].startswith("/login?next="), (path, status)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_template_args_as_extension_files_read_them(tmp_path):
    """A route of the file's reads `web_ui.template_args` after `update_template_args()` (the file
    imports `locust.web`): the values both tools give for the UI before a test are the same."""
    seen = {}
    for tool in ("locust", "squall"):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        target = "http://127.0.0.1:9/app"  # never requested: no test is started
        proc = start(tool, "-f", WEB_UI / "template_args.py", "--web-port", port, "-H", target, "-u", 3)
        try:
            wait_until(lambda: get(base + "/template-args")[0] == 200, "the route", proc)  # noqa: B023
            seen[tool] = json.loads(get(base + "/template-args")[2])
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert seen["squall"] == seen["locust"], seen
