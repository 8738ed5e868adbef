"""The recorded values of a result's histogram: the engine saves each one as HdrHistogram's V2 format,
deflate-compressed and base64-encoded (its `histogram` fields). Reports that need the distribution
itself, not percentiles (Locust's `response_times` buckets), read it here.

Policy: each non-empty HDR bucket is reported as its midpoint with its count. The engine records
whole microseconds, truncated, so a bucket [lo, hi] holds times in [lo, hi + 1) µs: its midpoint is
lo + width / 2. Below 2,048 µs the buckets are 1 µs wide (3 significant digits), above that at most
0.1% of the value, so the midpoint is within 0.05% of every sample the bucket holds."""

from __future__ import annotations

import base64
import struct
import zlib

_COMPRESSED = 0x1C849304  # cookies, less bits 4-7 (the word size)
_V2 = 0x1C849303
_HEADER = struct.Struct(">iiiiqqd")  # cookie, payload length, offset, significant digits, lowest, highest, ratio


class HistogramError(ValueError):
    """The text is not a histogram in the engine's format."""


def _varints(data: bytes) -> list[int]:
    """The ZigZag LEB128 numbers of a V2 payload (at most 9 bytes each, as the format caps them)."""
    out: list[int] = []
    i, n = 0, len(data)
    while i < n:
        value, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            if shift == 56:  # the ninth byte holds 8 bits
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return out


def recorded(text: str) -> list[tuple[float, int]]:
    """(value, count) for each non-empty bucket, in increasing value; values in the histogram's unit
    (µs for the engine's latencies), each the midpoint of its bucket."""
    try:
        raw = base64.b64decode(text, validate=True)
        cookie, length = struct.unpack(">ii", raw[:8])
        if cookie & ~0xF0 != _COMPRESSED:
            raise HistogramError("not a compressed HdrHistogram")
        body = zlib.decompress(raw[8 : 8 + length])
        cookie, payload, _offset, digits, lowest, _highest, _ratio = _HEADER.unpack(body[: _HEADER.size])
    except (ValueError, struct.error, zlib.error) as e:
        raise HistogramError(str(e)) from None
    if cookie & ~0xF0 != _V2:
        raise HistogramError("not an HdrHistogram V2 payload")
    unit = max(lowest, 1).bit_length() - 1  # log2 of the lowest discernible value
    sub_count_magnitude = (2 * 10**digits - 1).bit_length()  # ceil(log2(2 * 10^digits))
    half_magnitude = max(sub_count_magnitude - 1, 0)
    half_count = 1 << half_magnitude
    out: list[tuple[float, int]] = []
    index = 0
    for v in _varints(body[_HEADER.size : _HEADER.size + payload]):
        if v < 0:  # a run of empty buckets
            index -= v
            continue
        if v:
            bucket = (index >> half_magnitude) - 1
            sub = (index & (half_count - 1)) + half_count
            if bucket < 0:
                sub -= half_count
                bucket = 0
            shift = bucket + unit
            out.append(((sub << shift) + (1 << shift) / 2, v))
        index += 1
    return out
