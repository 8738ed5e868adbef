"""Locust's users for SDKs and databases (locust.contrib.oai, mongodb, qdrant, milvus), each run by squall
and by Locust 2.47 with the same locustfile. The OpenAI user against a real local server that speaks the
API (its count of what it received is the ground truth, and its peak shows the users' requests in progress
together); MongoDBUser against a port nothing listens on (no MongoDB server can be installed here: every
query is pymongo's failure, counted alike); QdrantUser on qdrant-client's own in-process store; milvus's
module is Locust's own, run on squall's API, and without pymilvus installed it fails alike. The locust
package is squall's in these runs (squall.locust_compat): socketio, dns, mongodb, postgres and oai are
squall's own modules, milvus, qdrant and csv_request_logger Locust's.

Locust's runs of these files end early by its start-up (the SDKs' imports: its -t timer is set on gevent's
loop clock, which lags by that much), so the runs here are 8 s and each tool is checked on its own."""

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from support import HERE, free_port, needs_locust, squall, wait_for_port

FILES = HERE / "locustfiles"
SERVERS = HERE / "servers"


def run(tool, file, *args, env=None):
    """`file` run by `tool`, headless; returns (process, {(type, name): (requests, failures, total
    content length)} from its final JSON)."""
    cmd = ["-f", FILES / file, "--headless", "--json", *args]
    env = dict(os.environ, **(env or {}))
    if tool == "squall":
        p = squall(*cmd, timeout=90, env=env)
    else:
        p = subprocess.run(
            [sys.executable, "-m", "locust", *map(str, cmd)], capture_output=True, text=True, timeout=90, env=env
        )
    assert "Traceback" not in p.stderr, (tool, p.stderr[-3000:])
    rows = json.loads(p.stdout) if p.stdout.strip() else []
    return p, {
        (r["method"], r["name"]): (r["num_requests"], r["num_failures"], r["total_content_length"]) for r in rows
    }


@pytest.fixture(scope="module")
def openai_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, SERVERS / "openai_server.py", str(port)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    wait_for_port(port)
    yield f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


def oai_tally(url):
    with urllib.request.urlopen(f"{url}/tally", timeout=10) as r:
        return json.loads(r.read())


def oai_run(tool, url, users, ms):
    before = oai_tally(url)["calls"]
    env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": f"{url}/v1", "OAI_MS": str(ms)}
    p, rows = run(tool, "openai_responses.py", "-u", users, "-r", 100, "-t", "8s", env=env)
    after = oai_tally(url)
    return p, rows, {m: n - before.get(m, 0) for m, n in after["calls"].items()}, after["peak"]


@pytest.mark.slow
def test_openai_user_counts_what_the_api_received_as_locust_does(openai_server):
    """locust.contrib.oai was not importable under squall. Each HTTP request the SDK sends is one, named by
    its path (or `rename_request`'s name), its length the answer's output tokens (7 each); the refusals
    (400) are failures. Exit code 1 (failures) for both."""
    users = 3
    for tool in ("squall", "locust"):
        p, rows, received, _ = oai_run(tool, openai_server, users, 20)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        assert set(rows) == {("POST", "/v1/responses"), ("POST", "refused")}, (tool, rows)
        asked, asked_failed, tokens = rows[("POST", "/v1/responses")]
        refused, refused_failed, _ = rows[("POST", "refused")]
        assert asked > 10 and asked <= received["wait-20"] <= asked + users and asked_failed == 0, (tool, rows)
        assert tokens == 7 * asked, (tool, rows)
        assert refused == refused_failed > 2 and refused <= received["fail"] <= refused + users, (tool, rows)


def test_openai_user_takes_the_key_from_locust_clouds_variable_or_says_it_needs_one(openai_server):
    """As newer Locust's module: LOCUST_OPENAI_API_KEY stands for OPENAI_API_KEY (Locust Cloud forwards
    only LOCUST_* variables), and the API receives it as the key of every request; with neither set the
    file's import fails in one line (exit code 2) before the run."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "LOCUST_OPENAI_API_KEY")}
    env.update(OPENAI_BASE_URL=f"{openai_server}/v1", OAI_MS="1")
    before = oai_tally(openai_server)
    cmd = ("-f", FILES / "openai_responses.py", "--headless", "-u", 1, "-t", "1s", "--only-summary")
    p = squall(*cmd, timeout=60, env={**env, "LOCUST_OPENAI_API_KEY": "cloud-key"})
    after = oai_tally(openai_server)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]  # (the refused model fails)
    sent = sum(after["calls"].values()) - sum(before["calls"].values())
    keyed = after["keys"].get("cloud-key", 0) - before["keys"].get("cloud-key", 0)
    assert sent >= 2 and keyed == sent, (before, after)
    p = squall(*cmd, timeout=60, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "You need to set OPENAI_API_KEY or LOCUST_OPENAI_API_KEY env var to use OpenAIUser" in p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_openai_requests_of_users_wait_together(openai_server, tool):
    """10 users whose requests take 100 ms at the server: 10 in progress at once (give or take one between
    two requests), and for squall (whose run lasts its -t) more than one at a time allows (80 in 8 s)."""
    p, _, received, peak = oai_run(tool, openai_server, 10, 100)
    assert p.returncode == 1, p.stderr[-2000:]
    assert peak >= 9, (tool, peak)
    assert tool == "locust" or received["wait-100"] > 80, (tool, received)


@pytest.mark.slow
def test_mongodb_and_qdrant_users_as_locust_runs_them():
    """MongoDBUser: each query (`MONGODB QUERY`) fails when pymongo's server selection gives up (200 ms,
    then its retry: ~0.5 s a query, so 2 users make 3-16 in 8 s); QdrantUser: `qdrant upsert` and `qdrant
    search` on its in-process store, no failures. The same rows for both tools, exit code 1 (failures)."""
    env = {"MONGO_PORT": str(free_port())}
    for tool in ("squall", "locust"):
        p, rows = run(tool, "sdk_users.py", "-u", 2, "-r", 100, "-t", "8s", env=env)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        assert set(rows) == {("MONGODB", "QUERY"), ("qdrant", "upsert"), ("qdrant", "search")}, (tool, rows)
        queries, failed, _ = rows[("MONGODB", "QUERY")]
        assert queries == failed >= 2, (tool, rows)
        assert all(rows[("qdrant", n)][0] > 10 and rows[("qdrant", n)][1] == 0 for n in ("upsert", "search")), rows


def test_milvus_is_locusts_own_module_and_needs_pymilvus(tmp_path):
    """locust.contrib.milvus is Locust's own source run on squall's API (squall has none of its own):
    without pymilvus installed, the file cannot load in either tool, for the same reason."""
    needs_locust()
    if subprocess.run([sys.executable, "-c", "import pymilvus"], capture_output=True).returncode == 0:
        pytest.skip("pymilvus is installed")
    file = tmp_path / "milvus_user.py"
    file.write_text("from locust.contrib.milvus import MilvusUser\n\n\nclass M(MilvusUser):\n    pass\n")
    squall_p = squall("-f", file, "--headless", "-u", 1, "-t", "1s", timeout=60)
    locust_p = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(file), "--headless", "-u", "1", "-t", "1s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert squall_p.returncode == 2 and "Traceback" not in squall_p.stderr, squall_p.stderr
    assert "No module named 'pymilvus'" in squall_p.stderr, squall_p.stderr
    assert locust_p.returncode != 0 and "No module named 'pymilvus'" in locust_p.stderr, locust_p.stderr[-2000:]


def test_locust_contrib_modules_resolve_to_squalls_or_locusts_own():
    """In a run (the aliases installed): `locust.contrib.NAME` is squall's module itself (one module, two
    names) for the five squall has, and Locust's source, loaded under Locust's name, for qdrant."""
    code = (
        "from squall import locust_compat\n"
        "locust_compat.install()\n"
        "import squall.contrib.dns, squall.contrib.socketio\n"
        "import locust.contrib.dns, locust.contrib.socketio, locust.contrib.qdrant, locust.contrib.csv_request_logger\n"
        "assert locust.contrib.dns is squall.contrib.dns and locust.contrib.socketio is squall.contrib.socketio\n"
        "assert locust.contrib.dns.__spec__.name == 'squall.contrib.dns'\n"
        "assert locust.contrib.qdrant.__file__.endswith('site-packages/locust/contrib/qdrant.py')\n"
        "import locust\n"
        "assert locust.contrib.qdrant.User is locust.User and locust.User.__module__.startswith('squall')\n"
        "print('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


@pytest.mark.serial
def test_openai_users_streamed_answers_come_as_the_server_sends_them(openai_server, tmp_path):
    """Under squall the SDK's httpx client sends through the engine (contrib/oai.py's EngineTransport):
    a streamed chat completion's chunks reach the script as the server sends them (5, 40 ms apart:
    each gap within 10 ms of it, their median within 2.5; the first after the server's first 40 ms),
    the engine times the stream's events (5 chunks and [DONE] each), and the request is recorded at its
    head, its length 0. (Locust's hook reads every answer as JSON, which this one is not: not run there.)"""
    out, result = tmp_path / "out.jsonl", tmp_path / "r.json"
    env = dict(os.environ, OPENAI_API_KEY="test", OPENAI_BASE_URL=f"{openai_server}/v1", OUT=str(out), TASKS="3")
    argv = ["-f", FILES / "openai_stream.py", "--headless", "-u", 1, "-r", 1, "-t", "60s", "--result-json", result]
    p = squall(*argv, timeout=90, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    gaps = []
    for r in records:
        assert r["text"] == "t0 t1 t2 t3 t4 " and len(r["at"]) == 5, r
        assert (r["at"][0] - r["t0"]) * 1000 >= 40, r
        gaps += [(b - a) * 1000 for a, b in zip(r["at"], r["at"][1:])]
    assert all(30 <= g <= 50 for g in gaps) and abs(sorted(gaps)[len(gaps) // 2] - 40) <= 2.5, gaps
    (e,) = json.loads(result.read_text())["endpoints"]
    assert (e["name"], e["requests"], e["failures"], e["body_bytes"]) == ("/v1/chat/completions", 3, 0, 0), e
    assert e["max_us"] < 40_000, e  # the head, before the first chunk
    s = e["stream"]
    # (a stream may end in flight: the SDK stops at [DONE], before the last chunk's end may have come)
    assert (s["streams"], s["cut"], s["events"]) == (3, 0, 3 * 6), s
