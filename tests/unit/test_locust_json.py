"""Locust's JSON stats from a squall result: the bucketing rule, the histogram reader (checked against
tests/hdr.py, an independent reader of the format), and the rows' fields, order, types and sums."""

import base64
import struct
import zlib

import pytest

import hdr
from squall.report import locust_json
from squall.report.hdr import HistogramError, recorded


def encode(values):
    """A V2 compressed histogram (3 significant digits, lowest 1, as the engine writes) of {µs: count},
    written from HdrHistogram's layout: 2,048 one-µs buckets, then buckets twice as wide each half."""

    def index(v):
        bucket = max((v | 2047).bit_length() - 11, 0)
        return ((bucket + 1) << 10) + (v >> bucket) - 1024 if bucket else v

    counts = {}
    for v, n in values.items():
        counts[index(v)] = counts.get(index(v), 0) + n
    payload, i = bytearray(), 0
    for at in sorted(counts):
        if at > i:
            payload += _leb(-(at - i))
        payload += _leb(counts[at])
        i = at + 1
    body = struct.pack(">iiiiqqd", 0x1C849313, len(payload), 0, 3, 1, 2, 1.0) + bytes(payload)
    packed = zlib.compress(body)
    return base64.b64encode(struct.pack(">ii", 0x1C849314, len(packed)) + packed).decode()


def _leb(n):
    z = (n << 1) ^ (n >> 63)  # ZigZag
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return out


@pytest.mark.parametrize(
    "ms, bucket",
    [(0.4, 0), (1.5, 2), (2.5, 2), (99.4, 99), (147, 150), (994, 990), (3432, 3400), (58760, 59000)],
)
def test_buckets_round_as_locust(ms, bucket):
    assert locust_json.bucket_response_time(ms) == bucket  # Python's round: 2.5 -> 2, as in Locust


def test_the_reader_agrees_with_an_independent_one():
    values = {1: 3, 250: 1, 2047: 2, 2048: 5, 5_000: 1, 123_456: 7, 9_999_999: 1}
    text = encode(values)
    ours = recorded(text)
    theirs = [(i, n) for i, n in enumerate(hdr.decode_counts(text)) if n]
    assert [n for _, n in ours] == [n for _, n in theirs] and sum(n for _, n in ours) == 20
    for (mid, _), v in zip(ours, sorted(values)):
        assert abs(mid - v) <= 0.001 * v + 0.5  # the midpoint of v's bucket: within 0.1% (1 µs below 2 ms)


def test_a_bad_histogram_is_an_error():
    for text in ("not base64!", base64.b64encode(b"12345678").decode()):
        with pytest.raises(HistogramError):
            recorded(text)


def result(endpoints, seconds):
    return {"start_unix": 1000.25, "duration_s": 3.0, "endpoints": endpoints, "timeseries": seconds}


def endpoint(name, requests, failures, values):
    return {
        "method": "GET", "name": name, "requests": requests, "failures": failures, "body_bytes": 3 * requests,
        "min_us": min(values), "max_us": max(values), "mean_us": sum(v * n for v, n in values.items()) / requests,
        "histogram": encode(values),
    }  # fmt: skip


def second(t, **per_name):
    eps = [{"method": "GET", "name": k, "requests": r, "failures": f} for k, (r, f) in per_name.items()]
    return {"t": t, "unix": 1000.25 + t, "endpoints": eps}


def test_rows_have_locusts_fields_order_and_sums():
    doc = result(
        [endpoint("/b", 4, 1, {1_400: 2, 1_600: 2}), endpoint("/a", 2, 0, {147_000: 1, 149_400: 1})],
        [second(0, **{"/a": (2, 0)}), second(1, **{"/b": (3, 1)}), second(2, **{"/b": (1, 0)})],
    )
    rows = locust_json.rows(doc)
    assert [r["name"] for r in rows] == ["/a", "/b"]  # the order they first appeared in; no "Aggregated"
    assert all(list(r) == list(locust_json.FIELDS) for r in rows)
    a, b = rows
    assert a["response_times"] == {150: 2}  # 147 ms and 149.4 ms both round to 150
    assert b["response_times"] == {1: 2, 2: 2}  # 1.4005 ms -> 1, 1.6005 ms -> 2
    assert b["num_reqs_per_sec"] == {1001: 3, 1002: 1} and b["num_fail_per_sec"] == {1001: 1}
    assert a["num_fail_per_sec"] == {}
    assert (b["num_requests"], b["num_failures"], b["total_content_length"], b["num_none_requests"]) == (4, 1, 12, 0)
    assert b["total_response_time"] == pytest.approx(6.0) and isinstance(b["total_response_time"], float)
    assert (b["min_response_time"], b["max_response_time"]) == (1.4, 1.6)
    assert b["start_time"] == 1001.25 and b["last_request_timestamp"] == 1003.25


def test_locust_stats_are_told_from_a_result():
    assert locust_json.is_locust_stats([{"name": "/", "num_requests": 1}])
    assert not locust_json.is_locust_stats({"kind": "http", "endpoints": []})
    assert locust_json.file_path("out/stats") == "out/stats.json"
