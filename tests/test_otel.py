"""--otel (Locust 2.42's): the run's metrics and log over OpenTelemetry. Locust 2.47 and squall run the
same file against the same recording server, each exporting to a real OTLP/HTTP receiver
(tests/servers/otlp_receiver.py decodes the protobuf a Collector's otlp receiver takes); what arrives
there is compared: the metrics' names, units and kinds, each request name's histogram count (and its
failures, by `error.type`), the users by class, the log."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from support import free_port, squall
from test_locust_corpus import CORPUS, Recorder, stats

SERVERS = Path(__file__).parent / "servers"
pytest.importorskip("opentelemetry.sdk", reason="--otel needs squall[otel]")


class Receiver:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, str(SERVERS / "otlp_receiver.py"), str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def seen(self):
        with urllib.request.urlopen(self.url + "/__seen", timeout=10) as r:
            return json.loads(r.read())

    def reset(self):
        urllib.request.urlopen(urllib.request.Request(self.url + "/__reset", method="POST"), timeout=10).read()

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def servers():
    recorder, receiver = Recorder(), Receiver()
    yield recorder, receiver
    recorder.stop()
    receiver.stop()


def otel_env(receiver, **extra):
    env = dict(os.environ, PYTHONPATH=str(CORPUS), ITERATIONS="5")
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_METRIC_EXPORT_INTERVAL="250",
        OTEL_TRACES_EXPORTER="none",  # Locust's come from instrumenting requests; squall exports none
    )
    env.update(extra)
    return env


def summary(seen):
    """What the receiver got: {(metric, unit, kind)}, the last histogram count per attributes, the most
    users seen per class, the log's lines, the service's name."""
    kinds, counts, users = set(), {}, {}
    for m in seen["metrics"]:
        kinds.add((m["name"], m["unit"], m["kind"]))
        for p in m["points"]:
            key = tuple(sorted(p["attributes"].items()))
            if m["name"] == "locust.client.duration":
                counts[key] = p["count"]
            elif m["name"] == "locust.users.count":
                users[key] = max(users.get(key, 0), p["value"])
    services = {m["resource"]["service.name"] for m in seen["metrics"]}
    return kinds, counts, users, [line["body"] for line in seen["logs"]], services


@pytest.mark.slow
def test_otel_exports_what_locust_exports(servers, tmp_path):
    recorder, receiver = servers
    out = {}
    for tool in ("locust", "squall"):
        recorder.reset()
        receiver.reset()
        args = ["-f", CORPUS / "otel.py", "--headless", "-u", 2, "-r", 50, "-t", "8s", "-H", recorder.url, "--otel"]
        args += ["--csv", tmp_path / tool, "--only-summary"]
        if tool == "locust":
            cmd = [sys.executable, "-m", "locust", *map(str, args)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=otel_env(receiver))
        else:
            p = squall(*args, env=otel_env(receiver), timeout=90)
        out[tool] = (p, summary(receiver.seen()))
    (lp, (lkinds, lcounts, lusers, llog, lservice)), (sp, (skinds, scounts, susers, slog, sservice)) = (
        out["locust"],
        out["squall"],
    )
    assert sp.returncode == lp.returncode == 1, (lp.stderr[-2000:], sp.stderr[-2000:])
    assert "OpenTelemetry enabled" in lp.stderr and "OpenTelemetry enabled" in sp.stderr
    assert skinds == lkinds == {("locust.client.duration", "s", "histogram"), ("locust.users.count", "{user}", "gauge")}
    assert (
        scounts
        == lcounts
        == {
            (("name", "/otel/read"),): 5,
            (("error.type", "HTTPError"), ("name", "/otel/broken")): 5,
            (("error.type", "CatchResponseError"), ("name", "/otel/write")): 5,
        }
    )
    assert susers == lusers == {(("user_class", "Reader"),): 1, (("user_class", "Writer"),): 1}
    assert sservice == lservice == {"locust"}
    for line in ("Ramping to 2 users at a rate of 50.00 per second", "Shutting down (exit code 1)"):
        assert line in llog and line in slog, (llog, slog)
    # The histogram's counts are the run's requests: squall's own statistics say the same.
    assert stats(tmp_path / "squall")[("GET", "/otel/read")] == (5, 0)


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "needs opentelemetry-exporter-otlp-proto-grpc"),
        ({"OTEL_METRICS_EXPORTER": "prometheus"}, "unknown metrics exporter 'prometheus'"),
        ({"SHADOW_OTEL": "1"}, "--otel needs the OpenTelemetry SDK and its OTLP exporter: pip install 'squall[otel]'"),
    ],
)
def test_otel_that_cannot_export_is_one_line_exit_2(servers, tmp_path, env, needle):
    """A missing package (here the SDK hidden behind an empty `opentelemetry` package), an exporter or a
    protocol squall[otel] does not have: one line, exit 2, before any request."""
    recorder, receiver = servers
    recorder.reset()
    environment = otel_env(receiver, **env)
    if env.get("SHADOW_OTEL"):
        (tmp_path / "opentelemetry").mkdir()
        (tmp_path / "opentelemetry" / "__init__.py").write_text("")
        environment["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(CORPUS)])
    p = squall(
        "-f", CORPUS / "otel.py", "--headless", "-u", 1, "-t", "2s", "-H", recorder.url, "--otel", env=environment
    )
    errors = [line for line in p.stderr.splitlines() if "error" in line]
    assert p.returncode == 2 and len(errors) == 1 and needle in errors[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr and recorder.log() == []
