"""One schema for the result: web/src/types.ts, the page's own types, held against what squall writes.

The result document is written by the engine's serializer (crates/squall-engine/src/stats/result.rs) and
by Python (limit, thresholds, monitor, generator, exceptions, a distributed run's workers), and read by
the page (web/src), `squall report` and `squall compare`. types.ts is the one place it is described:
ts-json-schema-generator (pinned in web/package-lock.json) turns it into a JSON Schema whose objects
allow no member they do not declare, and each document below, from a real run on loopback, must
validate. So a field the serializer gains without types.ts (or a type that changes) fails here, and the
page's types stay the schema's single source; web/README.md's RESULT points to it.

Real runs: bench in both models with thresholds and the target's resources, HTTP/2, a locustfile with
failures and exceptions, MQTT with delivery verified, the dashboard's live answers (`Live`) during a
run; and web/samples/, the results the page's own tests render (the --find-limit searches among them)."""

import json
import subprocess
import threading
import time
import urllib.request

import jsonschema
import pytest

from support import HERE, Mosquitto, free_port, serving, squall, squall_process, wait_for_port

ROOT = HERE.parent
GENERATOR = ROOT / "web" / "node_modules" / ".bin" / "ts-json-schema-generator"
SAMPLES = sorted((ROOT / "web" / "samples").glob("*.json"))

LOCUSTFILE = """
from locust import HttpUser, constant, task


class Visitor(HttpUser):
    wait_time = constant(0.01)

    @task(4)
    def ok(self):
        self.client.get("/", name="home")

    @task
    def failing(self):
        self.client.get("/status/500", name="boom")

    @task
    def raising(self):
        raise ValueError("a task that raises")
"""


@pytest.fixture(scope="module")
def definitions():
    """Every type of web/src/types.ts as JSON Schema definitions (objects closed: additionalProperties false)."""
    assert GENERATOR.exists(), "web/node_modules is missing: make test installs it (npm ci in web/)"
    out = subprocess.run(
        [GENERATOR, "-p", ROOT / "web" / "src" / "types.ts", "-t", "*", "--no-type-check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(out)["definitions"]


def problems(definitions, type_name, doc):
    """What in `doc` types.ts's `type_name` does not describe: one line each (path, then why)."""
    validator = jsonschema.Draft7Validator({"$ref": f"#/definitions/{type_name}", "definitions": definitions})

    def leaves(errors):
        for e in errors:
            if e.context:  # a union (`X | null`): the branch that was meant says why
                yield from leaves(e.context)
            elif not (e.validator == "type" and e.validator_value == "null"):
                yield e

    lines = set()
    for e in leaves(validator.iter_errors(doc)):
        path = "/".join(str(p) for p in e.absolute_path)
        what = e.message if e.validator == "additionalProperties" else f"{e.validator}: {str(e.instance)[:80]}"
        lines.add(f"{type_name} at /{path}: {what}")
    return sorted(lines)


def check(definitions, type_name, doc, what):
    found = problems(definitions, type_name, doc)
    assert not found, f"{what}: types.ts does not describe what squall wrote:\n" + "\n".join(found[:30])


def test_the_schema_closes_every_object(definitions):
    """The check means something only if an undeclared member fails: a member the page has never heard of."""
    doc = json.loads(SAMPLES[0].read_text())
    doc["aggregate"]["surprise"] = 1
    assert any("surprise" in p for p in problems(definitions, "Result", doc))


@pytest.mark.parametrize("sample", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_the_samples_are_results_as_types_ts_says(definitions, sample):
    check(definitions, "Result", json.loads(sample.read_text()), sample.name)


def test_bench_results_are_as_types_ts_says(definitions, nginx, tmp_path):
    runs = {
        "closed, monitored": ("/", ["-n", 300, "-c", 4, "--monitor-name", "nginx", "--threshold", "p95<1s"]),
        "open model": ("/", ["--rate", 200, "-c", 4, "-t", "2s", "--threshold", "error_rate<0.5"]),
        "failures": ("/status/500", ["-n", 100, "-c", 2]),
    }
    for name, (path, args) in runs.items():
        out = tmp_path / "r.json"
        p = squall("bench", nginx.url + path, *args, "--json", out, "-q")
        assert p.returncode in (0, 1), (name, p.stderr[-2000:])
        check(definitions, "Result", json.loads(out.read_text()), f"bench, {name}")
    out = tmp_path / "h2.json"
    p = squall("bench", nginx.h2c_url + "/", "--http2", "-n", 200, "-c", 2, "--json", out, "-q")
    assert p.returncode == 0, p.stderr[-2000:]
    check(definitions, "Result", json.loads(out.read_text()), "bench --http2")


def test_an_event_stream_result_is_as_types_ts_says(definitions, tmp_path):
    """Server-Sent Events (docs/sse.md): the endpoints' `stream` and the seconds' `events`; streams cut too."""
    out = tmp_path / "sse.json"
    with serving("sse_server.py") as port:
        p = squall("bench", f"http://127.0.0.1:{port}/sse?events=4&ms=5&cut=3", "-n", 4, "-c", 2, "--json", out, "-q")
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["aggregate"]["stream"]["cut_reasons"] and doc["timeseries"][0]["events"] == 12
    check(definitions, "Result", doc, "bench on an event stream")


def test_a_models_token_result_is_as_types_ts_says(definitions, tmp_path):
    """A language model's streamed answers (docs/sse.md, "Tokens"): `stream.tokens` and the seconds' `tokens`."""
    out = tmp_path / "llm.json"
    body = '{"stream": true, "max_tokens": 4, "stream_options": {"include_usage": true}}'
    with serving("sse_server.py") as port:
        url = f"http://127.0.0.1:{port}/v1/chat/completions?first=5&ms=2"
        p = squall("bench", url, "-m", "POST", "-d", body, "-n", 4, "-c", 2, "--json", out, "-q")
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["aggregate"]["stream"]["tokens"]["tokens"] == 16 and doc["aggregate"]["tokens"] == 16
    check(definitions, "Result", doc, "bench on a model's streamed answers")


def test_a_locustfile_result_is_as_types_ts_says(definitions, nginx, tmp_path):
    locustfile = tmp_path / "visitor.py"
    locustfile.write_text(LOCUSTFILE)
    out = tmp_path / "run.json"
    args = ["-f", locustfile, "-H", nginx.url, "--headless", "-u", 4, "-r", 4, "-t", "2s", "--result-json", out]
    p = squall(*args, "--only-summary", "--reset-stats")
    assert p.returncode == 1, p.stderr[-2000:]  # the failures make it 1, as Locust's
    result = json.loads(out.read_text())
    assert result["errors"] and result["exceptions"], "the run must have failures and exceptions to check"
    assert 0 < result["reset_s"] < result["duration_s"]  # (its users all started at once, in the first pass)
    check(definitions, "Result", result, "squall -f")


def test_an_mqtt_result_is_as_types_ts_says(definitions, tmp_path_factory, tmp_path):
    broker = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    try:
        out = tmp_path / "mqtt.json"
        p = squall("mqtt", "--broker", broker.url, "-u", 4, "-n", 100, "--qos", 1, "--verify", "--json", out, "-q")
        assert p.returncode == 0, p.stderr[-2000:]
    finally:
        broker.stop()
    result = json.loads(out.read_text())
    assert result["mqtt"]["delivery"]["delivered"] == 400  # -n counts per client
    check(definitions, "Result", result, "squall mqtt --verify")


def test_the_dashboards_live_answers_are_as_types_ts_says(definitions, nginx, tmp_path):
    """`/api/live` (types.ts `Live`) while a run goes, from the first cursor and from the last, and the
    result the page asks for at the end (`/api/result`)."""
    port = free_port()
    out = tmp_path / "r.json"
    args = ["--rate", 100, "-c", 2, "-t", "3s", "--web-port", port, "--autoquit", 3, "--json", out, "-q"]
    proc = squall_process("bench", nginx.url + "/", *args)
    answers, result = [], []

    def read():
        cursor = 0
        while proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/live?cursor={cursor}", timeout=5) as r:
                    live = json.loads(r.read())
                answers.append(live)
                cursor = live["cursor"]
                if live.get("finished") and not result:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/result", timeout=5) as r:
                        result.append(json.loads(r.read()))
            except OSError:
                pass
            time.sleep(0.3)

    wait_for_port(port, 30)
    reader = threading.Thread(target=read)
    reader.start()
    try:
        proc.wait(timeout=60)
    finally:
        reader.join(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()[-2000:]
    assert any(a.get("timeseries") for a in answers), "no live second was read"
    for i, live in enumerate(answers):
        check(definitions, "Live", live, f"/api/live, answer {i}")
    assert result, "the page's /api/result was never answered"
    check(definitions, "Result", result[0], "/api/result")
