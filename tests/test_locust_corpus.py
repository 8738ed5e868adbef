"""Locustfiles in the styles real projects use (tests/locustfiles/corpus), each run by Locust 2.47 and by
squall against the same recording server: what arrived at the server, the requests and failures per
endpoint, the exceptions and the exit code must be the same.

Each file bounds its users to a fixed number of tasks (corpus/_bounded.py), so the two runs make the
same requests whatever the machine's speed, and the comparison is exact, not statistical."""

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections import Counter
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

import pytest

from support import free_port, squall

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).parent / "locustfiles" / "corpus"
USERS = 2
# Headers whose values both tools must send alike; the others (User-Agent, Accept-Encoding, Connection,
# Content-Length with a multipart boundary inside) legitimately differ between clients.
COMPARED_HEADERS = ("authorization", "x-client", "x-api-version", "content-type", "accept")

# Locust itself runs in its own processes: importing it here would patch this interpreter with gevent.
if importlib.util.find_spec("locust") is None:
    pytest.skip("Locust is not installed", allow_module_level=True)
# Command-line options a file's own parser listener adds.
EXTRA = {
    "custom_options.py": ["--api-key", "k3y", "--batch", "3"],
    "worker_index.py": ["--check-fail-ratio", "0.5"],  # a locust-plugins option
    "user_stop.py": ["-u", "3"],  # one of each class (the last -u wins, for both tools)
}
# Tasks per user, where ten would not fit the run time under load (each task makes many requests).
# (8 s at most)
ITERATIONS = {
    "host_path.py": "3",
    "multiple_hosts.py": "4",
    "prepared_calls.py": "3",
    "reading.py": "2",
    "session_setup.py": "5",
    "call_headers.py": "5",  # (Locust's FastHttpUser takes some 40 ms a request from the recorder)
    "redirects.py": "3",  # (a redirect hop takes the recorder some 90 ms: Nagle on its two writes)
    "redirect_history.py": "3",
    "response_urls.py": "3",
}


class Recorder:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        server = Path(__file__).parent / "servers" / "recorder.py"
        self.proc = subprocess.Popen([sys.executable, str(server), str(self.port)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def log(self):
        with urllib.request.urlopen(self.url + "/__log", timeout=10) as r:
            return json.loads(r.read())

    def reset(self):
        urllib.request.urlopen(urllib.request.Request(self.url + "/__reset", method="POST"), timeout=10).read()

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def recorder():
    r = Recorder()
    yield r
    r.stop()


def received(records):
    """What arrived, independent of the client: a multiset of (method, path, query, compared headers,
    cookies, body) with multipart bodies taken apart (their boundaries are random)."""
    seen = []
    for r in records:
        headers = dict(r["headers"])
        ctype = headers.get("content-type", "")
        body = r["body"]
        if ctype.startswith("multipart/form-data"):
            body = _parts(ctype, body.encode("latin-1"))
            headers["content-type"] = "multipart/form-data"
        elif ctype == "application/json" and body:
            body = json.dumps(json.loads(body), sort_keys=True)
        cookies = tuple(sorted(c.strip() for c in headers.get("cookie", "").split(";") if c.strip()))
        compared = tuple((h, headers.get(h)) for h in COMPARED_HEADERS if h != "accept" or "json" in headers.get(h, ""))
        query = tuple(tuple(q) for q in r["query"] if q[0] != "_")  # rest_'s cache buster is a timestamp
        seen.append((r["method"], r["path"], query, compared, cookies, body))
    return Counter(seen)


def _parts(ctype, body):
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + body)
    parts = []
    for part in message.iter_parts():
        parts.append(
            (
                part.get_param("name", header="content-disposition"),
                part.get_filename(),
                part.get_content_type() if part.get("content-type") else None,
                part.get_payload(decode=True),
            )
        )
    return tuple(sorted(parts, key=repr))


def stats(prefix):
    rows = csv.DictReader(open(f"{prefix}_stats.csv"))
    return {(r["Type"], r["Name"]): (int(r["Request Count"]), int(r["Failure Count"])) for r in rows}


def exceptions(prefix):
    """Exception message -> count, from the exceptions CSV (the tracebacks differ: the tools' frames)."""
    found = Counter()
    for r in csv.DictReader(open(f"{prefix}_exceptions.csv")):
        found[r["Message"]] += int(r["Count"])
    return found


def failures(prefix):
    """(method, name) -> failure count, from the failures CSV."""
    found = Counter()
    for r in csv.DictReader(open(f"{prefix}_failures.csv")):
        found[(r["Method"], r["Name"])] += int(r["Occurrences"])
    return found


def run_both(name, recorder, tmp_path, *extra, run_time="4s", env=None, tools=("locust", "squall")):
    """Runs the file with Locust, then with squall; returns {"locust"|"squall": (process, prefix, records)}."""
    out = {}
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(CORPUS)]))
    env["CORPUS_API_VERSION"] = "7"  # custom_options.py's option, from the variable it declares
    common = ["-f", CORPUS / name, "--headless", "-u", USERS, "-r", 50, "-t", run_time, "-H", recorder.url]
    for tool in tools:
        recorder.reset()
        prefix = tmp_path / tool
        args = [*common, "--csv", prefix, "--only-summary", *extra]
        if tool == "locust":  # quiet, unless `extra` asks for a --loglevel
            cmd = [sys.executable, "-m", "locust", "--loglevel", "ERROR", *args]
            p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=90, env=env)
        else:
            p = squall(*args, env=env, timeout=90)
        out[tool] = (p, prefix, recorder.log())
    return out


@pytest.mark.parametrize(
    "name",
    [
        "session_setup.py",
        "call_headers.py",
        "uploads.py",
        "fasthttp_rest.py",
        "idioms.py",
        "quitting.py",
        "gevent_pool.py",
        "custom_options.py",
        "runners_check.py",
        "markov.py",
        "multiple_hosts.py",
        "host_path.py",
        "fasthttp_api.py",
        "worker_index.py",
        "prepared_calls.py",
        "invalid_url.py",
        "reading.py",
        "user_stop.py",
        "redirects.py",
        "redirect_history.py",
        "response_urls.py",
    ],
)
def test_corpus_file_runs_as_under_locust(name, recorder, tmp_path):
    extra = list(EXTRA.get(name, []))
    if name == "host_path.py":  # a host with a path: the last -H wins, for both tools
        extra += ["-H", recorder.url + "/en/latest/"]
    env = {"API_HOST": recorder.url + "/api", "ITERATIONS": ITERATIONS.get(name, "10")}
    both = run_both(name, recorder, tmp_path, *extra, env=env, run_time="8s" if name in ITERATIONS else "4s")
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode, (lp.returncode, sp.returncode, lp.stderr[-2000:], sp.stderr[-2000:])
    assert len(srecords) == len(lrecords) > 0
    assert received(srecords) == received(lrecords)
    assert stats(sprefix) == stats(lprefix)
    assert failures(sprefix) == failures(lprefix)
    assert exceptions(sprefix) == exceptions(lprefix)


def test_tasksets_on_stop_run_when_the_run_ends_in_their_wait(recorder, tmp_path):
    """The end of the run stops a user waiting between the tasks of a nested TaskSet (in its wait), and,
    with --stop-timeout, a user whose task straddles the end (at its wait, once the task is done): each
    TaskSet's on_stop runs, innermost first, then the user's, as in Locust. Judged by what the server
    received (Locust's last CSV is written before the requests made within --stop-timeout)."""
    both = run_both("taskset_stop.py", recorder, tmp_path, "--stop-timeout", "5")
    (lp, _, lrecords), (sp, _, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode == 0, (lp.stderr[-2000:], sp.stderr[-2000:])
    expected = [
        *("/waiter/inner/on_start", "/waiter/inner/work", "/waiter/inner/on_stop"),
        *("/waiter/outer/on_stop", "/waiter/on_stop"),
        *("/busy/work", "/busy/work/done", "/busy/inner/on_stop", "/busy/on_stop"),
    ]
    for records in (lrecords, srecords):
        paths = [r["path"] for r in records]
        assert sorted(paths) == sorted(expected), paths
        for user in ("/waiter/", "/busy/"):  # each user's requests in the order Locust makes them
            assert [p for p in paths if p.startswith(user)] == [p for p in expected if p.startswith(user)]
    assert received(srecords) == received(lrecords)


@pytest.mark.parametrize("end", ["quit", "stop"])
def test_runner_quit_or_stop_in_a_task_ends_it_there(recorder, tmp_path, end):
    """`environment.runner.quit()` or `.stop()` in a task ends that user at the call, as Locust's kill of
    the calling greenlet: the task's next request never arrives, its on_stop runs. After quit() the run
    ends at once; after stop() the headless run stays idle until -t, as Locust's (both log the run time
    reached then). (test_stop comes before the user's on_stop in Locust, fired inside stop(): compared
    as a multiset.)"""
    both = run_both("runner_ends.py", recorder, tmp_path, "-u", "1", "--loglevel", "INFO", env={"RUNNER_END": end})
    (lp, _, lrecords), (sp, _, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode == 0, (lp.stderr[-2000:], sp.stderr[-2000:])
    for records in (lrecords, srecords):
        assert [r["path"] for r in records] == ["/work/1", "/work/2", "/work/3"]
    assert sorted(sp.stdout.splitlines()) == sorted(lp.stdout.splitlines()) == ["on_stop 3", "quitting 3", "test_stop"]
    for p in (lp, sp):
        assert ("--run-time limit reached" in p.stderr) == (end == "stop"), p.stderr[-2000:]


@pytest.mark.parametrize("stop_timeout", [None, "2"])
def test_runner_and_environment_attributes_read_as_locusts(recorder, tmp_path, stop_timeout):
    """runner.exceptions (fed by the exceptions squall counts), log_exception, user_greenlets, the
    environment's and parsed options' attributes files read, and user_error's user_instance (the TaskSet
    that ran the task: a User's own tasks', its DefaultTaskSet), printed by the file under both tools."""
    extra = ["Chosen", *(["--stop-timeout", stop_timeout] if stop_timeout else [])]
    both = run_both("runner_attributes.py", recorder, tmp_path, *extra, env={"ITERATIONS": "3"})
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode, (lp.stderr[-2000:], sp.stderr[-2000:])
    assert received(srecords) == received(lrecords)
    assert sorted(sp.stdout.splitlines()) == sorted(lp.stdout.splitlines())
    printed = lp.stdout.splitlines()
    assert printed.count("user_greenlets Group 1") == USERS
    for message in ("boom", "nested boom", "logged by hand"):  # once per user each
        assert f"exception {message} {USERS} ['local'] True" in printed
    for error in ("DefaultTaskSet Chosen boom", "Nested Chosen nested boom"):
        assert printed.count(f"user_error {error}") == USERS
    assert ("stop_timeout 2.0 2" if stop_timeout else "stop_timeout 0.0 0") in printed
    assert "processes None" in printed and "available ['Chosen', 'NotChosen'] ['Chosen']" in printed
    assert exceptions(sprefix) == exceptions(lprefix)


def error_report(stderr):
    """The console's error report (Locust's `Error report` table): its (occurrences, error) rows."""
    lines = stderr.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("Error report"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if m := re.match(r"^(\d+)\s+(\S.*)$", line):
            rows.append((int(m[1]), m[2].rstrip()))
    return sorted(rows)


@pytest.mark.parametrize("user_class", ["RequestsStatus", "FastStatus"])
def test_status_failures_are_written_in_locusts_words_for_each_client(recorder, tmp_path, user_class):
    """A 500 and a 404 the client judged itself: HttpUser's text is requests' HTTPError('500 Server Error:
    ... for url: NAME'), FastHttpUser's geventhttpclient's LocustBadStatusCode(code=500). The failures CSV
    and the console's error report say exactly what Locust's say."""
    both = run_both("status_failures.py", recorder, tmp_path, user_class)
    texts, reports = {}, {}
    for tool, (p, prefix, _records) in both.items():
        rows = csv.DictReader(open(f"{prefix}_failures.csv"))
        texts[tool] = sorted((r["Method"], r["Name"], r["Error"], r["Occurrences"]) for r in rows)
        reports[tool] = error_report(p.stderr)
    assert texts["squall"] == texts["locust"], texts
    assert reports["squall"] == reports["locust"], reports
    marker = "LocustBadStatusCode(code=500)" if user_class == "FastStatus" else "HTTPError('500 Server Error"
    assert any(marker in t[2] for t in texts["squall"]) and len(texts["squall"]) == 2


@pytest.mark.parametrize("user_class", ["Requests", "Fast"])
def test_a_failed_status_is_seen_by_the_script_as_locusts_clients_show_it(recorder, tmp_path, user_class):
    """A 404 and a 500 as the script sees them (status_errors.py posts it back): FastHttpUser's response
    carries geventhttpclient's LocustBadStatusCode(code=404) as its `error`, which raise_for_status()
    raises, the request event is told and a with-block that judges nothing records; HttpUser's `error`
    stays None, requests' HTTPError everywhere else. Locust on the same file is the reference."""
    both = run_both("status_errors.py", recorder, tmp_path, user_class, env={"ITERATIONS": "2"})
    (lp, lprefix, lrecords), (sp, sprefix, srecords) = both["locust"], both["squall"]
    assert lp.returncode == sp.returncode, (lp.stderr[-2000:], sp.stderr[-2000:])
    assert received(srecords) == received(lrecords) and len(srecords) > 0
    texts = {}
    for tool, prefix in (("locust", lprefix), ("squall", sprefix)):
        rows = csv.DictReader(open(f"{prefix}_failures.csv"))
        texts[tool] = sorted((r["Method"], r["Name"], r["Error"], r["Occurrences"]) for r in rows)
    assert texts["squall"] == texts["locust"], texts
    seen = [json.loads(r["body"]) for r in srecords if r["path"] == "/seen/404"]
    marker = "LocustBadStatusCode(code=404)" if user_class == "Fast" else "None"
    assert seen and all(s["error"] == marker for s in seen), seen


@pytest.mark.parametrize(
    "user_class, verified",
    [
        ("Verified", True),
        ("SessionUnverified", False),
        ("CallUnverified", False),
        ("Fast", False),
        ("FastStrict", True),
    ],
)
def test_certificates_are_checked_as_requests_and_fasthttp_decide(nginx, tmp_path, user_class, verified):
    """nginx's self-signed TLS listener: where the class verifies, every request fails (and nginx serves
    none); where it does not, all succeed. Locust on the same class agrees on every count."""
    counts = {}
    env = dict(os.environ, PYTHONPATH=str(CORPUS), ITERATIONS="5")
    for tool in ("locust", "squall"):
        nginx.reset_log()
        prefix = tmp_path / tool
        args = ["-f", CORPUS / "tls_verify.py", "--headless", "-u", 1, "-r", 10, "-t", "3s", "-H", nginx.tls_url]
        args += ["--csv", prefix, "--only-summary", user_class]
        if tool == "locust":
            cmd = [sys.executable, "-m", "locust", *args, "--loglevel", "ERROR"]
            subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=90, env=env)
        else:
            squall(*args, env=env, timeout=90)
        counts[tool] = (stats(prefix)[("", "Aggregated")], nginx.requests_logged())
    assert counts["squall"] == counts["locust"] == (((5, 5), 0) if verified else ((5, 0), 5))


def test_fasthttp_max_retries_resend_what_geventhttpclient_resends(tmp_path):
    """Against a server that closes every connection unanswered, with max_retries = 2: squall sends each
    GET three times and each POST once; both tools count one failed request per call. Locust sends the
    POST once too, and each GET at least three times: geventhttpclient also retries inside each try,
    once per pooled connection plus one (4 here), which squall does not copy."""
    seen, failed = {}, {}
    env = dict(os.environ, PYTHONPATH=str(CORPUS), ITERATIONS="3")
    for tool in ("locust", "squall"):
        port = free_port()
        server = Path(__file__).parent / "servers" / "closer.py"
        proc = subprocess.Popen([sys.executable, str(server), str(port)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        prefix = tmp_path / tool
        args = ["-f", CORPUS / "retries.py", "--headless", "-u", 1, "-r", 10, "-t", "3s"]
        args += ["-H", f"http://127.0.0.1:{port}", "--csv", prefix, "--only-summary"]
        if tool == "locust":
            cmd = [sys.executable, "-m", "locust", *args, "--loglevel", "ERROR"]
            subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=90, env=env)
        else:
            squall(*args, env=env, timeout=90)
        proc.terminate()
        seen[tool] = json.loads(proc.communicate(timeout=10)[0])
        failed[tool] = stats(prefix)[("", "Aggregated")]
    assert seen["squall"] == {"GET /idempotent": 3 * 3, "POST /not-idempotent": 3}, seen
    assert seen["locust"]["POST /not-idempotent"] == 3 and seen["locust"]["GET /idempotent"] >= 3 * 3, seen
    assert failed["squall"] == failed["locust"] == (6, 6)


def test_markov_weights_draw_as_locusts(recorder, tmp_path):
    """After `hub` the chain goes `left` with weight 3 and `right` with weight 1, and back: every other
    task is the hub, and out of the hub's draws (up to 2 users x 100, fewer if a loaded machine cuts the
    run short) each tool's share of `left` is 3/4 within five standard deviations."""
    both = run_both("markov_weights.py", recorder, tmp_path, env={"ITERATIONS": "200"}, run_time="30s")
    for tool, (p, prefix, _records) in both.items():
        assert p.returncode == 0, (tool, p.stderr[-2000:])
        counts = {name: n for (_type, name), (n, _f) in stats(prefix).items()}
        left, right, hub = counts["/walk/left"], counts["/walk/right"], counts["/walk/hub"]
        draws = left + right
        assert hub + draws <= 400 and 0 <= hub - draws <= USERS and draws >= 50, (tool, counts)
        assert abs(left / draws - 0.75) <= 5 * (0.75 * 0.25 / draws) ** 0.5, (tool, counts)
