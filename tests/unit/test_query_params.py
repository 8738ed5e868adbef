"""requests' `params=` and form `data=` as squall encodes them (squall._engine.encoded_params for the common
shapes, squall.clients._encode_params for the rest) against requests itself, the ground truth of what
Locust's HttpUser sends: the URL a PreparedRequest gets, the body it posts, a session's params merged."""

import random

import pytest
import requests

from squall import _engine
from squall.clients import _encode_params, _merged_params, _with_query

CASES = [
    {"a": None, "b": 1},
    {"a": [1, None, "x y"]},
    {"\u00e9": "\u00fc \U0001f600"},
    [("a", 1), ("a", 2)],
    (("a", "b"),),
    {"a": b"\xff"},
    {b"k": "v"},
    {"a": ""},
    {"a": True, "b": False},
    {"a": 1.5, "b": 1e16, "c": float("nan"), "d": -0.0, "e": 10**30},
    {"q": "a&b=c+d~*'()!/?#%"},
    {"a": (1, 2)},
    {"a": [(1, 2)]},  # (a value's item that is itself a sequence: urlencode's doseq takes it apart)
    {"a": {"x": 1}},
    {"a": range(3)},
    {"a": set()},
    {1: 2},
    {None: 1},
    [("a", None)],
    {},
    [],
    {"k": "v", "n": [None]},
]


def requests_url(url, params):
    return requests.Request("GET", "http://h" + url, params=params).prepare().url


@pytest.mark.parametrize("params", CASES, ids=range(len(CASES)))
@pytest.mark.parametrize("url", ["/p", "/p?z=1"])
def test_a_query_is_what_requests_sends(url, params):
    assert "http://h" + _with_query(url, params) == requests_url(url, params)


@pytest.mark.parametrize("params", CASES, ids=range(len(CASES)))
def test_the_engines_encoding_is_pythons_where_it_gives_one(params):
    fast = _engine.encoded_params(params)
    assert fast is None or fast == _encode_params(params)


def test_what_requests_refuses_is_refused_alike():
    for params in ({"s": "\ud800"}, [("a", "b", "c")], [1]):
        with pytest.raises(Exception) as ours:
            _with_query("/p", params)
        with pytest.raises(Exception) as theirs:
            requests_url("/p", params)
        assert type(ours.value) is type(theirs.value), params


def test_text_params_and_a_fragment():
    assert _with_query("/p", "a=1&b") == "/p?a=1&b"
    assert _with_query("/p", b"a=1") == "/p?a=1"
    assert _with_query("/p#top", {"a": 1}) == "/p?a=1#top"
    assert _with_query("/p", {"a": None}) == "/p"
    assert "http://h" + _with_query("/p?", {"a": 1}) == requests_url("/p?", {"a": 1}) == "http://h/p?a=1"


def scalar(rng):
    return rng.choice(
        [
            None,
            rng.randint(-(10**20), 10**20),
            rng.random() * 10 ** rng.randint(-5, 20),
            rng.choice([True, False]),
            "".join(rng.choice("ab ~-_.*&=+/?#%\u00e9\u4e2d\U0001f600") for _ in range(rng.randint(0, 6))),
            bytes(rng.randrange(256) for _ in range(rng.randint(0, 4))),
        ]
    )


def test_random_params_read_as_requests_reads_them():
    """2,000 random dicts and lists of pairs (fixed seed), values scalars or lists of them."""
    rng = random.Random(38)
    for _ in range(2000):
        pairs = []
        for _ in range(rng.randint(0, 5)):
            key = rng.choice(["k", "\u00e9 t", "a&b", b"raw", 7])
            value = [scalar(rng) for _ in range(rng.randint(0, 3))] if rng.random() < 0.3 else scalar(rng)
            pairs.append((key, value))
        params = dict(pairs) if rng.random() < 0.5 else pairs
        assert "http://h" + _with_query("/p?z=1", params) == requests_url("/p?z=1", params), params
        fast = _engine.encoded_params(params)
        assert fast is not None and fast == _encode_params(params), params


@pytest.mark.parametrize(
    ("session", "call"),
    [
        ({"tenant": "acme", "v": 1}, {"tenant": "other", "page": 2}),
        ({"tenant": "acme", "v": 1}, {"v": None}),
        ({"tenant": "acme"}, None),
        ({"tenant": "acme"}, {}),
        ({"tenant": "acme"}, [("k", "v")]),
        ({"tenant": "acme"}, "raw=1"),
        ([("tenant", "acme")], {"k": "v"}),
    ],
)
def test_a_sessions_params_are_merged_as_requests_merges_them(session, call):
    s = requests.Session()
    s.params = session
    want = s.prepare_request(requests.Request("GET", "http://h/p", params=call)).url
    assert "http://h" + _with_query("/p", _merged_params(session, call)) == want


@pytest.mark.parametrize("data", [{"a": None, "b": ["1", "2"], "c": "x&y \u00e9"}, [("k", "v"), ("k", None)]])
def test_form_fields_are_encoded_as_requests_encodes_them(data):
    assert _encode_params(data).encode() == requests.Request("POST", "http://h/", data=data).prepare().body.encode()
