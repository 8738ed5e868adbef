"""Custom clients, Locust's way to test any other protocol: a User whose client calls a library and fires
`events.request` itself. Run by squall and by Locust 2.47 against the same real XML-RPC server (tests/
servers/xmlrpc_server.py), which counts every call it received: the ground truth."""

import os
import subprocess
import sys
import xmlrpc.client

import pytest

from support import HERE, free_port, headless, wait_for_port

pytestmark = pytest.mark.slow

FILES = HERE / "locustfiles"


@pytest.fixture(scope="module")
def xmlrpc_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, HERE / "servers" / "xmlrpc_server.py", str(port)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    wait_for_port(port)
    yield f"http://127.0.0.1:{port}/"
    proc.kill()
    proc.wait()


def calls(url):
    return xmlrpc.client.ServerProxy(url).calls()


def run(tool, url, tmp_path, *args, env=None):
    """The xmlrpc_client.py locustfile under `tool`; returns (process, {name: (requests, failures)}, its
    [(type, name, error)] failures at exit (support.headless), {method: calls the server received})."""
    before = calls(url)
    p, rows, errors = headless(tool, FILES / "xmlrpc_client.py", tmp_path / tool, "-H", url, *args, env=env)
    after = calls(url)
    received = {m: after.get(m, 0) - before.get(m, 0) for m in after}
    return p, {name: counts for (_, name), counts in rows.items()}, errors, received


def test_requests_a_custom_client_fires_are_counted_as_locust_counts_them(xmlrpc_server, tmp_path):
    """Each tool counts what the server received, per name, within the calls in flight when the run
    ended (at most one per user); failures are the server's Faults, in the same words."""
    users = 3
    out = {}
    for tool in ("squall", "locust"):
        p, rows, errors, received = run(tool, xmlrpc_server, tmp_path, "-u", users, "-r", users, "-t", "3s")
        assert p.returncode == 1, (tool, p.stderr[-2000:])  # the Faults are failures: Locust's exit code 1
        out[tool] = rows, errors
        for name in ("wait", "fail"):
            counted = rows[name][0]
            assert counted > 20 and counted <= received[name] <= counted + users, (tool, name, rows, received)
        assert rows["fail"][1] == rows["fail"][0] and rows["wait"][1] == 0
    (_, squall_errors), (_, locust_errors) = out["squall"], out["locust"]
    assert (
        [e[:3] for e in squall_errors]
        == [e[:3] for e in locust_errors]
        == [("xmlrpc", "fail", "<Fault 1: \"<class 'ValueError'>:the server refuses\">")]
    )


@pytest.mark.serial  # (calls served in 3 s: a neighbour starving Locust of CPU halved them)
@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_users_blocked_in_a_library_call_wait_together(xmlrpc_server, tmp_path, tool):
    """xmlrpc.client is a blocking library (sockets, http.client): under Locust its calls wait on gevent's
    hub, so 10 users' calls of 200 ms overlap. The server says how many were in progress at once (all 10,
    give or take one between two calls: the 10 ms wait and a 1-3 ms Fault call), and how many it served:
    10 users x 3 s at about 0.17 s a task (3 of 4 a 200 ms wait) is ~180 calls, where calls made one at a
    time would be ~15 a second, ~45."""
    xmlrpc.client.ServerProxy(xmlrpc_server).peak()  # from now on
    p, rows, _, received = run(
        tool, xmlrpc_server, tmp_path, "-u", 10, "-r", 100, "-t", "3s", env=dict(os.environ, XMLRPC_MS="200")
    )
    assert p.returncode == 1, p.stderr[-2000:]
    assert xmlrpc.client.ServerProxy(xmlrpc_server).peak() >= 9, tool
    assert received["wait"] + received["fail"] >= 120, (tool, received)
    assert rows["wait"][0] <= received["wait"] <= rows["wait"][0] + 10
