"""The Ray actor behind each distributed worker: it runs the squall command as a subprocess, exactly as
`--processes` runs a local worker (SQUALL_WORKER="i/n" gives it its share), and relays what the
worker's feed pipe carries (squall.distributed.feed) to the driver when the driver polls.

Why a subprocess rather than the engine inside the actor: the worker is then the same program as a
local run or a `--processes` worker, request for request (its cost per request is identical, which
bench/ray_bench.py measures), the actor's process stays a thin relay that Ray may kill at any time,
and a crash of the worker cannot take the actor's answer about it down too.

A locustfile goes with the run: the driver sends its text (`pack`), and a node that does not have the
same text at the driver's path runs the driver's copy, written under the worker's temporary folder.

Nothing here imports Ray: the driver wraps the class with `ray.remote` (so the module loads, and its
logic is tested, without Ray). The actor keeps only the latest totals and the seconds not yet
polled, so its memory does not grow with the run; a poll costs the driver one small message."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pickle
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from squall.distributed.feed import FEED_ENV, START_ENV

STDERR_LINES = 200  # the worker's last stderr lines kept for the report when it fails
PR_SET_PDEATHSIG = 1


def _prepare_worker() -> None:
    """In the worker, before exec, what it must not inherit from Ray's worker process:
    - the signals Ray's threads block (SIGINT among them): a stop would wait for the end of the run;
    - Ray's niceness (15, so that its workers never starve the raylet): the load generator runs at
      the raylet's priority, as a local run would (without the right to raise it, it stays lower; a
      run measured at nice 15 lost a sixth of its requests per CPU-second to the preemptions);
    and it gets SIGTERM when the actor's process dies (Linux), so that a killed actor leaves no load
    generator behind even before the worker's next feed write fails."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    with contextlib.suppress(OSError, ValueError):
        raylet = int(os.environ.get("RAY_RAYLET_PID", "0"))
        target = os.getpriority(os.PRIO_PROCESS, raylet) if raylet else 0
        os.setpriority(os.PRIO_PROCESS, 0, target)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class Worker:
    """One distributed worker: its subprocess, its feed, its stderr."""

    def __init__(
        self,
        index: int,
        count: int,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        kind: str,
        files: dict[str, str] | None = None,
    ) -> None:
        self.index, self.count, self.kind = index, count, kind
        self.argv, self.extra_env = argv, env
        self.cwd = cwd if os.path.isdir(cwd) else None
        self.tmp = tempfile.mkdtemp(prefix=f"squall-worker{index}-")
        self.shipped = False
        if files and not _present(files):
            self.argv = [*argv, "-f", ",".join(_unpack(files, os.path.join(self.tmp, "locustfiles")))]
            self.shipped = True
        self.result_path = os.path.join(self.tmp, "result.json")
        self.lock = threading.Lock()
        self.points: list[dict[str, Any]] = []
        self.totals: dict[str, Any] | None = None
        self.progress: dict[str, Any] | None = None
        self.records = 0
        self.feed_bytes = 0
        self.client_id: str | None = None  # a locustfile's runner's
        self.reports: list[dict[str, Any]] = []  # its report_to_master data, not yet polled
        self.messages: list[Any] = []  # its messages to the master, not yet polled
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.new_stderr: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.ended: float | None = None
        self.threads: list[threading.Thread] = []

    def where(self) -> dict[str, Any]:
        """Where the actor runs (node, host, pid): the driver waits for every actor's answer, then
        starts the workers together."""
        return {
            "index": self.index,
            "host": socket.gethostname(),
            "node_id": _node_id(),
            "node_ip": _node_ip(),
            "actor_pid": os.getpid(),
        }

    def start(self, start_at: float | None = None) -> dict[str, Any]:
        """Starts the worker (its engine at `start_at`, unix time, with the others'); returns where it
        runs (node, host, pids)."""
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, **self.extra_env)
        env.update({"SQUALL_WORKER": f"{self.index}/{self.count}", "SQUALL_WORKER_RESULT": self.result_path})
        env[FEED_ENV] = str(write_fd)
        if start_at is not None:
            env[START_ENV] = repr(start_at)
        self.started = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "squall", *self.argv],
            stdin=subprocess.PIPE,  # the master's messages (squall.runners.WorkerRunner)
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.cwd,
            pass_fds=(write_fd,),
            preexec_fn=_prepare_worker,
        )
        os.close(write_fd)
        feed = os.fdopen(read_fd, "rb")
        assert self.proc.stderr is not None
        for target, stream in ((self._read_feed, feed), (self._read_stderr, self.proc.stderr)):
            t = threading.Thread(target=target, args=(stream,), daemon=True)
            t.start()
            self.threads.append(t)
        return dict(self.where(), worker_pid=self.proc.pid, started=self.started, shipped=self.shipped)

    def _read_feed(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.points.extend(record.get("timeseries", []))
                self.totals = record.get("totals")
                self.progress = record.get("progress")
                self.client_id = record.get("client_id", self.client_id)
                if record.get("report") is not None:
                    self.reports.append(record["report"])
                self.messages.extend(record.get("messages") or [])
                self.records += 1
                self.feed_bytes += len(line)

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.stderr.append(line)
                self.new_stderr.append(line)

    def poll(self) -> dict[str, Any]:
        """What arrived since the last poll: new seconds, the latest totals (as a mergeable document),
        progress, new stderr lines, and whether the worker has exited (and how)."""
        code = self.proc.poll() if self.proc is not None else None
        if code is not None and self.ended is None:
            self.ended = time.time()
            for t in self.threads:  # the pipes' last lines, read before saying it exited
                t.join(timeout=2.0)
        with self.lock:
            points, self.points = self.points, []
            stderr, self.new_stderr = self.new_stderr, []
            totals, self.totals = self.totals, None
            progress = self.progress
            records, feed_bytes = self.records, self.feed_bytes
            reports, self.reports = self.reports, []
            messages, self.messages = self.messages, []
        answer: dict[str, Any] = {
            "points": points,
            "totals": totals,
            "progress": progress,
            "stderr": stderr,
            "code": code,
            "records": records,
            "feed_bytes": feed_bytes,
            "client_id": self.client_id,
            "reports": reports,
            "messages": messages,
            "time": time.time(),
        }
        answer["bytes"] = len(pickle.dumps(answer))  # about what Ray carries to the driver
        return answer

    def message(self, msg_type: str, data: Any) -> bool:
        """A message from the master to the worker's runner (a line on its stdin); False if it has ended."""
        proc = self.proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return False
        try:
            proc.stdin.write((json.dumps([msg_type, data], default=str) + "\n").encode())
            proc.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def stop(self, signum: int = signal.SIGINT) -> None:
        """Asks the worker to end its run now (it still writes its result)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()

    def result(self) -> dict[str, Any]:
        """After the worker exited: its result document (JSON text, or None), exit code, CPU time and
        the last lines of its stderr; the worker's files are removed."""
        assert self.proc is not None
        code = self.proc.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the worker is this actor's only child
        try:
            with open(self.result_path, encoding="utf-8") as f:
                text: str | None = f.read()
        except OSError:
            text = None
        shutil.rmtree(self.tmp, ignore_errors=True)
        return {
            "code": code,
            "result": text,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "wall_s": (self.ended or time.time()) - self.started,
            "stderr": list(self.stderr),
        }


def pack(paths: list[str]) -> dict[str, str]:
    """The locustfiles of a run (absolute paths) with their text, for workers on other machines."""
    out = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out[path] = f.read()
    return out


def _present(files: dict[str, str]) -> bool:
    """The locustfiles are on this node as the driver has them (the same machine, or a shared disk):
    the worker then runs them where they are, so that what they import next to them is found."""
    for path, text in files.items():
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    return False
        except (OSError, UnicodeDecodeError):
            return False
    return True


def _unpack(files: dict[str, str], into: str) -> list[str]:
    """Writes the driver's locustfiles under `into` (each under its own name; a second file of the
    same name in a folder of its own); returns their paths here."""
    out: list[str] = []
    for i, (path, text) in enumerate(files.items()):
        name = os.path.basename(path)
        folder = into if not any(os.path.basename(p) == name for p in out) else os.path.join(into, str(i))
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, name)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
        out.append(target)
    return out


def _node_id() -> str:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # outside Ray (the tests of this module)
        return ""


def _node_ip() -> str:
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:
        return ""
