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
