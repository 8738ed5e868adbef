"""bench/ws_bench.py's arithmetic: memory per connection counts the connections the server saw held, not
those asked for; the section's shares of the floor and squall's ratios are per-round medians of messages
(the server's count) per CPU-second; squall's rows say why they are missing when it was refused."""

import importlib.util
import sys
from argparse import Namespace
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def ws_bench():
    sys.path.insert(0, str(BENCH))  # its `from common import ...`
    try:
        spec = importlib.util.spec_from_file_location("ws_bench", BENCH / "ws_bench.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


ARGS = Namespace(connections=50, seconds=10, rounds=2, memory_seconds=40, memory_connections=10_000, memory_few=10)


def section(ws_bench, results, mem, refusal, fixed=None):
    """The section's text, its ranges' en dashes as hyphens."""
    return "\n".join(ws_bench.section(results, mem, refusal, ARGS, fixed)).replace("\u2013", "-")


def run(messages, cpu, failures=0):
    return {"server_messages": messages, "messages": messages, "failures": failures, "cpu": cpu}


def test_memory_per_connection_is_over_the_connections_the_server_saw(ws_bench):
    few = {"rss": 50.0, "peak_open": 10, "connections": 10}
    many = {"rss": 50.0 + 2170 / 1024 * 10, "peak_open": 2180, "connections": 10_000}  # held 2,180 of 10,000
    assert ws_bench.per_connection_kb({"few": few, "many": many}) == pytest.approx(10.0)
    assert ws_bench.per_connection_kb({"few": few, "many": {"error": "exited 1"}}) is None
    assert ws_bench.per_connection_kb({"few": few, "many": dict(many, peak_open=10)}) is None


def test_the_section_gives_shares_of_the_floor_and_squalls_ratios_per_round(ws_bench):
    results = {
        "floor": [run(100_000, 1.0), run(100_000, 2.0)],  # 100,000 and 50,000 a CPU-second
        "squall": [run(60_000, 1.0), run(40_000, 1.0)],  # shares 0.60 and 0.80
        "locust": [run(6_000, 1.0), run(4_000, 2.0)],  # squall 10x and 20x
    }
    text = section(ws_bench, results, {}, None, {"squall": 0.31})
    assert "| squall | 5,000 | 5,000 | 0 | 50,000 | **0.70** (0.60-0.80) | — | 0.31 |" in text
    assert (
        "| Locust + websocket-client | 500 | 500 | 0 | 4,000 | **0.050** (0.040-0.060) | **15.0x** (10.0-20.0) | — |"
        in text
    )
    assert "| floor (ws_floor.c) | 10,000 | 10,000 | 0 | 75,000 | **1.00** (1.00-1.00) | — | — |" in text
    assert "Memory per idle connection" not in text


def test_a_refused_squall_is_said_in_both_tables(ws_bench):
    results = {"floor": [run(100_000, 1.0)], "locust": [run(5_000, 1.0)]}
    mem = {"floor": {"few": {"rss": 1.4, "peak_open": 10}, "many": {"rss": 4.0, "peak_open": 10_000}}}
    refusal = "exit 2: squall: error: unrecognized arguments: --message hello"
    text = section(ws_bench, results, mem, refusal)
    assert f"squall: not measured, `squall bench ws://` was refused ({refusal})." in text
    assert "squall: not measured (its WebSocket bench was refused, above)." in text
    assert "| floor (ws_floor.c) | 10,000 | 10,000 | 1.4 MB | 4.0 MB | **0.3** |" in text


def test_squalls_websocket_users_are_set_against_locusts(ws_bench):
    results = {
        "floor": [run(100_000, 1.0), run(100_000, 1.0)],
        "squall-script": [run(40_000, 1.0), run(30_000, 1.0)],
        "locust": [run(8_000, 1.0), run(5_000, 1.0)],  # 5x and 6x
    }
    text = section(ws_bench, results, {}, None)
    assert "| squall WebSocketUser (locustfile) | 3,500 | 3,500 | 0 | 35,000 | **0.35** (0.30-0.40) | — | — |" in text
    assert "to Locust's (ws_echo.py), in messages per CPU-second: **5.5x** (5.0-6.0)." in text


def test_squall_on_locusts_own_file_is_set_against_locust_on_it(ws_bench):
    results = {
        "floor": [run(100_000, 1.0), run(100_000, 1.0)],
        "squall-locustfile": [run(30_000, 1.0), run(20_000, 1.0)],
        "locust": [run(10_000, 1.0), run(5_000, 1.0)],  # 3x and 4x
    }
    text = section(ws_bench, results, {}, None)
    row = "| squall on Locust's file (ws_echo.py) | 2,500 | 2,500 | 0 | 25,000 | **0.25** (0.20-0.30) | — | — |"
    assert row in text
    assert "and by Locust (websocket-client), in messages per CPU-second: **3.5x** (3.0-4.0)." in text
