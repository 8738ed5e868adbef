"""Real servers on 127.0.0.1 for the tests, and a way to run the squall command."""

import ast
import contextlib
import csv
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from squall.ports import free_port

HERE = Path(__file__).parent


def squall_get(url, data=None):
    """The body at `url` (a test server's own endpoint, such as the odd server's ground truth); POSTs
    `data` if given."""
    import urllib.request

    with urllib.request.urlopen(url, data=data, timeout=10) as resp:
        return resp.read()


def sent(base):
    """What an event-stream test server (sse_server.py, sse_h2_server.py) sent since it was last asked."""
    return json.loads(squall_get(base + "/__sent"))


def ws_counts(ws):
    """What ws_server.py at `ws` (host:port) received and sent so far."""
    return json.loads(squall_get(f"http://{ws}/__counts"))


def self_signed(workdir):
    """A throwaway certificate for localhost: workdir/cert.pem and workdir/key.pem."""
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-keyout",
            workdir / "key.pem",
            "-out",
            workdir / "cert.pem",
        ],
        check=True,
        capture_output=True,
    )


def free_ports(n):
    """`n` different free ports: free_port's picks are each free when checked, not bound, so two picks
    may be the same port (nginx then refuses its config: "a duplicate listen", seen once in make test)."""
    ports = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def serves(proc, ports, name, why, timeout=30.0):
    """Waits until the server `proc` listens on every port: True, or False if it exits first. Past
    `timeout` it is killed and the error says what it said (`why()`)."""
    deadline = time.monotonic() + timeout
    for port in ports:
        while not listening(port):
            if proc.poll() is not None:
                return False
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout:.0f} s: {why()}")
            time.sleep(0.05)
    return True


def last_lines(paths, n, none):
    """What a server said: the last `n` lines of its files, newest first, on one line (`none` if empty)."""
    said = [line for path in paths if path.exists() for line in path.read_text().splitlines()]
    return " | ".join(reversed(said[-n:])) or none


def wait_for_port(port, timeout=10.0):
    """Waits until something listens on 127.0.0.1:`port` (a server the test started)."""
    wait_until(lambda: listening(port), f"listener on 127.0.0.1:{port}", timeout=timeout)


def squall(*args, timeout=120, core=None, **kw):
    """Runs `squall ARGS` to completion (on one core if given); returns the CompletedProcess (text mode)."""
    return subprocess.run(
        [*pinned(core), sys.executable, "-m", "squall", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def wait_until(condition, what, proc=None, timeout=30):
    """Polls `condition` until true: a test's sync point (squall has started, the server has seen
    requests) that holds however slowly a starved host runs. Fails early if `proc` exits."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc is None or proc.poll() is None, (f"exited before {what}", proc.communicate())
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


def squall_process(*args, **kw):
    """`squall ARGS` started, its output piped unless `stdout` or `stderr` say where (a file read while it runs)."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.Popen([sys.executable, "-m", "squall", *map(str, args)], text=True, **{**pipes, **kw})


NGINX_CONF = """
# The workers run as the tests' user (ignored unless that is root), so that they can write PUTs to /put/.
user {user};
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
worker_rlimit_nofile 30000;
events {{ worker_connections 20000; }}
http {{
  # combined, then the arrival time to the millisecond and the connection's serial number (ground truth
  # for arrival gaps and connection counts).
  log_format timed '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent $msec $connection';
  access_log {dir}/access.log timed;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  keepalive_requests 1000000;
  # Every TLS listener below serves the same self-signed certificate.
  ssl_certificate {dir}/cert.pem;
  ssl_certificate_key {dir}/key.pem;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    listen 127.0.0.1:{tls_port} ssl http2;
    listen 127.0.0.1:{h2c_port} http2;
    location / {{ return 200 "hello\\n"; }}
    location /header {{ return 200 "$http_x_squall"; }}
    location /status/500 {{ return 500 "boom\\n"; }}
    location /echo {{ client_body_buffer_size 1m; return 200 "$request_method $content_length\\n"; }}
    # WebDAV PUT: the body lands in {dir}/put/NAME, whose size is what nginx received.
    location /put/ {{ root {dir}; dav_methods PUT; create_full_put_path on; client_max_body_size 10m; }}
    location /status/418 {{ return 418 "teapot\\n"; }}
    location /cookies {{ add_header Set-Cookie "a=1; Path=/"; add_header Set-Cookie "b=2"; return 200 "set\\n"; }}
  }}
  # HTTP/2 connections that take 4 streams at a time.
  server {{
    listen 127.0.0.1:{narrow_port} ssl http2;
    http2_max_concurrent_streams 4;
    location / {{ return 200 "hello\\n"; }}
  }}
  # HTTP/2 connections that end with GOAWAY after 50 requests each.
  server {{
    listen 127.0.0.1:{goaway_port} ssl http2;
    keepalive_requests 50;
    location / {{ return 200 "hello\\n"; }}
    location /cookies {{ add_header Set-Cookie "a=1; Path=/"; add_header Set-Cookie "b=2"; return 200 "set\\n"; }}
    location /echo {{ client_body_buffer_size 1m; return 200 "$request_method $content_length\\n"; }}
  }}
}}
"""


class Nginx:
    """nginx from apt on free loopback ports: plain HTTP/1.1, and TLS with HTTP/2 (self-signed)."""

    def __init__(self, workdir: Path):
        self.dir = workdir
        self_signed(workdir)
        # A port taken between free_port's check and nginx's bind ends this nginx: try fresh ports.
        for _ in range(3):
            if self._start():
                return
        raise RuntimeError(f"nginx did not start: {self._why()}")

    def _start(self):
        """Starts nginx on five fresh ports; True once all of them listen, False if a port was taken."""
        self.port, self.tls_port, self.h2c_port, self.goaway_port, self.narrow_port = ports = free_ports(5)
        self.url = f"http://127.0.0.1:{self.port}"
        self.tls_url = f"https://127.0.0.1:{self.tls_port}"
        self.h2c_url = f"http://127.0.0.1:{self.h2c_port}"
        self.goaway_url = f"https://127.0.0.1:{self.goaway_port}"
        self.narrow_url = f"https://127.0.0.1:{self.narrow_port}"
        (self.dir / "nginx.conf").write_text(
            NGINX_CONF.format(
                user=getpass.getuser(),
                dir=self.dir,
                port=self.port,
                tls_port=self.tls_port,
                h2c_port=self.h2c_port,
                goaway_port=self.goaway_port,
                narrow_port=self.narrow_port,
            )
        )
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        # This try's words only: an earlier try's "Address already in use" must not decide this one's fate.
        (self.dir / "error.log").unlink(missing_ok=True)
        with (self.dir / "nginx.stderr").open("w") as stderr:
            self.proc = subprocess.Popen(
                [binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")], stderr=stderr
            )
        if serves(self.proc, ports, "nginx", self._why):
            return True
        if "Address already in use" in self._why():
            return False
        raise RuntimeError(f"nginx exited with {self.proc.returncode}: {self._why()}")

    def _why(self):
        return last_lines([self.dir / "nginx.stderr", self.dir / "error.log"], 6, "nothing in its stderr or error log")

    def requests_logged(self):
        """Requests nginx has logged since the last reset (access log lines)."""
        log = self.dir / "access.log"
        time.sleep(0.2)  # nginx writes each line as the request ends
        return sum(1 for _ in log.open()) if log.exists() else 0

    def log(self):
        """(arrival time in seconds, connection number) of each request logged since the last reset."""
        time.sleep(0.2)
        out = []
        for line in (self.dir / "access.log").read_text().splitlines():
            msec, conn = line.rsplit(" ", 2)[1:]
            out.append((float(msec), int(conn)))
        return out

    def reset_log(self):
        (self.dir / "access.log").write_text("")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def pinned(core):
    """The command prefix that runs a process on one core (None: anywhere)."""
    return [] if core is None or not shutil.which("taskset") else ["taskset", "-c", str(core)]


class OddServer:
    def __init__(self, core=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [*pinned(core), sys.executable, str(HERE / "servers" / "odd_server.py"), str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def served(self, path="/ok"):
        """Requests served for `path` so far."""
        return self._ask("/__counts").get(path, 0)

    def open_connections(self):
        """Client connections open now (besides the one asking)."""
        return self._ask("/__open")

    def _ask(self, path):
        import json
        import urllib.request

        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            return json.loads(resp.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Mosquitto:
    """mosquitto from apt on a free loopback port, with its own config (and a password file when asked).

    The config is the package default but for the listener and `max_queued`: by default mosquitto drops
    QoS 1/2 messages for a subscriber with 1000 queued, which a moment of CPU starvation on a shared
    machine can reach at 10,000 msg/s."""

    def __init__(self, workdir: Path, users=None, port=None, tls=False, max_queued=None, extra=()):
        self.dir = workdir
        self.port = port or free_port()
        self.url = f"{'mqtts' if tls else 'mqtt'}://127.0.0.1:{self.port}"
        # As root, mosquitto would switch to its own user, who cannot read the test's private directory.
        # The default log types plus subscriptions, which tests wait for (`wait_for_log`).
        lines = [
            f"listener {self.port} 127.0.0.1",
            "persistence false",
            f"user {getpass.getuser()}",
            f"log_dest file {workdir / 'mosquitto.log'}",
            *(f"log_type {t}" for t in ("error", "warning", "notice", "information", "subscribe")),
        ]
        if max_queued is not None:
            lines.append(f"max_queued_messages {max_queued}")
        lines += list(extra)
        if tls:
            self_signed(workdir)
            lines += [f"certfile {workdir / 'cert.pem'}", f"keyfile {workdir / 'key.pem'}"]
        if users:
            pw = workdir / "passwords"
            pw.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", pw, user, password], check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        (workdir / "mosquitto.conf").write_text("\n".join(lines) + "\n")
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.proc = subprocess.Popen([binary, "-c", str(workdir / "mosquitto.conf")], stderr=subprocess.DEVNULL)
        if not serves(self.proc, [self.port], "mosquitto", self._said):
            raise RuntimeError(f"mosquitto exited with {self.proc.returncode}: {self._said()}")

    def _said(self):
        return last_lines([self.dir / "mosquitto.log"], 4, "nothing in its log")

    def wait_for_log(self, pattern, count=1, timeout=30):
        """Until the broker's log has `count` lines matching the regex `pattern` (a client connected
        as ..., a subscription ...): a test's sync point that holds however slowly the host runs."""
        log = self.dir / "mosquitto.log"
        wait_until(
            lambda: sum(1 for line in log.read_text().splitlines() if re.search(pattern, line)) >= count,
            f"{count} mosquitto log lines like {pattern!r}",
            timeout=timeout,
        )

    def stop(self, kill=False):
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
        self.proc.wait(10)


def needs_locust():
    """Skips the calling test without Locust. Never imports it: Locust patches the interpreter with
    gevent on import (ssl recursion, deadlocked threads), so it only ever runs in its own processes."""
    import importlib.util

    import pytest

    if importlib.util.find_spec("locust") is None:
        pytest.skip("Locust is not installed")


@contextlib.contextmanager
def serving(script, *args):
    """tests/servers/SCRIPT on a free loopback port (its first argument, then ARGS), in a process of its
    own (threads left in pytest's process deadlock a later import of gevent): yields the port once the
    server says "ready", kills it at the end."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "servers" / script), str(port), *map(str, args)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield port
    finally:
        proc.kill()
        proc.wait()


class CountingApp:
    """tests/servers/MODULE.py's FastAPI `app` under uvicorn on a free port (tried again if the port was
    taken meanwhile), counting what it receives by route and status (tests/servers/_counting.py)."""

    def __init__(self, module):
        uvicorn = Path(sys.executable).parent / "uvicorn"
        for _ in range(3):
            port = free_port()
            command = [uvicorn, "--app-dir", HERE / "servers", f"{module}:app", "--port", str(port)]
            self.proc = subprocess.Popen(
                [*command, "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            self.url = f"http://127.0.0.1:{port}"
            try:
                wait_until(self._serves, f"{module}'s app", proc=self.proc, timeout=30)
                return
            except AssertionError:
                self.stop()
        raise RuntimeError(f"{module}'s app did not start")

    def _serves(self):
        try:
            squall_get(self.url + "/__counts")
            return True
        except OSError:
            return False

    def counts(self):
        return route_counts(self.url)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def route_counts(url):
    """What the CountingApp at `url` has received so far: {(method, route template, status): requests}."""
    return {(m, p, s): n for m, p, s, n in json.loads(squall_get(url + "/__counts"))}


def counted_between(before, after):
    """What a CountingApp counted between two reads of `counts()`: {(method, route, status): requests}."""
    return {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0) > 0}


def well_formed(path):
    """A generated locustfile (`squall import`) parses, passes ruff's default lint and is laid out as
    `ruff format` would (line length 88: --isolated, whatever configuration is around it); its text."""
    ruff = Path(sys.executable).parent / "ruff"
    ruff = str(ruff) if ruff.exists() else shutil.which("ruff")
    text = Path(path).read_text()
    ast.parse(text)
    assert ruff, "ruff is missing (requirements/dev.txt pins it)"
    lint = subprocess.run([ruff, "check", "--isolated", path], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    layout = subprocess.run([ruff, "format", "--isolated", "--diff", path], capture_output=True, text=True)
    assert layout.returncode == 0, layout.stdout + layout.stderr
    return text


def one_line_error(p, expected):
    """`squall import` refused its input as a usage error: exit 2, one line naming `expected`, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("squall import: error: "), p.stderr
    assert expected in lines[0], lines[0]


FINAL_FAILURES = HERE / "locustfiles" / "final_failures.py"


def headless(tool, file, prefix, *args, env=None, timeout=90):
    """`file` run by `tool` (squall, or Locust from this Python), headless with `--csv prefix --json` and
    `args`; returns (process, {(type, name): (requests, failures)} of its final JSON, sorted [(type, name,
    error)] of its failures at exit). Locust's --csv files are rewritten once a second, not at exit, so
    its failures come from final_failures.py loaded beside the file; squall's from its failures CSV."""
    cmd = ["-f", file, "--headless", "--csv", prefix, "--json", *args]
    env = dict(os.environ, **(env or {}))
    if tool == "squall":
        p, failures = squall(*cmd, timeout=timeout, env=env), f"{prefix}_failures.csv"
    else:
        failures = env["FINAL_FAILURES"] = f"{prefix}_final_failures.csv"
        cmd[1] = f"{file},{FINAL_FAILURES}"
        locust = [sys.executable, "-m", "locust", *map(str, cmd)]
        p = subprocess.run(locust, capture_output=True, text=True, timeout=timeout, env=env)
    assert "Traceback" not in p.stderr, (tool, p.stderr[-3000:])
    rows = {(r["method"], r["name"]): (r["num_requests"], r["num_failures"]) for r in json.loads(p.stdout)}
    with open(failures) as f:
        errors = sorted((r["Method"], r["Name"], r["Error"]) for r in csv.DictReader(f))
    return p, rows, errors
