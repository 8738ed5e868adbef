"""Locust's users for other protocols, each run by squall and by Locust 2.47 with the same locustfile
against the same real server on 127.0.0.1, whose own count of what it received is the ground truth:
gRPC in its gevent mode through an interceptor (Locust's examples/grpc), locust.contrib.socketio's
SocketIOUser and a Socket.IO user on websocket-client built as locust-plugins' was (python-socketio's
server; under squall both WebSockets are the engine's, `import websocket` being squall's: the server
sees who opened them), locust.contrib.dns's DNSUser (a DNS server on UDP and TCP),
an MqttUser whose own client class names its requests (mosquitto), and locust.contrib.postgres's
PostgresUser (PostgreSQL from apt). For each: the same per-name counts, within the calls in flight when
the run ended (at most one per user), the same failures in the same words, the same exit code. And the
libraries' calls wait cooperatively, as under Locust: N users each blocked 100 ms in the library are in
progress at the server together (its peak), not one after another.

Locust's runs of these files end early, by up to ~3 s of -t (its -t timer is set on gevent's loop clock,
which lags by its start-up: the file's imports), so each tool's counts are checked against the server,
never against the other tool's.

The other contrib modules (mongodb, oai, milvus, qdrant) are in tests/test_contrib_imports.py."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from support import HERE, Mosquitto, free_port, headless, wait_for_port, wait_until

pytestmark = pytest.mark.slow

FILES = HERE / "locustfiles"
SERVERS = HERE / "servers"


def run(tool, file, tmp_path, *args, env=None):
    """FILES/`file` run by `tool` (squall or locust): support.headless's (process, rows, errors)."""
    return headless(tool, FILES / file, tmp_path / tool, *args, env=env)


# The overlap tests: 10 users (all started at once) whose calls each take 100 ms at the server, for 5 s.
# The server's peak shows them in progress together, for both tools. Made one at a time, the calls would
# be 50 at most (10 a second); made together, 80-90 a second (3 tasks of 4 or 5 wait, the others are
# quick): squall's run (which lasts its -t) makes more than 60. (Locust's, shortened, is not counted.)
OVERLAP_SECONDS, OVERLAP_CALLS = 5, 60


def within_in_flight(counted, received, users):
    """A tool counts a call once it returns: at the end of the run up to one call per user was received
    by the server and not counted (stopped mid-call)."""
    return counted <= received <= counted + users


def server(args, port):
    proc = subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready", proc.communicate()
    wait_for_port(port)
    return proc


def stop(proc):
    proc.kill()
    proc.wait()


# gRPC ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grpc_stubs(tmp_path_factory):
    """hello.proto's stubs, made by grpcio-tools as a user makes them."""
    out = tmp_path_factory.mktemp("grpc_stubs")
    proto = SERVERS / "grpc"
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto}", f"--python_out={out}", f"--grpc_python_out={out}",
         proto / "hello.proto"],
        check=True,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def grpc_server(grpc_stubs):
    port = free_port()
    proc = server([SERVERS / "grpc" / "server.py", port, grpc_stubs], port)
    yield f"127.0.0.1:{port}"
    stop(proc)


def grpc_tally(target, stubs):
    """(calls per name, peak in progress) from the server (its Tally call, not counted)."""
    sys.path.insert(0, str(stubs))
    try:
        import grpc
        import hello_pb2
        import hello_pb2_grpc
    finally:
        sys.path.remove(str(stubs))
    with grpc.insecure_channel(target) as channel:
        t = hello_pb2_grpc.HelloServiceStub(channel).Tally(hello_pb2.TallyRequest(), timeout=10)
    return dict(t.calls), t.peak


def grpc_run(tool, grpc_server, grpc_stubs, tmp_path, users, ms, seconds):
    before, _ = grpc_tally(grpc_server, grpc_stubs)
    env = {"GRPC_STUBS": str(grpc_stubs), "GRPC_MS": str(ms)}
    args = ("-H", grpc_server, "-u", users, "-r", 100, "-t", f"{seconds}s")
    p, rows, errors = run(tool, "grpc_hello.py", tmp_path, *args, env=env)
    after, peak = grpc_tally(grpc_server, grpc_stubs)
    received = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    return p, rows, errors, received, peak


def test_grpc_through_an_interceptor_counts_what_the_server_received_as_locust_does(grpc_server, grpc_stubs, tmp_path):
    """`grpc.experimental.gevent.init_gevent()` failed at import under squall's old gevent stand-in ('Hub'
    object has no attribute 'threadpool'); on gevent's own hub the example runs as under Locust. Each call
    is one `grpc` request named by its method; the server's refusals (INVALID_ARGUMENT) are the failures,
    in the same words (the RpcError's repr); exit code 1 for both (failures)."""
    users, out = 3, {}
    for tool in ("squall", "locust"):
        p, rows, errors, received, _ = grpc_run(tool, grpc_server, grpc_stubs, tmp_path, users, 20, 4)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        requests, failures = rows[("grpc", "/hello.HelloService/SayHello")]
        assert requests > 10 and within_in_flight(requests, received["locust"] + received["fail"], users), (
            tool, rows, received)  # fmt: skip
        assert within_in_flight(failures, received["fail"], users) and failures > 2, (tool, rows, received)
        out[tool] = errors
    assert (
        out["squall"]
        == out["locust"]
        == [
            (
                "grpc",
                "/hello.HelloService/SayHello",
                "<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.INVALID_ARGUMENT\n"
                '\tdetails = "the server refuses"\n\tdebug_error_string = "INVALID_ARGUMENT:the server refuses"\n>',
            )
        ]
    )


@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_grpc_calls_of_users_wait_together(grpc_server, grpc_stubs, tmp_path, tool):
    """10 users whose calls take 100 ms at the server: all 10 in progress at once (give or take one
    between two calls: the 10 ms wait and the refused call), and (squall) more calls than one at a time
    allows (OVERLAP_CALLS)."""
    p, rows, _, received, peak = grpc_run(tool, grpc_server, grpc_stubs, tmp_path, 10, 100, OVERLAP_SECONDS)
    assert p.returncode == 1, p.stderr[-2000:]
    assert peak >= 9, (tool, peak)
    assert received["locust"] >= OVERLAP_CALLS or tool == "locust", (tool, received)


def test_a_grpc_server_in_the_load_tests_process_lets_the_run_end_at_its_time_as_in_locust(grpc_stubs, tmp_path):
    """Locust's examples/grpc as written: its server in the load test's process (an init listener's
    gevent.spawn), on a thread pool whose calls time.sleep. squall printed its summary at -t and then
    never exited (issue 41): the pool's threads slept on squall's timers, which stop with the run, and the
    interpreter's exit joined them. Both tools now exit 0 within seconds of -t, each having counted what
    the server received (within the calls in flight at the end)."""
    users, seconds = 2, 3
    for tool in ("squall", "locust"):
        port, tally = free_port(), tmp_path / f"{tool}_tally.json"
        env = {"GRPC_STUBS": str(grpc_stubs), "GRPC_PORT": str(port), "GRPC_MS": "200", "GRPC_TALLY": str(tally)}
        args = ("-H", f"127.0.0.1:{port}", "-u", users, "-r", 100, "-t", f"{seconds}s")
        began = time.monotonic()
        p, rows, errors = run(tool, "grpc_in_process.py", tmp_path, *args, env=env)
        took = time.monotonic() - began
        assert p.returncode == 0 and errors == [], (tool, p.stderr[-2000:])
        assert took < seconds + 10, (tool, took)  # (the file's imports and start-up, not a hang)
        requests, failures = rows[("grpc", "/hello.HelloService/SayHello")]
        received = json.loads(tally.read_text())
        assert requests >= 4 and failures == 0 and within_in_flight(requests, received, users), (tool, rows, received)


# Socket.IO -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def socketio_server():
    port = free_port()
    proc = server([SERVERS / "socketio_server.py", port], port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)


def sio_tally(url):
    with urllib.request.urlopen(f"{url}/tally", timeout=10) as r:
        return json.loads(r.read())


def sio_run(tool, url, tmp_path, users, ms, seconds):
    before = sio_tally(url)
    args = ("-H", url, "-u", users, "-r", 100, "-t", f"{seconds}s")
    p, rows, errors = run(tool, "socketio_chat.py", tmp_path, *args, env={"SIO_MS": str(ms)})
    after = sio_tally(url)
    received = {k: after.get(k, 0) - before.get(k, 0) for k in ("connect", "wait", "send_message")}
    received["ws_opened"] = ws_opened(tool, before, after)
    return p, rows, errors, received, after["peak"]


def ws_opened(tool, before, after):
    """The WebSockets the server saw opened by `tool`'s client between two tallies: squall's engine (its
    handshake's User-Agent says squall; squall.contrib.websocket_client stands for websocket-client), or
    websocket-client itself under Locust (no User-Agent)."""
    agent = "squall" if tool == "squall" else "none"
    opened = {k: v - before["ws_agents"].get(k, 0) for k, v in after["ws_agents"].items()}
    return opened.get(agent, 0) if sum(opened.values()) == opened.get(agent, 0) else -1


def test_socketio_user_counts_what_the_server_received_as_locust_does(socketio_server, tmp_path):
    """locust.contrib.socketio (Locust 2.39) was not importable under squall. Now each tool counts one
    `WS connect` per user, a `WSC wait` per call the server answered, a `WSE send_message` per emit the
    server received, and a `WSR chat_message` per echo that came back (give or take one per user at the
    end); no failures, exit code 0 for both."""
    users = 3
    for tool in ("squall", "locust"):
        p, rows, errors, received, _ = sio_run(tool, socketio_server, tmp_path, users, 20, 4)
        assert p.returncode == 0, (tool, p.stderr[-2000:])
        assert errors == [] and all(f == 0 for _, f in rows.values()), (tool, rows, errors)
        assert rows[("WS", "connect")][0] == received["connect"] == users, (tool, rows, received)
        # python-socketio's client polls first, then upgrades to a WebSocket: the engine's under squall.
        assert received["ws_opened"] == users, (tool, received)
        calls, emits, echoes = (rows[k][0] for k in (("WSC", "wait"), ("WSE", "send_message"), ("WSR", "chat_message")))
        # A call a user is stopped in is counted too (`measure` fires in its `finally`, in both tools),
        # whether or not its message left: up to one per user either way.
        assert calls > 10 and abs(calls - received["wait"]) <= users, (tool, rows, received)
        assert abs(emits - received["send_message"]) <= users, (tool, rows, received)
        assert emits - users <= echoes <= emits, (tool, rows)
        # socketio's `call` emits through the client's `emit`: a `WSE wait` of 0 ms per call too, as in Locust
        assert set(rows) == {
            ("WS", "connect"), ("WSC", "wait"), ("WSE", "wait"), ("WSE", "send_message"), ("WSR", "chat_message")
        }  # fmt: skip
        assert rows[("WSE", "wait")] == rows[("WSC", "wait")], (tool, rows)


def test_a_socketio_user_on_websocket_client_counts_what_the_server_received_as_locust_does(socketio_server, tmp_path):
    """locust-plugins' SocketIOUser (up to locust-plugins 4; 5.0.3, the pinned one, no longer has it) as its
    users ran it: a websocket-client connection per user, read by a greenlet of the user's own
    (`gevent.spawn`) that fires a `WSR` request per message, never closed nor stopped
    (tests/locustfiles/socketio_wsclient.py). Each tool counts per user one `40 connect` sent and one
    `0 open` and `40 connected` received, a `42 send_message` per emit the server received (give or take
    one per user stopped between the report and the send) and a `42 chat_message` per echo that came back
    (most of them); no failures, exit code 0, the run over within seconds of -t though the greenlets still
    wait in recv."""
    users, seconds = 3, 3
    for tool in ("squall", "locust"):
        before = sio_tally(socketio_server)
        began = time.monotonic()
        args = ("-H", socketio_server, "-u", users, "-r", 100, "-t", f"{seconds}s")
        p, rows, errors = run(tool, "socketio_wsclient.py", tmp_path, *args)
        took = time.monotonic() - began
        after = sio_tally(socketio_server)
        received = {k: after.get(k, 0) - before.get(k, 0) for k in ("connect", "send_message")}
        assert ws_opened(tool, before, after) == users, (tool, before, after)  # squall's: the engine's
        assert p.returncode == 0 and errors == [], (tool, p.stderr[-2000:])
        assert took < seconds + 10, (tool, took)  # (the file's imports and start-up, not a hang)
        assert all(f == 0 for _, f in rows.values()), (tool, rows)
        assert set(rows) == {
            ("WSS", "40 connect"), ("WSR", "0 open"), ("WSR", "40 connected"), ("WSS", "42 send_message"),
            ("WSR", "42 chat_message"),
        }, (tool, rows)  # fmt: skip
        assert received["connect"] == users, (tool, received)
        assert all(rows[k][0] == users for k in (("WSS", "40 connect"), ("WSR", "0 open"), ("WSR", "40 connected")))
        emits, echoes = rows[("WSS", "42 send_message")][0], rows[("WSR", "42 chat_message")][0]
        assert emits > 20 and 0 <= emits - received["send_message"] <= users, (tool, rows, received)
        # No call waits on the server here: the echoes of the last emits may still be on their way when the
        # run ends, as many as the server lags behind (so not one per user at most, as above).
        assert emits // 2 < echoes <= received["send_message"], (tool, rows, received)


@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_socketio_calls_of_users_wait_together(socketio_server, tmp_path, tool):
    """10 users whose `call`s take 100 ms at the server: 10 in progress at once (give or take one between
    two calls), and more calls than one at a time allows (OVERLAP_CALLS)."""
    p, _, _, received, peak = sio_run(tool, socketio_server, tmp_path, 10, 100, OVERLAP_SECONDS)
    assert p.returncode == 0, p.stderr[-2000:]
    assert peak >= 9, (tool, peak)
    assert received["wait"] >= OVERLAP_CALLS or tool == "locust", (tool, received)


# DNS -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dns_server():
    port = free_port()
    proc = server([SERVERS / "dns_server.py", port], port)
    yield port
    stop(proc)


def dns_tally(port):
    import dns.message
    import dns.query
    import dns.rdatatype

    reply = dns.query.tcp(dns.message.make_query("tally.squall.test", dns.rdatatype.TXT), "127.0.0.1", 10, port)
    tally = json.loads(b"".join(reply.answer[0][0].strings))
    return tally, tally.pop("peak")


def dns_run(tool, port, tmp_path, users, ms, seconds):
    before, _ = dns_tally(port)
    args = ("-u", users, "-r", 100, "-t", f"{seconds}s")
    p, rows, errors = run(tool, "dns_lookup.py", tmp_path, *args, env={"DNS_PORT": str(port), "DNS_MS": str(ms)})
    after, peak = dns_tally(port)
    received = {k: n - before.get(k, 0) for k, n in after.items()}
    return p, rows, errors, received, peak


def test_dns_user_counts_what_the_server_received_as_locust_does(dns_server, tmp_path):
    """locust.contrib.dns (Locust 2.42) was not importable under squall. Each dns.query function the file
    calls is a `DNS` request named by the function (or `name=`): `udp` the delayed name, `tcp` the prompt
    one, `no answer` the NXDOMAIN, a failure in Locust's words; exit code 1 (failures) for both."""
    users, out = 3, {}
    for tool in ("squall", "locust"):
        p, rows, errors, received, _ = dns_run(tool, dns_server, tmp_path, users, 20, 4)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        assert set(rows) == {("DNS", "udp"), ("DNS", "tcp"), ("DNS", "no answer")}, (tool, rows)
        for name, key in (("udp", "d20.squall.test./udp"), ("tcp", "d0.squall.test./tcp")):
            assert rows[("DNS", name)][1] == 0 and within_in_flight(rows[("DNS", name)][0], received[key], users)
        missing, failed = rows[("DNS", "no answer")]
        assert missing == failed > 2 and within_in_flight(missing, received["missing.squall.test./udp"], users)
        assert rows[("DNS", "udp")][0] > 10, (tool, rows)
        out[tool] = errors
    assert out["squall"] == out["locust"] == [("DNS", "no answer", "LocustError('No answer in DNS response')")]


@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_dns_queries_of_users_wait_together(dns_server, tmp_path, tool):
    """10 users whose UDP queries take 100 ms at the server: 10 in progress at once (give or take one), and
    more of them than one at a time allows (OVERLAP_CALLS)."""
    p, _, _, received, peak = dns_run(tool, dns_server, tmp_path, 10, 100, OVERLAP_SECONDS)
    assert p.returncode == 1, p.stderr[-2000:]
    assert peak >= 9, (tool, peak)
    assert received["d100.squall.test./udp"] >= OVERLAP_CALLS or tool == "locust", (tool, received)


# MQTT with a client class of the file's own -----------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    yield b
    b.stop()


def test_an_mqtt_client_class_of_the_files_own_names_the_requests(broker, tmp_path):
    """Locust's examples/mqtt/locustfile_custom_mqtt_client.py: its MqttClient subclass's
    `_generate_event_name` was ignored (squall named the publishes `publish:0:hello/locust`); now both
    tools name them `mqtt:publish:0`, with one `connect` per user, and count what a subscriber received
    (QoS 0: counted once the broker read the message, at most one per user in flight at the end)."""
    users = 3
    for tool in ("squall", "locust"):
        received = tmp_path / f"{tool}.received"
        with received.open("w") as out:
            sub = subprocess.Popen(
                ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-t", "hello/locust", "-q", "0"],
                stdout=out,
            )
        try:
            time.sleep(0.5)  # subscribed
            args = ("-u", users, "-r", users, "-t", "4s")
            p, rows, errors = run(
                tool, "mqtt_custom_client.py", tmp_path, *args, env={"TEST_MQTT_PORT": str(broker.port)}
            )
            time.sleep(0.5)  # the last deliveries
        finally:
            stop(sub)
        assert p.returncode == 0, (tool, p.stderr[-2000:])
        assert set(rows) == {("MQTT", "connect"), ("MQTT", "mqtt:publish:0")}, (tool, rows)
        assert rows[("MQTT", "connect")] == (users, 0) and errors == [], (tool, rows, errors)
        published, failed = rows[("MQTT", "mqtt:publish:0")]
        delivered = len(received.read_text().splitlines())
        assert failed == 0 and published > 10 and within_in_flight(published, delivered, users), (tool, rows, delivered)


# PostgreSQL ------------------------------------------------------------------------------------------


def postgres_bin():
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    assert versions, "PostgreSQL is not installed: scripts/install-system-deps.sh installs it"
    return versions[-1].parent


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of its own on a free loopback port (trust authentication), as its own user when
    the tests run as root (postgres refuses root); yields its connection string."""
    import psycopg

    bin_dir = postgres_bin()
    data = Path(tempfile.mkdtemp(prefix="squall-pg-"))
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(data, "postgres")
    subprocess.run(
        [*as_user, bin_dir / "initdb", "-D", data / "db", "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    proc = subprocess.Popen(
        [*as_user, bin_dir / "postgres", "-D", data / "db", "-h", "127.0.0.1", "-p", str(port), "-k", data,
         "-c", "max_connections=50", "-c", "fsync=off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    conn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"

    def ready():
        try:
            psycopg.connect(conn).close()
            return True
        except psycopg.OperationalError:
            return False

    try:
        wait_until(ready, "PostgreSQL accepting connections", proc=proc)
        with psycopg.connect(conn, autocommit=True) as c:
            c.execute("CREATE SEQUENCE waits")
            c.execute("CREATE SEQUENCE refusals")
        yield conn
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


def pg_tally(conn):
    """The queries the server ran: each sequence's calls so far (nextval is not rolled back)."""
    import psycopg

    with psycopg.connect(conn, autocommit=True) as c:
        return {
            s: c.execute(f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {s}").fetchone()[0]
            for s in ("waits", "refusals")
        }


class PeakQueries:
    """Samples the server's sessions running the sleeping query every 10 ms (pg_stat_activity): the most
    at once is how many users were blocked in psycopg together."""

    def __init__(self, conn):
        self.conn, self.peak, self._stop = conn, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        import psycopg

        with psycopg.connect(self.conn, autocommit=True) as c:
            while not self._stop.wait(0.01):
                (n,) = c.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%nextval(''waits'')%'"
                    " AND pid <> pg_backend_pid()"
                ).fetchone()
                self.peak = max(self.peak, n)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


def pg_run(tool, conn, tmp_path, users, ms, seconds):
    before = pg_tally(conn)
    args = ("-u", users, "-r", 100, "-t", f"{seconds}s")
    with PeakQueries(conn) as peak:
        p, rows, errors = run(tool, "postgres_query.py", tmp_path, *args, env={"PG_CONN": conn, "PG_MS": str(ms)})
    after = pg_tally(conn)
    return p, rows, errors, {s: after[s] - before[s] for s in after}, peak.peak


def test_postgres_user_counts_what_the_server_ran_as_locust_does(postgres, tmp_path):
    """locust.contrib.postgres was not importable under squall. Each query is an `execute_query` request
    of type postgres_success, or postgres_failure with the server's error; the server's sequences count
    the queries it ran. Exit code 1 (failures) for both, the same error."""
    users, out = 3, {}
    for tool in ("squall", "locust"):
        p, rows, errors, ran, _ = pg_run(tool, postgres, tmp_path, users, 20, 4)
        assert p.returncode == 1, (tool, p.stderr[-2000:])
        assert set(rows) == {("postgres_success", "execute_query"), ("postgres_failure", "execute_query")}, rows
        ok, ok_failed = rows[("postgres_success", "execute_query")]
        refused, refused_failed = rows[("postgres_failure", "execute_query")]
        assert ok_failed == 0 and ok > 10 and within_in_flight(ok, ran["waits"], users), (tool, rows, ran)
        assert refused == refused_failed > 2 and within_in_flight(refused, ran["refusals"], users), (tool, rows, ran)
        out[tool] = errors
    assert (
        out["squall"] == out["locust"] == [("postgres_failure", "execute_query", "DivisionByZero('division by zero')")]
    )


@pytest.mark.parametrize("tool", ["squall", "locust"])
def test_postgres_queries_of_users_wait_together(postgres, tmp_path, tool):
    """10 users whose queries sleep 100 ms in the server: 10 running at once by the server's own view
    (pg_stat_activity sampled every 10 ms: 9 at least, a sample may fall between two queries of a
    user), and more queries than one at a time allows (OVERLAP_CALLS)."""
    p, _, _, ran, peak = pg_run(tool, postgres, tmp_path, 10, 100, OVERLAP_SECONDS)
    assert p.returncode == 1, p.stderr[-2000:]
    assert peak >= 9, (tool, peak)
    assert ran["waits"] >= OVERLAP_CALLS or tool == "locust", (tool, ran)
