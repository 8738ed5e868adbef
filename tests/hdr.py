"""An independent reader of the histograms squall saves (HdrHistogram's V2 format, deflate-compressed,
base64), written from the format's specification, not from squall's code: what a result says it holds
can be checked against what it really holds."""

import base64
import struct
import zlib

COMPRESSED = 0x1C849304
V2 = 0x1C849303


def _zigzag_leb128(data, i):
    value, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80 or shift >= 63:
            break
    return (value >> 1) ^ -(value & 1), i


def decode_counts(text):
    """The counts of a serialized histogram, in bucket order (zero runs expanded)."""
    raw = base64.b64decode(text)
    cookie, length = struct.unpack(">ii", raw[:8])
    assert cookie & ~0xF0 == COMPRESSED, hex(cookie)  # bits 4-7: the word size (0x10)
    body = zlib.decompress(raw[8 : 8 + length])
    cookie, payload_len = struct.unpack(">ii", body[:8])
    assert cookie & ~0xF0 == V2, hex(cookie)
    header = 40  # cookie, payload length, normalizing offset, significant digits, lowest, highest, ratio
    data = body[header : header + payload_len]
    counts, i = [], 0
    while i < len(data):
        v, i = _zigzag_leb128(data, i)
        if v < 0:
            counts.extend([0] * -v)
        else:
            counts.append(v)
    return counts


def total(text):
    return sum(decode_counts(text))


def _leb128_zigzag(value):
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_small(values):
    """A serialized histogram (3 significant digits, lowest 1) of `values`, all below 2048 µs, where a
    value's bucket index is the value itself: the format written from its specification, as above."""
    assert all(0 < v < 2048 for v in values)
    counts = [0] * (max(values) + 1)
    for v in values:
        counts[v] += 1
    payload, i = bytearray(), 0
    while i < len(counts):
        if counts[i] == 0:
            j = i
            while j < len(counts) and counts[j] == 0:
                j += 1
            payload += _leb128_zigzag(-(j - i))
            i = j
        else:
            payload += _leb128_zigzag(counts[i])
            i += 1
    body = struct.pack(">iiiiqqd", V2 | 0x10, len(payload), 0, 3, 1, 2047, 1.0) + bytes(payload)
    packed = zlib.compress(body)
    return base64.b64encode(struct.pack(">ii", COMPRESSED | 0x10, len(packed)) + packed).decode()
