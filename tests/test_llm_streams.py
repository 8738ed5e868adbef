"""A language model's streamed answers (docs/sse.md, "Tokens"), against ground truth:
tests/servers/sse_server.py streams OpenAI-compatible chat completions whose content chunks it sends at
known delays (the first F ms after the request was read, each next M ms after the one before) and
counts what it sent: content chunks, the usage it reported, the first chunk's delay and the gaps.

As in test_sse.py: the server sleeps with time.sleep and records each send's real time; squall times a
token when the read that brings it returns, so its time to first token is the server's first delay
plus two ways over loopback, and a gap the server's plus the difference of two ways back. The bounds
allow 5 ms for that on a loaded 2-core host: a tenth of the delays or less."""

import json
import os
import statistics

import pytest

from support import HERE, free_port, listening, sent, squall, squall_get, squall_process, wait_until
from test_web import open_page, points, shot
from test_web_reports import attr

pytestmark = pytest.mark.serial

FIRST_MS, GAP_MS, TOKENS, STREAMS = 60, 15, 8, 6
SLACK_MS = 5
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": TOKENS}


def bench(tmp_path, url, body, *args):
    out = tmp_path / "r.json"
    head = ("-m", "POST", "-H", "Content-Type: application/json", "-d", json.dumps(body))
    p = squall("bench", url, *head, *args, "--json", out)
    assert p.returncode == 0, p.stderr[-2000:]
    return p, json.loads(out.read_text())


def check_times(t, truth):
    """Time to first token, inter-token latency and time per output token against the server's sends."""
    assert t["ttft"]["count"] == STREAMS
    assert t["ttft"]["min_us"] >= FIRST_MS * 1000, t["ttft"]
    server_first = statistics.median(truth["first_ms"])
    assert abs(t["ttft"]["percentiles_us"]["50"] / 1000 - server_first) <= SLACK_MS, (t["ttft"], server_first)
    assert t["itl"]["count"] == STREAMS * (TOKENS - 1)
    server_gap = statistics.median(truth["gaps_ms"])
    assert GAP_MS <= server_gap < GAP_MS + SLACK_MS, truth["gaps_ms"]
    assert abs(t["itl"]["percentiles_us"]["50"] / 1000 - server_gap) <= SLACK_MS / 2, (t["itl"], server_gap)
    # A stream's gaps add up to its last token's time less its first's, here and at the server: the
    # means differ by two ways back over the 7 gaps, whatever the load.
    assert abs(t["itl"]["mean_us"] / 1000 - statistics.mean(truth["gaps_ms"])) <= SLACK_MS / 2
    return server_gap


def test_tokens_and_their_times_are_the_servers(sse, tmp_path):
    sent(sse)
    url = f"{sse}/v1/chat/completions?first={FIRST_MS}&ms={GAP_MS}"
    p, r = bench(tmp_path, url, BODY, "-n", STREAMS, "-c", 2)
    truth = sent(sse)
    s, agg = r["aggregate"]["stream"], r["aggregate"]
    # Each stream: the role chunk, 8 content chunks, the finish chunk and [DONE]; only content counts.
    assert truth["tokens"] == STREAMS * TOKENS and truth["whole"] == STREAMS
    assert s["events"] == truth["events"] == STREAMS * (TOKENS + 3)
    t = s["tokens"]
    assert (t["streams"], t["tokens"], t["counted_by_server"]) == (STREAMS, truth["tokens"], 0)
    assert agg["tokens"] == t["tokens"] == sum(sec.get("tokens", 0) for sec in r["timeseries"])
    assert t["tokens_per_s"] == pytest.approx(t["tokens"] / r["duration_s"])
    server_gap = check_times(t, truth)
    # Time per output token: from the first token to the stream's end (the finish chunk and [DONE]
    # follow the last token at once) over the 7 tokens after the first: the mean gap.
    assert t["tpot"]["count"] == STREAMS
    assert abs(t["tpot"]["mean_us"] / 1000 - server_gap) <= SLACK_MS / 2, t["tpot"]
    # The endpoint has the same; the summary says it.
    assert r["endpoints"][0]["stream"]["tokens"]["tokens"] == t["tokens"]
    assert f"{truth['tokens']:,} tokens from {STREAMS} streams" in p.stdout, p.stdout
    for row in ("time to first token", "inter-token latency", "time per output token"):
        assert row in p.stdout


def test_the_servers_usage_is_the_count_when_it_gives_one(sse, tmp_path):
    """stream_options.include_usage: the server counts 3 tokens a chunk (as a server whose chunks carry
    several tokens does); the usage is the count, added at each stream's end, in its second."""
    sent(sse)
    body = {**BODY, "stream_options": {"include_usage": True}}
    _, r = bench(
        tmp_path, f"{sse}/v1/chat/completions?first={FIRST_MS}&ms={GAP_MS}&per=3", body, "-n", STREAMS, "-c", 3
    )
    truth = sent(sse)
    t = r["aggregate"]["stream"]["tokens"]
    assert truth["usage"] == STREAMS * TOKENS * 3
    assert (t["streams"], t["tokens"], t["counted_by_server"]) == (STREAMS, truth["usage"], STREAMS)
    assert sum(sec.get("tokens", 0) for sec in r["timeseries"]) == truth["usage"]
    server_gap = check_times(t, truth)
    # 24 tokens a stream: its 7 gaps over 23 tokens after the first.
    assert abs(t["tpot"]["mean_us"] / 1000 - server_gap * 7 / 23) <= SLACK_MS / 2, t["tpot"]


def test_the_demo_target_simulates_a_models_stream(tmp_path):
    """`squall demo --serve`'s /v1/chat/completions: max_tokens tokens, the first ttft_ms after the
    request, each next itl_ms later (tokio's timers: late by at most a millisecond or so, never early),
    the usage chunk when asked; without "stream" the whole answer."""
    port = free_port()
    proc = squall_process("demo", "--serve", "--port", port)
    try:
        wait_until(lambda: listening(port), "the demo target", proc)
        url = f"http://127.0.0.1:{port}/v1/chat/completions?ttft_ms=40&itl_ms=10"
        body = {**BODY, "max_tokens": 12, "stream_options": {"include_usage": True}}
        _, r = bench(tmp_path, url, body, "-n", 4, "-c", 2, "-q")
        whole = json.loads(squall_get(url, data=json.dumps({"max_tokens": 3}).encode()))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    t = r["aggregate"]["stream"]["tokens"]
    assert (t["streams"], t["tokens"], t["counted_by_server"]) == (4, 48, 4)
    assert t["ttft"]["min_us"] >= 40_000 and t["itl"]["count"] == 44
    # Each token 10 ms after the one before by the target's deadlines (tokio: a timer fires late, never
    # early, and the next deadline is kept), so a stream's first token to its end spans 110 ms less the
    # first's lateness plus the last's: over the 11 tokens after the first, within SLACK_MS / 11 of 10 ms.
    assert abs(t["tpot"]["percentiles_us"]["50"] - 10_000) <= SLACK_MS * 1000 / 11, t["tpot"]
    assert whole["usage"]["completion_tokens"] == 3 and whole["choices"][0]["message"]["content"] == " The load held"


def test_other_event_streams_have_no_tokens(sse, tmp_path):
    _, r = bench(tmp_path, f"{sse}/sse?events=3&ms=5", {}, "-n", 2, "-c", 1)
    assert r["aggregate"]["stream"]["events"] == 6 and "tokens" not in r["aggregate"]["stream"]
    assert "tokens" not in r["aggregate"] and all("tokens" not in sec for sec in r["timeseries"])


def test_a_locustfiles_streamed_completions_are_timed_the_same(sse, tmp_path):
    """`self.client.post(..., json=..., stream=True)` as OpenAI users write it without the SDK."""
    sent(sse)
    out = tmp_path / "r.json"
    env = {**os.environ, "STOP_AFTER_STREAMS": str(STREAMS), "FIRST_MS": str(FIRST_MS), "GAP_MS": str(GAP_MS)}
    p = squall(
        "-f", HERE / "locustfiles" / "llm_chat.py", "-H", sse, "--headless", "-u", 1, "-r", 1, "-t", "60s",
        "--result-json", out, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    truth = sent(sse)
    r = json.loads(out.read_text())
    assert not r.get("exceptions"), r["exceptions"]
    (e,) = r["endpoints"]
    t = e["stream"]["tokens"]
    # Six streams read whole (a streamed request is recorded at its head: the user quits after the
    # sixth's last line, and may have begun a seventh, its tokens so far counted; the server may have
    # sent one it did not read).
    assert e["name"] == "chat" and STREAMS <= e["requests"] <= STREAMS + 1
    assert STREAMS <= t["streams"] <= STREAMS + 1 and truth["tokens"] - 1 <= t["tokens"] <= truth["tokens"]
    assert t["ttft"]["min_us"] >= FIRST_MS * 1000
    assert abs(t["ttft"]["percentiles_us"]["50"] / 1000 - statistics.median(truth["first_ms"])) <= SLACK_MS
    assert abs(t["itl"]["percentiles_us"]["50"] / 1000 - statistics.median(truth["gaps_ms"])) <= SLACK_MS / 2
    assert t["tpot"]["count"] >= STREAMS


def test_the_report_shows_the_tokens_and_tokens_a_second(sse, browser, tmp_path):
    html = tmp_path / "r.html"
    sent(sse)
    _, r = bench(
        tmp_path,
        f"{sse}/v1/chat/completions?first=30&ms=20",
        {**BODY, "max_tokens": 40},
        "-c",
        2,
        "-t",
        "3s",
        "--html",
        html,
        "-q",
    )
    truth = sent(sse)
    t = r["aggregate"]["stream"]["tokens"]
    page = open_page(browser, html.as_uri(), offline=True)
    assert page.console_errors == [] and page.blocked == []
    shot(page, "report-tokens")
    # The two streams in flight at -t may each have had a token sent that the run's end left unread.
    assert int(attr(page, "stream-tokens", "data-value")) == t["tokens"] > 0
    assert truth["tokens"] - 2 <= t["tokens"] <= truth["tokens"]
    assert float(attr(page, "tokens-per-s", "data-value")) == pytest.approx(t["tokens_per_s"])
    for row in ("ttft", "itl", "tpot"):
        cells = page.locator(f"[data-testid='stream-row'][data-row='{row}']")
        assert int(cells.locator("[data-col='count']").get_attribute("data-value")) == t[row]["count"]
        assert int(cells.locator("[data-col='p50']").get_attribute("data-value")) == t[row]["percentiles_us"]["50"]
    assert points(page, "tokens") == len(r["timeseries"])
