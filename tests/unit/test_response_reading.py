"""What a script reads of a response and sends as JSON, against the standard library and requests (the
ground truth: what Locust's clients read and send) on the same bytes: `json()` read by orjson where it
reads as json.loads does and by json.loads everywhere else, `text` decoded in the engine, `json=`
encoded by the engine for plain data (checked against json.dumps over random values) and by
json.dumps's own encoder, made once, for the rest."""

import json
import random

import pytest
import requests

from squall import _engine
from squall.clients import Response, json_body

DOCS = [
    b'{"id": 42, "name": "caf\\u00e9", "tags": ["a", "b"], "ok": true, "none": null}',
    '{"name": "café"}'.encode(),
    b'{"a": 1, "a": 2}',  # the last of a repeated key
    b"[1, 2.5, -0, -0.0, 1e2, 0.1, 5e-324, 1.7976931348623157e308]",
    b"123456789012345678901234567890",  # past 64 bits: orjson reads a float, json.loads an int
    b'{"m": -9223372036854775809, "u": 18446744073709551616, "fits": 9007199254740993}',
    b"[NaN, Infinity, -Infinity, 1E400]",
    b'"\\ud800"',  # a lone surrogate
    b'\xef\xbb\xbf{"bom": 1}',
    '{"utf16": [1]}'.encode("utf-16"),
    b'  {"ws": [true, false]}  ',
]


def response(content, encoding=None):
    r = Response()
    r.content = content
    r.encoding = encoding
    return r


@pytest.mark.parametrize("doc", DOCS, ids=range(len(DOCS)))
def test_json_reads_what_json_loads_reads(doc):
    assert repr(response(doc).json()) == repr(json.loads(doc))


@pytest.mark.parametrize("doc", [b"", b"plain text", b"caf\xe9 (latin-1)", b'{"open": ', b"[1, 2] x"])
def test_json_of_what_is_not_json_is_requests_error(doc):
    with pytest.raises(requests.exceptions.JSONDecodeError):
        response(doc).json()


TEXTS = [
    (b"caf\xc3\xa9", None),
    (b"ok \xff\xfe end \xe2\x82", None),
    (b"caf\xe9", "latin-1"),
    (b"\xff\xfeh\x00i\x00", "utf-16"),
]


@pytest.mark.parametrize(("content", "encoding"), TEXTS)
def test_text_decodes_as_python_does(content, encoding):
    assert response(content, encoding).text == content.decode(encoding or "utf-8", errors="replace")


VALUES = [
    {"item_id": 1234, "quantity": 2, "note": "caf\u00e9 \U0001f600", "x": [1.5, None, True, 1e300, -0.0]},
    [],
    {},
    "text\u00e9",
    [float("nan"), float("inf")],
    {"nested": {"k": [{"a": [1, {"b": 2}]}]}},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_json_body_is_json_dumps(value):
    assert json_body(value) == json.dumps(value).encode()


def random_value(rng, depth=0):
    """Plain data of every kind json.dumps writes, text from every range (escapes, ASCII's edges,
    Latin-1, the BMP, past it), and what the engine leaves to json.dumps (subclasses, other keys)."""
    kinds = ["str", "int", "float", "const"] + (["list", "tuple", "dict"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        ranges = [(0, 0x20), (0x20, 0x7F), (0x7F, 0x100), (0x100, 0xD800), (0xE000, 0x10000), (0x10000, 0x110000)]
        return "".join(chr(rng.randrange(*rng.choice(ranges))) for _ in range(rng.randrange(8)))
    if kind == "int":
        return rng.choice([0, -1, rng.randrange(-(10**30), 10**30), 2**63, True, False])
    if kind == "float":
        special = [0.0, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, float("nan"), float("inf"), -float("inf")]
        return rng.choice([rng.uniform(-1e6, 1e6), rng.choice(special)])
    if kind == "const":
        return None
    items = [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    keys = [random_value(rng, 4) for _ in items]  # (not containers: json.dumps takes text, numbers, None)
    keys = [k if isinstance(k, str) or rng.random() < 0.3 else str(k) for k in keys]
    return dict(zip(keys, items))


def test_the_engines_json_is_json_dumps_over_random_values():
    rng = random.Random(8)
    engines = 0
    for _ in range(3000):
        value = random_value(rng)
        expected = json.dumps(value).encode()
        made = _engine.json_dumps(value)
        assert made is None or made == expected, value
        assert json_body(value) == expected
        engines += made is not None
    assert engines > 2000  # (most values are plain: the engine wrote them)


class Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [Text("x"), {"k": Text("x")}, {1: 2}, {None: 1}, "\ud800", {"a": ["\udfff"]}, [[[[[[[1]]]]]]] * 2],
    ids=range(7),
)
def test_what_the_engine_leaves_to_json_dumps_is_json_dumps(value):
    assert json_body(value) == json.dumps(value).encode()


def test_a_nesting_past_the_engines_depth_is_json_dumps():
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert _engine.json_dumps(deep) is None
    assert json_body(deep) == json.dumps(deep).encode()


def test_json_body_refuses_what_json_dumps_refuses_and_goes_on():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        json_body({"c": cycle})
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_body({"x": [object()]})
    shared = [1]
    assert json_body({"a": shared, "b": shared}) == b'{"a": [1], "b": [1]}'  # left mid-way, nothing stays marked
