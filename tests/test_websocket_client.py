"""Locustfiles on websocket-client (`import websocket`), unchanged, with their WebSocket in squall's engine
(squall.contrib.websocket_client), run by squall and by Locust 2.47 (websocket-client itself) against the
same counting server (tests/servers/ws_server.py). The server's counts are the ground truth: what each
tool sent and received, and who opened each connection (its handshake's User-Agent: the engine's says
`squall`, websocket-client's has none). For each file: the same statistics rows in both tools, each tool's
counts the server's (within the calls in flight when the run ended, at most one a user and connection),
the same failures in the same words."""

import time
from pathlib import Path

import pytest

from support import headless, ws_counts

pytestmark = pytest.mark.slow

FILE = Path(__file__).parent / "locustfiles" / "ws_client.py"
ECHO = Path(__file__).parents[1] / "bench" / "locustfiles" / "ws_echo.py"


def run(tool, ws, tmp_path, user_class, users, seconds, file=FILE, host=None, env=None):
    """`file`'s `user_class` run by `tool` (squall or locust), headless; returns (process, {(type, name):
    (requests, failures)} from its final JSON, sorted [(type, name, error)] of its failures CSV, what the
    server counted meanwhile, the seconds the run took)."""
    before = ws_counts(ws)
    args = [*([user_class] if user_class else []), "-H", host or f"ws://{ws}", "-u", users, "-r", 100]
    began = time.monotonic()
    p, rows, errors = headless(tool, file, tmp_path / tool, *args, "-t", f"{seconds}s", env=env)
    took = time.monotonic() - began
    after = ws_counts(ws)
    seen = {k: v - before[k] for k, v in after.items() if k != "agents"}
    seen["agents"] = {k: v - before["agents"].get(k, 0) for k, v in after["agents"].items()}
    return p, rows, errors, seen, took


def opened_by(seen, tool):
    """The connections the server saw opened by `tool`'s client: the engine's (squall) or websocket-client's."""
    return seen["agents"].get("squall" if tool == "squall" else "none", 0)


def test_two_connections_a_user_echo_in_the_engine_as_the_server_counts_and_as_locust_counts(ws, tmp_path):
    users = 3
    for tool in ("squall", "locust"):
        p, rows, errors, seen, _ = run(tool, ws, tmp_path, "Echo", users, 3)
        assert p.returncode == 0 and errors == [], (tool, p.stderr[-2000:], errors)
        assert set(rows) == {("WS", "echo text"), ("WS", "echo binary")}, (tool, rows)
        # Two connections a user, each opened by the tool's own client: squall's in the engine.
        assert seen["connections"] == opened_by(seen, tool) == 2 * users, (tool, seen)
        texts, binaries = rows[("WS", "echo text")][0], rows[("WS", "echo binary")][0]
        # Each exchange is one message the server received and answered; a user stopped mid-exchange
        # sent one that is not counted (one per user at most).
        assert texts > 50 and 0 <= seen["received"] - (texts + binaries) <= users, (tool, rows, seen)
        assert 0 <= texts - binaries <= users, (tool, rows)  # (text then binary, in each task)


def test_the_unchanged_bench_file_runs_in_the_engine(ws, tmp_path):
    """bench/locustfiles/ws_echo.py (Locust's peer in bench/ws_bench.py), as it is: its connections are
    the engine's, its exchanges what the server echoed."""
    users = 2
    p, rows, errors, seen, _ = run("squall", ws, tmp_path, None, users, 2, file=ECHO, host=f"ws://{ws}/echo")
    assert p.returncode == 0 and errors == [], p.stderr[-2000:]
    assert seen["connections"] == opened_by(seen, "squall") == users, seen
    (echoes, failures), *_ = rows.values()
    assert set(rows) == {("WS", "echo")} and failures == 0 and echoes > 50
    assert 0 <= seen["received"] - echoes <= users, (rows, seen)


def test_a_greenlet_receives_while_the_task_sends_on_one_connection(ws, tmp_path):
    """The reading greenlet waits in recv all the time: a send that waited for it to finish would never
    go out (the echo it waits for comes after the send). Every send is a message the server received,
    every receive an echo it sent (give or take the ones in flight at the end)."""
    users = 3
    for tool in ("squall", "locust"):
        p, rows, errors, seen, _ = run(tool, ws, tmp_path, "Duplex", users, 3)
        assert p.returncode == 0 and errors == [], (tool, p.stderr[-2000:])
        sends, receives = rows[("WSS", "ping")][0], rows[("WSR", "echo")][0]
        assert set(rows) == {("WSS", "ping"), ("WSR", "echo")}, (tool, rows)
        assert seen["connections"] == opened_by(seen, tool) == users, (tool, seen)
        # A send is counted once `send` returned: a user stopped in it may have sent one more.
        assert sends > 100 and 0 <= seen["received"] - sends <= users, (tool, rows, seen)
        assert 0 <= seen["replies"] - receives <= users, (tool, rows, seen)


@pytest.mark.serial  # receive times against the timeout: a neighbour's load would move them
def test_a_receive_that_times_out_raises_websockets_timeout_exception_as_in_locust(ws, tmp_path):
    users, out = 2, {}
    for tool in ("squall", "locust"):
        p, rows, errors, seen, _ = run(tool, ws, tmp_path, "Silent", users, 2)
        assert p.returncode == 1, (tool, p.stderr[-2000:])  # (failures: exit code 1, in both)
        requests, failures = rows[("WSR", "silent")]
        assert requests == failures and requests >= users * 3, (tool, rows)  # 2 s of 0.2 s waits
        assert 0 <= seen["received"] - requests <= users, (tool, rows, seen)
        out[tool] = errors
    assert out["squall"] == out["locust"] == [("WSR", "silent", "WebSocketTimeoutException('Connection timed out')")]


def test_a_server_close_is_an_empty_message_then_a_closed_connection_as_in_locust(ws, tmp_path):
    users, out = 2, {}
    for tool in ("squall", "locust"):
        p, rows, errors, seen, _ = run(tool, ws, tmp_path, "Closer", users, 2)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        frames, after = rows[("WSR", "close frame")], rows[("WSR", "after the close")]
        # Each close the server sent was received as "" (connected False), then the next recv failed (but
        # for users stopped between the two: one each at most; the second recv waits on a socket in Locust).
        assert frames[0] > 10 and frames[1] == 0 and after[0] == after[1], (tool, rows)
        assert frames[0] - users <= after[0] <= frames[0], (tool, rows)
        assert 0 <= seen["closes"] - frames[0] <= users and seen["connections"] == opened_by(seen, tool), (tool, seen)
        out[tool] = sorted(set(errors))
    assert (
        out["squall"]
        == out["locust"]
        == [("WSR", "after the close", "WebSocketConnectionClosedException('Connection to remote host was lost.')")]
    )


def test_a_backlog_past_the_inbox_is_kept_whole_and_in_order(ws, tmp_path):
    users = 2
    p, rows, errors, seen, _ = run("squall", ws, tmp_path, "Backlog", users, 3)
    assert p.returncode == 0 and errors == [], (p.stderr[-2000:], errors)
    assert rows == {("WSR", "3000 pushed"): (users, 0)} and seen["pushed"] == 3000 * users, (rows, seen)


def test_users_waiting_in_recv_without_a_timeout_stop_on_time(ws, tmp_path):
    users, seconds = 3, 2
    p, rows, errors, seen, took = run("squall", ws, tmp_path, "Stuck", users, seconds)
    assert p.returncode == 0 and rows == {} and errors == [], p.stderr[-2000:]
    assert took < seconds + 10  # (start-up and exit on a loaded host, not a hang)
    assert seen["received"] == seen["connections"] == opened_by(seen, "squall") == users, seen


def test_squall_websocket_library_keeps_websocket_clients_own(ws, tmp_path):
    """The opt-out: with SQUALL_WEBSOCKET=library, `import websocket` is websocket-client's, its
    connections Python's own (no User-Agent in their handshakes), and the file runs as before."""
    users = 2
    p, rows, errors, seen, _ = run("squall", ws, tmp_path, "Echo", users, 2, env={"SQUALL_WEBSOCKET": "library"})
    assert p.returncode == 0 and errors == [], p.stderr[-2000:]
    assert seen["connections"] == opened_by(seen, "locust") == 2 * users, seen
    assert rows[("WS", "echo text")][0] > 10
