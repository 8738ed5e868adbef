"""Shared pieces of the benchmarks: pinned processes, CPU accounting, nginx on core 0."""

import compileall
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from squall.ports import free_port

BENCH = Path(__file__).resolve().parent


def run_measured(cmd, core, env=None, timeout=300, started=None):
    """Runs `cmd` pinned to `core`; returns (output, CPU seconds user+sys, max RSS in MB, exit code).
    `started(proc)`, if given, is called once the process runs (to watch it while it does).

    The CPU time is the generator's own (its threads included), read from wait4's rusage. The max RSS is
    wait4's too, which counts the RSS of this Python process at the fork (Linux carries the high-water
    mark of the memory a process leaves at exec into its rusage): a generator smaller than this process
    reads as this process's size (ws_bench.py reads /proc's VmHWM instead).
    """
    proc = subprocess.Popen(
        ["taskset", "-c", str(core), *map(str, cmd)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        if started is not None:
            started(proc)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, proc.returncode


def headless(tool, file, users, secs, *more):
    """The command of a headless run of locustfile FILE by TOOL (its argv: Locust's, or squall's), all
    USERS started at once, for SECS seconds, then MORE (its host, what it writes)."""
    return [*tool, "-f", file, "--headless", "-u", users, "-r", users, "-t", f"{secs}s", *more]


def median(values):
    return statistics.median(values)


NGINX_CONF = """
worker_processes 1;
worker_cpu_affinity {mask};
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
worker_rlimit_nofile 40000;
events {{ worker_connections 30000; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  client_body_temp_path {dir}/body;
  server {{ listen 127.0.0.1:{port} backlog=8192; location / {{ return 200 "hello\\n"; }}
    location /api/ {{ default_type application/json; return 200 '{api_body}'; }} }}
  {tls_server}
}}
"""


# What /api/ answers, to any method: the JSON a REST endpoint returns, which bench/locustfiles/shop*.py
# read (a token for their login, an id and fields for their checks).
API_BODY = '{"id": 42, "token": "t0k3n", "name": "widget", "price": 9.5, "tags": ["a", "b"], "ok": true}'


TLS_SERVER = """server {{ listen 127.0.0.1:{port} ssl http2 backlog=8192; ssl_certificate {dir}/cert.pem;
    ssl_certificate_key {dir}/key.pem; http2_max_concurrent_streams 1000; keepalive_requests 100000000;
    location / {{ return 200 "hello\\n"; }} }}"""


class PinnedNginx:
    """nginx with one worker pinned to `core`, answering `return 200` on a free loopback port; with
    `tls`, also over TLS with HTTP/2 (a self-signed certificate) at `tls_url`."""

    def __init__(self, core=0, tls=False):
        self.dir = Path(tempfile.mkdtemp(prefix="squall-bench-nginx-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        mask = "1".ljust(core + 1, "0")[::-1]
        tls_server = ""
        if tls:
            self.tls_port = free_port()
            self.tls_url = f"https://127.0.0.1:{self.tls_port}/"
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
                    self.dir / "key.pem",
                    "-out",
                    self.dir / "cert.pem",
                ],
                check=True,
                capture_output=True,
            )
            tls_server = TLS_SERVER.format(dir=self.dir, port=self.tls_port)
        conf = NGINX_CONF.format(dir=self.dir, port=self.port, mask=mask, tls_server=tls_server, api_body=API_BODY)
        (self.dir / "nginx.conf").write_text(conf)
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(core), binary, "-p", self.dir, "-c", self.dir / "nginx.conf"]
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def cli(doc, more=None):
    """The flags every benchmark takes (and a benchmark's own: `more(parser)` adds them); installs the
    peers unless --skip-install."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--skip-install", action="store_true")
    if more is not None:
        more(ap)
    args = ap.parse_args()
    if not args.skip_install:
        subprocess.run([BENCH / "peers.sh"], check=True)
    compile_squall()
    return args


def compile_squall():
    """Byte-compiles squall's Python package, as `pip install` does (and did for Locust's). An editable
    install runs from the source tree, and where PYTHONDONTWRITEBYTECODE is set (this machine's shells
    set it) every `squall` command compiled its modules again: 0.2 CPU-s a run (0.45 against 0.30 for a
    100-request `squall bench`, /usr/bin/time), 2-3% of a 10-s benchmark, charged to squall alone.
    Python reads the compiled files whatever that variable says."""
    package = Path(importlib.util.find_spec("squall").origin).parent
    if not compileall.compile_dir(package, quiet=1):
        raise RuntimeError(f"cannot byte-compile {package}")


TITLE = "# Benchmark results"


# A section's notes written by hand (analyses, experiments, rechecks) follow this line; a benchmark that
# rewrites its section keeps them below its new numbers.
NOTES = "<!-- Notes written by hand: the benchmark that rewrites this section keeps them. -->"


def write_section(lines):
    """Replaces one `## ` section of RESULTS.md (its first line), keeping the others and their order,
    and the replaced section's hand-written notes (from NOTES on)."""
    path = BENCH / "RESULTS.md"
    heading, body = lines[0], "\n".join(lines).rstrip() + "\n"
    sections, order = {}, []
    text = path.read_text() if path.exists() else ""
    for chunk in ("\n" + text).split("\n## ")[1:]:
        name = "## " + chunk.splitlines()[0]
        sections[name] = "## " + chunk.rstrip() + "\n"
        order.append(name)
    if heading not in sections:
        order.append(heading)
    elif NOTES in sections[heading]:
        old = sections[heading]
        body += "\n" + old[old.index(NOTES) :]
    sections[heading] = body
    path.write_text(TITLE + "\n\n" + "\n".join(sections[h] for h in order))
    print(path.read_text())
