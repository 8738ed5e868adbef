"""`squall mqtt` against a real mosquitto on loopback: rates, delivery proven by subscribers, a broker
that dies mid-run, the seed's environment variables, and bad input."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import Mosquitto, free_port, squall, squall_process, wait_for_port

FILES = Path(__file__).parent / "locustfiles"
# mosquitto's log line for a publishing client of a run (not its preflight or verify connections)
CLIENT_CONNECTED = r"connected .* as squall-[0-9a-f]+-\d+ "


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # A deep queue, so that a stall of the shared test machine is not turned into drops by the broker.
    b = Mosquitto(tmp_path_factory.mktemp("mosquitto"), max_queued=1_000_000)
    yield b
    b.stop()


def run_json(tmp_path, *args, timeout=90, env=None):
    out = tmp_path / "result.json"
    p = squall("mqtt", *args, "--json", out, "-q", timeout=timeout, env=env)
    assert "Traceback" not in p.stderr, p.stderr
    return p, (json.loads(out.read_text()) if out.exists() else None)


def endpoint(result, method):
    return next(e for e in result["endpoints"] if e["method"] == method)


@pytest.mark.slow
@pytest.mark.serial
def test_paced_qos1_hits_the_rate_and_every_message_arrives(broker, tmp_path):
    # The acceptance run: 200 clients x 50 msg/s for 10 s = 100,000 QoS 1 messages.
    p, r = run_json(
        tmp_path,
        "--broker",
        broker.url,
        "-u",
        200,
        "--rate",
        50,
        "-t",
        "10s",
        "--qos",
        1,
        "--verify",
        "--topic",
        "example.com/{client}/pepeunit",
    )
    assert p.returncode == 0, p.stderr
    m = r["mqtt"]
    assert m["sent"] == 100_000
    assert m["published"] == 100_000 and m["failed"] == 0
    assert abs(m["publish_rate"] - 10_000) <= 100, m["publish_rate"]  # within 1%
    assert all(c["published"] == 500 for c in m["per_client"])
    d = m["delivery"]
    assert (d["delivered"], d["lost"], d["duplicated"]) == (100_000, 0, 0)
    assert endpoint(r, "PUBLISH")["requests"] == 100_000
    deliver = endpoint(r, "DELIVER")
    assert deliver["name"] == "example.com/+/pepeunit" and deliver["requests"] == 100_000
    assert 0 < deliver["percentiles_us"]["50"] < 500_000  # plausible (a few ms here unless the host is starved)
    assert r["schedule"]["sent"] == 100_000
    assert "Delivery     100,000 of 100,000 delivered, 0 lost" in p.stdout


def test_qos2_over_mqtt5_and_qos0_as_fast_as_possible(broker, tmp_path):
    p, r = run_json(
        tmp_path,
        "--broker",
        broker.url,
        "-u",
        5,
        "--rate",
        200,
        "-n",
        400,
        "--qos",
        2,
        "--mqtt-version",
        5,
        "--verify",
        "--topic",
        "v5/{id}/{seq}",
    )
    assert p.returncode == 0, p.stderr
    assert r["mqtt"]["published"] == 2000 and r["mqtt"]["delivery"]["lost"] == 0
    assert r["mqtt"]["mqtt_version"] == "5"

    p, r = run_json(tmp_path, "--broker", broker.url, "-u", 4, "-n", 5000, "--qos", 0, "--size", 100)
    assert p.returncode == 0, p.stderr
    assert r["mqtt"]["published"] == 20_000
    assert endpoint(r, "CONNECT")["requests"] == 4


@pytest.mark.slow
def test_a_flood_past_the_brokers_queue_is_reported_as_lost(tmp_path):
    # mosquitto's default drops QoS 1 messages for a subscriber with more than 1000 queued: --verify
    # must see it.
    b = Mosquitto(tmp_path)
    try:
        p, r = run_json(
            tmp_path, "--broker", b.url, "-u", 50, "-n", 2000, "--qos", 1, "--verify", "--verify-wait", "2s"
        )
    finally:
        b.stop()
    d = r["mqtt"]["delivery"]
    assert r["mqtt"]["published"] == 100_000
    assert d["delivered"] + d["lost"] == 100_000
    if d["lost"]:
        assert p.returncode == 4, p.stderr
        assert "messages lost" in p.stderr
        assert any(e["kind"] == "lost" and e["count"] == d["lost"] for e in r["errors"])
    else:
        assert p.returncode == 0


@pytest.mark.slow
def test_broker_killed_mid_run_gives_failures_and_a_clean_summary(tmp_path):
    b = Mosquitto(tmp_path)
    out = tmp_path / "r.json"
    proc = squall_process(
        "mqtt",
        "--broker",
        b.url,
        "-u",
        20,
        "--rate",
        100,
        "-t",
        "5s",
        "--qos",
        1,
        "--verify",
        "--timeout",
        "1s",
        "--verify-wait",
        "1s",
        "--json",
        out,
        "-q",
    )
    b.wait_for_log(CLIENT_CONNECTED, count=20)
    time.sleep(1.0)  # publishing
    b.stop(kill=True)
    stdout, stderr = proc.communicate(timeout=30)
    assert "Traceback" not in stderr
    m = json.loads(out.read_text())["mqtt"]
    # Messages due while the broker was down were never sent (unsent), those in flight as it died were
    # never acknowledged (failed); any it took and never delivered are lost. With --verify, each of the
    # three is exit code 4 (docs/numbers.md's table): whether any was lost depends on where the kill fell (none
    # in 1 run of 5 here), and the code did not.
    assert m["failed"] > 0 and m["unsent"] > 0
    assert proc.returncode == 4, stderr
    assert 0 < m["published"] < m["sent"]
    assert m["sent"] == 20 * 100 * 5  # every message of the schedule is accounted for
    assert m["delivery"]["delivered"] + m["delivery"]["lost"] == m["sent"] - m["unsent"]
    assert "Published" in stdout and "due but never sent" in stdout


def test_a_schedule_the_generator_cannot_keep_is_accounted_for(broker, tmp_path):
    """A million messages a second, one at a time: the client falls ever further behind. Late
    messages are still sent (their acknowledgement timeout counts from the write, not the schedule),
    the run gives them one --timeout past the end, and the rest are counted as unsent; the rate is
    over the time actually spent publishing."""
    p, r = run_json(
        tmp_path,
        "--broker",
        broker.url,
        "-u",
        1,
        "--rate",
        1_000_000,
        "-t",
        "1s",
        "--qos",
        1,
        "--inflight",
        1,
        "--timeout",
        "1s",
    )
    m = r["mqtt"]
    assert m["sent"] == 1_000_000 and m["unsent"] > 0
    assert m["published"] + m["unsent"] == m["sent"] and m["failed"] == m["unsent"]
    assert [(e["kind"], e["message"]) for e in r["errors"]] == [
        ("unsent", "not sent: the run ended with the generator behind schedule")
    ]
    assert 1.5 < m["measured_s"] < 3
    assert m["publish_rate"] == pytest.approx(m["published"] / m["measured_s"])
    assert r["schedule"]["max_lag_us"] > 1_000_000  # sent more than the timeout late, and acknowledged


def test_subscribe_only_measures_what_others_publish(broker, tmp_path):
    out = tmp_path / "sub.json"
    sub = squall_process(
        "mqtt", "--broker", broker.url, "--subscribe-only", "watched/+", "-n", 300, "-t", "30s", "--json", out, "-q"
    )
    broker.wait_for_log(r"-verify-\S+ \d watched/\+$")  # subscribed
    p = squall(
        "mqtt",
        "--broker",
        broker.url,
        "-u",
        3,
        "--rate",
        100,
        "-n",
        100,
        "--qos",
        1,
        "--verify",
        "--topic",
        "watched/{client}",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    stdout, stderr = sub.communicate(timeout=30)
    assert sub.returncode == 0, stderr
    r = json.loads(out.read_text())
    d = r["mqtt"]["delivery"]
    assert d["received"] == 300 and d["senders"] == 3 and d["lost"] == 0
    assert endpoint(r, "RECEIVE")["requests"] == 300
    assert "Received     300 messages" in stdout


@pytest.mark.slow
def test_the_seeds_environment_variables_are_defaults(broker, tmp_path):
    env = dict(
        os.environ,
        PU_TEST_LOAD_MQTT_DURATION="2",
        PU_TEST_LOAD_MQTT_UNIT_COUNT="4",
        PU_TEST_LOAD_MQTT_RPS="20",
        PU_TEST_LOAD_MQTT_VALUE_TYPE="Number",
        PU_TEST_LOAD_MQTT_DUPLICATE_COUNT="3",
        PU_TEST_LOAD_MQTT_MESSAGE_SIZE="10",
        PU_TEST_LOAD_MQTT_WORKERS="2",
    )
    p, r = run_json(tmp_path, "--broker", broker.url, "--qos", 1, "--verify", env=env)
    assert p.returncode == 0, p.stderr
    m = r["mqtt"]
    assert m["clients"] == 4 and m["rate_per_client"] == 20
    assert m["published"] == 160 and m["delivery"]["lost"] == 0  # 4 clients x 20/s x 2 s, over 2 processes
    # Each process's subscriber gets every message; merged, each counts once (not once per process).
    assert m["delivery"]["received"] == 160 and m["delivery"]["foreign"] == 0
    assert [c["index"] for c in m["per_client"]] == [0, 1, 2, 3]
    assert endpoint(r, "PUBLISH")["body_bytes"] == 160 * (26 + 10)  # verification header + the value
    # A flag wins over the variable.
    p, r = run_json(tmp_path, "--broker", broker.url, "-u", 1, "-n", 5, env=env)
    assert r["mqtt"]["clients"] == 1 and r["mqtt"]["published"] == 5
    # A bad value names its variable (it named nothing the user had typed: "'abc' is not a whole number").
    p = squall("mqtt", "--broker", broker.url, "-t", "1s", env=dict(os.environ, PU_TEST_LOAD_MQTT_UNIT_COUNT="abc"))
    assert p.returncode == 2, p.stderr
    assert p.stderr == "squall mqtt: error: PU_TEST_LOAD_MQTT_UNIT_COUNT: 'abc' is not a whole number\n", p.stderr


def test_csv_and_html_reports(broker, tmp_path):
    p = squall(
        "mqtt",
        "--broker",
        broker.url,
        "-u",
        2,
        "-n",
        50,
        "--qos",
        1,
        "--csv",
        tmp_path / "run",
        "--html",
        tmp_path / "run.html",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    stats = (tmp_path / "run_stats.csv").read_text().splitlines()
    assert stats[0].startswith("Type,Name,Request Count")
    assert any(line.startswith("PUBLISH,squall/{client},100,0") for line in stats)
    assert "PUBLISH" in (tmp_path / "run.html").read_text()


def test_the_csv_gives_the_summarys_rates(broker, tmp_path):
    """4 clients at 10 msg/s for 2 s: PUBLISH and DELIVER at 40 a second over the measured time (the
    connect phase aside), in the summary and the CSV alike, and the Aggregated row the sum of the rows
    (the CSV divided by the whole run's time: 987.96 where the summary read 1,000.00)."""
    out, prefix = tmp_path / "r.json", tmp_path / "run"
    args = ["--broker", broker.url, "-u", 4, "--rate", 10, "-t", "2s", "--qos", 1, "--verify"]
    p = squall("mqtt", *args, "--json", out, "--csv", prefix, "-q")
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    rows = {(row["Type"], row["Name"]): row for row in csv.DictReader(open(f"{prefix}_stats.csv"))}
    rates = {k: float(v["Requests/s"]) for k, v in rows.items()}
    measured = r["mqtt"]["measured_s"]
    for e in r["endpoints"]:
        if e["method"] in ("PUBLISH", "DELIVER"):
            key = (e["method"], e["name"])
            assert rates[key] == pytest.approx(e["requests"] / measured, rel=1e-3)
            assert rates[key] == pytest.approx(40, rel=0.05)  # the schedule's rate
            assert f"{rates[key]:>8.2f}" in p.stdout  # the summary's column, the same number
    aggregated = rates.pop(("", "Aggregated"))
    assert aggregated == pytest.approx(sum(rates.values()), rel=1e-3)
    # A threshold reads the same rates: the row's messages a second, and the whole run's the sum.
    for threshold, value in (
        ("PUBLISH squall/{client}: rps>=1", rates[("PUBLISH", "squall/{client}")]),
        ("rps>=1", aggregated),
    ):
        p = squall("mqtt", *args, "--threshold", threshold, "--json", out, "-q")
        (verdict,) = json.loads(out.read_text())["thresholds"]
        assert verdict["value"] == pytest.approx(value, rel=0.1), verdict  # (another run of the same schedule)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (
            ["--broker", "mqtt://127.0.0.1:{closed}", "-n", "1"],
            3,
            "cannot connect to the broker at 127.0.0.1:{closed}: connection refused",
        ),
        (["--broker", "mqtt://no-such-host.invalid", "-n", "1"], 3, "cannot resolve host 'no-such-host.invalid'"),
        (["--broker", "http://127.0.0.1:1", "-n", "1"], 2, "unsupported scheme 'http'"),
        (["--topic", "a/{{nope}}", "-n", "1"], 2, "unknown placeholder {{nope}}"),
        (["--topic", "a/+/b", "-n", "1"], 2, "wildcards"),
        (["--payload", "@/no/such/file", "-n", "1"], 2, "cannot read payload file '/no/such/file': No such file"),
        (["--qos", "3", "-n", "1"], 2, "invalid choice: 3 (choose from 0, 1, 2)"),
        (["-u", "0", "-n", "1"], 2, "'0' must be at least 1"),
        (["-u", "2"], 2, "give a duration (-t) or a number of messages per client (-n)"),
        (["-n", "1", "--autoquit", "3"], 2, "--autoquit goes with --web-port"),
        (["-n", "1", "--web-port", "0", "--autoquit", "soon"], 2, "invalid int value: 'soon'"),
    ],
)
def test_bad_input_is_one_line_and_a_documented_code(broker, args, code, message):
    closed = free_port()
    args = [a.format(closed=closed) for a in args]
    if "--broker" not in args:
        args = ["--broker", broker.url, *args]
    p = squall("mqtt", *args, "-q", timeout=60)
    assert p.returncode == code, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message.format(closed=closed) in lines[0], p.stderr


def test_bad_credentials_print_the_connack_reason(tmp_path):
    b = Mosquitto(tmp_path, users={"device": "secret"})
    try:
        p = squall("mqtt", "--broker", b.url, "--username", "device", "--password", "wrong", "-n", "1", "-q")
        assert p.returncode == 3
        assert p.stderr.strip().splitlines() == [
            f"squall mqtt: error: cannot connect to the broker at 127.0.0.1:{b.port}: "
            "CONNACK refused: not authorized (code 5)"
        ]
        p = squall(
            "mqtt", "--broker", b.url, "--username", "device", "--password", "secret", "-n", "3", "--qos", 1, "-q"
        )
        assert p.returncode == 0, p.stderr
    finally:
        b.stop()


def test_mqtts_over_rustls(tmp_path):
    b = Mosquitto(tmp_path, tls=True)
    try:
        p = squall("mqtt", "--broker", b.url, "-n", "1", "-q")
        assert p.returncode == 3
        assert "(use --insecure to skip certificate verification)" in p.stderr.strip().splitlines()[0]
        p = squall("mqtt", "--broker", b.url, "--insecure", "-u", 3, "-n", 100, "--qos", 1, "--verify", "-q")
        assert p.returncode == 0, p.stderr
        assert "Delivery     300 of 300 delivered, 0 lost" in p.stdout
    finally:
        b.stop()


def test_interrupt_still_writes_the_result(broker, tmp_path):
    out = tmp_path / "r.json"
    proc = squall_process(
        "mqtt",
        "--broker",
        broker.url,
        "-u",
        10,
        "--rate",
        50,
        "-t",
        "60s",
        "--qos",
        1,
        "--client-id-prefix",
        "interrupted-",
        "--json",
        out,
        "-q",
    )
    broker.wait_for_log(r"as interrupted-9 ")  # every client connected
    time.sleep(1.0)  # publishing
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    r = json.loads(out.read_text())
    assert r["stop_reason"] == "interrupted" and r["mqtt"]["published"] > 0
    assert "Traceback" not in stderr


def live_answer(port, cursor):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/live?cursor={cursor}", timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
def test_the_live_stream_carries_connect_publish_and_deliver_while_the_run_goes(broker, tmp_path):
    """The dashboard's /api/live during a run (issue 24: its seconds had no endpoints and its totals only
    an Aggregated row until the end): each published second has PUBLISH and DELIVER by name, counting
    what the result's same second counts, and the totals list the three endpoints as the result does."""
    port, out = free_port(), tmp_path / "r.json"
    proc = squall_process(
        "mqtt", "--broker", broker.url, "-u", 5, "--rate", 20, "-t", "6s", "--qos", 1, "--verify",
        "--web-port", port, "--autoquit", 30, "--json", out, "-q",
    )  # fmt: skip
    wait_for_port(port)
    seconds, cursor, running = {}, 0, []
    deadline = time.monotonic() + 60
    while not out.exists() or not live_answer(port, cursor)["finished"]:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        live = live_answer(port, cursor)
        cursor = live["cursor"]
        seconds.update({p["t"]: p for p in live["timeseries"]})
        if live["state"] == "running" and live["timeseries"]:
            running.append(live)
        time.sleep(0.5)
    r = json.loads(out.read_text())
    proc.send_signal(signal.SIGINT)  # the dashboard served the end until now (no --autoquit reached)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    names = {(e["method"], e["name"]) for e in r["endpoints"]}
    assert names == {("CONNECT", broker.url), ("PUBLISH", "squall/{client}"), ("DELIVER", "squall/+")}
    # While running: the totals by endpoint, as the result names them (not only an Aggregated row).
    assert len(running) >= 2, "the run was watched while it went"
    mid = running[-1]
    assert {(e["method"], e["name"]) for e in mid["totals"]["endpoints"]} == names
    by = {e["method"]: e for e in mid["totals"]["endpoints"]}
    # The published seconds trail the counters (a second is published once it ended, up to 2 s later).
    assert 0 < by["PUBLISH"]["requests"] <= mid["mqtt"]["published"] <= 600
    assert by["PUBLISH"]["percentiles_us"]["95"] > 0
    # Each second as the result has it: the stream is prompt, the result exact (a count that came after
    # its second was published, only after a 2 s stall of its thread, is in the result alone).
    final = {p["t"]: p for p in r["timeseries"]}
    count = lambda p, m: sum(e["requests"] for e in p["endpoints"] if e["method"] == m)
    for t, p in seconds.items():
        for method in ("PUBLISH", "DELIVER"):
            assert count(p, method) <= count(final[t], method), (t, method)
    whole = [t for t in seconds if 1 <= t <= 4]  # the full seconds of 100 msg/s (0 and 5+ are partial)
    assert whole and all(count(seconds[t], "PUBLISH") >= 95 for t in whole), [
        count(seconds[t], "PUBLISH") for t in whole
    ]
    assert f"its dashboard stays at http://127.0.0.1:{port}/ for 30 s (--autoquit)" in stderr


@pytest.mark.slow
def test_mqtt_users_share_the_table_with_http_users(broker, odd_server, tmp_path):
    received = tmp_path / "received"
    env = dict(os.environ, TEST_MQTT_PORT=str(broker.port), TEST_RECEIVED=str(received))
    prefix = tmp_path / "mixed"
    p = squall(
        "-f",
        FILES / "mqtt_mixed.py",
        "-H",
        odd_server.url,
        "--headless",
        "-u",
        4,
        "-r",
        10,
        "-t",
        "3s",
        "--csv",
        prefix,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(open(f"{prefix}_stats.csv"))}
    assert int(rows[("MQTT", "connect")]["Request Count"]) == 3  # 2 devices + 1 watcher
    telemetry = rows[("MQTT", "publish:1:devices/telemetry")]
    confirmed = rows[("MQTT", "publish:2:devices/confirmed")]
    assert int(telemetry["Request Count"]) > 20 and int(telemetry["Failure Count"]) == 0
    assert int(confirmed["Request Count"]) > 5 and int(confirmed["Failure Count"]) == 0
    assert rows[("MQTT", "subscribe:1:devices/#")]["Request Count"] == "1"
    assert int(rows[("GET", "/ok")]["Request Count"]) > 20
    assert int(received.read_text()) > 0


def test_locusts_own_mqtt_locustfile_runs_unchanged(broker, tmp_path):
    env = dict(os.environ, BENCH_MQTT_PORT=str(broker.port), BENCH_QOS="1")
    prefix = tmp_path / "locust"
    p = squall(
        "-f", FILES / "locust_mqtt.py", "--headless", "-u", 5, "-r", 5, "-t", "2s", "--csv", prefix, env=env, timeout=60
    )
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    rows = [r for r in csv.DictReader(open(f"{prefix}_stats.csv")) if r["Name"].startswith("publish:1:bench/")]
    assert len(rows) == 5  # one topic per client id, as in Locust
    assert sum(int(r["Request Count"]) for r in rows) > 1000
    assert all(r["Failure Count"] == "0" for r in rows)


def test_connect_rate_retain_payload_file_and_client_ids(broker, tmp_path):
    payload = tmp_path / "reading.json"
    payload.write_bytes(b'{"t": 21.5, "unit": "C"}')  # 24 bytes
    p, r = run_json(
        tmp_path,
        "--broker",
        broker.url,
        "-u",
        10,
        "--connect-rate",
        20,
        "--rate",
        10,
        "-t",
        "2s",
        "--qos",
        1,
        "--retain",
        "--payload",
        f"@{payload}",
        "--client-id-prefix",
        "unit-",
        "--topic",
        "plant/{id}/temp",
    )
    assert p.returncode == 0, p.stderr
    m = r["mqtt"]
    assert m["connect_phase_s"] == 0  # with a connect rate, clients publish as they connect
    assert [c["id"] for c in m["per_client"]] == [f"unit-{i}" for i in range(10)]
    assert endpoint(r, "CONNECT")["requests"] == 10
    # Each client's schedule starts when it has connected: the first at once (20 messages in 2 s, one
    # fewer if its CONNACK took over 0.1 s), the last at 0.45 s or later (at most 16).
    assert 10 <= m["per_client"][-1]["published"] <= 16 and 19 <= m["per_client"][0]["published"] <= 20
    assert endpoint(r, "PUBLISH")["body_bytes"] == 24 * m["published"]
    # Retained: a late subscriber gets each client's last message at once.
    out = tmp_path / "sub.json"
    p = squall(
        "mqtt", "--broker", broker.url, "--subscribe-only", "plant/+/temp", "-n", 10, "-t", "5s", "--json", out, "-q"
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["mqtt"]["delivery"]["received"] == 10


def run_with_broker_stopped(tmp_path, at, stopped_for, *args):
    """10 clients x 100 msg/s at QoS 1 against a mosquitto that is SIGSTOPped `at` seconds after squall's
    clients have connected, for `stopped_for` seconds. Returns (process, result, wall-clock time of the resume)."""
    b = Mosquitto(tmp_path)
    out = tmp_path / "r.json"
    try:
        proc = squall_process(
            "mqtt", "--broker", b.url, "-u", 10, "--rate", 100, "--qos", 1, *args, "--json", out, "-q"
        )
        b.wait_for_log(CLIENT_CONNECTED, count=10)  # the clients, so publishing starts
        time.sleep(at)
        b.proc.send_signal(signal.SIGSTOP)
        time.sleep(stopped_for)
        resumed = time.time()
        b.proc.send_signal(signal.SIGCONT)
        proc.communicate(timeout=60)
    finally:
        b.stop()
    return proc, json.loads(out.read_text()), resumed


@pytest.mark.slow
def test_a_stalled_broker_cannot_hide_behind_the_window(tmp_path):
    # mosquitto stopped for 0.5 s mid-run: messages due meanwhile wait (the in-flight window is full
    # within 0.1 s), and their latency counts from the intended send time, so the tail shows the stall.
    proc, r, _ = run_with_broker_stopped(tmp_path, 2.0, 0.5, "-t", "4s")
    assert proc.returncode == 0
    publish = endpoint(r, "PUBLISH")
    assert publish["requests"] == 4000 and publish["failures"] == 0
    assert publish["percentiles_us"]["99"] >= 400_000 and publish["max_us"] >= 450_000
    assert publish["percentiles_us"]["50"] * 4 < publish["percentiles_us"]["99"]  # in the tail, not the body
    assert r["schedule"]["late"] > 0


@pytest.mark.slow
def test_deliveries_after_a_broker_stall_are_waited_for(tmp_path):
    """mosquitto stopped from near the end of the run until after it: acknowledgements time out, the
    clients drop their connections, and messages falling due meanwhile go unsent. squall must still
    wait (--verify-wait) for the deliveries of what it wrote, and count as lost only messages it wrote
    and never saw delivered: at most those never acknowledged."""
    _, r, resumed = run_with_broker_stopped(
        tmp_path, 2.5, 3, "-t", "3s", "--verify", "--timeout", "1s", "--verify-wait", "2s"
    )
    m, d = r["mqtt"], r["mqtt"]["delivery"]
    assert m["unsent"] > 0 and m["sent"] == 3000
    assert d["sent"] == m["sent"] - m["unsent"] and d["delivered"] + d["lost"] == d["sent"]
    assert d["delivered"] >= m["published"]
    unacknowledged = sum(e["count"] for e in r["errors"] if e["kind"] == "ack_timeout")
    assert d["lost"] <= unacknowledged
    assert (tmp_path / "r.json").stat().st_mtime > resumed  # still waiting for deliveries when the broker resumed


def test_message_sizes_beyond_mqtt_are_refused_and_large_ones_delivered(broker, tmp_path):
    began = time.monotonic()
    p = squall("mqtt", "--broker", broker.url, "--size", 300_000_000, "-n", 1, timeout=30)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "does not fit in an MQTT message" in p.stderr
    assert time.monotonic() - began < 10  # refused before anything is generated or connected
    # 17 MB, above the 16 MiB squall's own subscriber used to cap: delivered, as mosquitto delivers it.
    out = tmp_path / "big.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "squall", "mqtt", "--broker", broker.url, "--size", "17000000", "-n", "2",
         "--qos", "1", "--verify", "--json", str(out), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read()
    r = json.loads(out.read_text())
    assert r["mqtt"]["delivery"]["delivered"] == 2 and r["mqtt"]["delivery"]["lost"] == 0
    # Memory: a few copies of the value (a pool of at most 64 MB, the messages in flight, the
    # subscriber's buffer), not 64 of them (1.1 GB).
    assert usage.ru_maxrss / 1024 < 400, usage.ru_maxrss


def test_total_rate_is_split_across_the_clients(broker, tmp_path):
    p, r = run_json(tmp_path, "--broker", broker.url, "-u", 4, "--total-rate", 100, "-t", "2s", "--qos", 1)
    assert p.returncode == 0, p.stderr
    m = r["mqtt"]
    assert m["rate_per_client"] == 25 and m["sent"] == 200 and m["published"] == 200


@pytest.mark.parametrize("flag, clean", [("--clean-session", "c1"), ("--no-clean-session", "c0")])
def test_clean_session_as_the_broker_sees_it(tmp_path, flag, clean):
    (tmp_path / "m").mkdir()
    b = Mosquitto(tmp_path / "m")
    try:
        p = squall("mqtt", "--broker", b.url, "-u", 2, "-n", 1, flag, "--client-id-prefix", "cs-", "-q")
        assert p.returncode == 0, p.stderr
        # mosquitto logs each CONNECT's flags: "(p2, c1, k60)" is protocol 3.1.1, clean session, keep-alive.
        b.wait_for_log(rf"as cs-\d+ \(p\d, {clean},", 2)
    finally:
        b.stop()
