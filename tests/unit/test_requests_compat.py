"""requests' keywords as squall turns them into a request, checked against requests itself (the
ground truth: what Locust's HttpSession would send) on the same inputs."""

import io
from email.parser import BytesParser
from email.policy import HTTP

import pytest
import requests
import requests.auth

from squall import requests_compat as rc


def prepared(**kw):
    return requests.Session().prepare_request(requests.Request("POST", "http://h/x", **kw))


def parts(content_type, body):
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    return sorted(
        (
            p.get_param("name", header="content-disposition"),
            p.get_filename(),
            p.get("content-type"),
            p.get_payload(decode=True),
        )
        for p in message.iter_parts()
    )


@pytest.mark.parametrize(
    "files, data",
    [
        ({"f": io.BytesIO(b"abc")}, None),
        ({"f": ("a.txt", b"hello", "text/plain")}, {"x": "1", "many": ["a", "b"]}),
        ([("f", ("a.bin", b"\x00\x01")), ("g", ("b.json", '{"k": 1}', "application/json", {"X-Extra": "1"}))], None),
        ({"f": ("name.csv", io.StringIO("a,b\n"))}, [("field", 3)]),
    ],
)
def test_multipart_bodies_hold_what_requests_encodes(files, data):
    def copy(value):  # file objects are read once: each encoder gets its own
        if isinstance(value, dict):
            return {k: copy(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(copy(v) for v in value)
        if isinstance(value, io.BytesIO):
            return io.BytesIO(value.getvalue())
        if isinstance(value, io.StringIO):
            return io.StringIO(value.getvalue())
        return value

    theirs = prepared(files=copy(files), data=copy(data))
    body, ctype = rc.encode_files(copy(files), copy(data))
    assert ctype.startswith("multipart/form-data; boundary=")
    assert parts(ctype, body) == parts(theirs.headers["Content-Type"], theirs.body)


def test_header_merge_is_case_insensitive_and_none_removes():
    session = rc.CaseInsensitiveDict({"Authorization": "Bearer a", "X-Client": "c", "Accept": "*/*"})
    merged = rc.merge_headers(session, {"authorization": "Bearer b", "X-Client": None, "X-New": "n"})
    s = requests.Session()
    s.headers.clear()
    s.headers.update({"Authorization": "Bearer a", "X-Client": "c", "Accept": "*/*"})
    req = s.prepare_request(
        requests.Request("GET", "http://h/", headers={"authorization": "Bearer b", "X-Client": None, "X-New": "n"})
    )
    assert {k.lower(): v for k, v in merged} == {k.lower(): v for k, v in req.headers.items()}
    assert rc.merge_headers(session, None) == [("Authorization", "Bearer a"), ("X-Client", "c"), ("Accept", "*/*")]


def test_the_sessions_headers_as_sent_follow_every_change():
    """merge_headers keeps the session's converted headers until one changes: every way of changing
    them (set, delete, update, pop, clear) is seen, and what a caller appends to its list stays there."""
    session = rc.CaseInsensitiveDict({"Accept": "*/*"})
    first = rc.merge_headers(session, None)
    first.append(("Content-Type", "text/plain"))  # a request's own addition
    assert rc.merge_headers(session, None) == [("Accept", "*/*")]
    session["X-Token"] = b"t1"
    assert rc.merge_headers(session, None) == [("Accept", "*/*"), ("X-Token", "t1")]
    session.update({"x-token": "t2"})
    assert rc.merge_headers(session, None) == [("Accept", "*/*"), ("x-token", "t2")]
    session.pop("ACCEPT")
    assert rc.merge_headers(session, None) == [("x-token", "t2")]
    del session["X-Token"]
    assert rc.merge_headers(session, None) == []
    session["A"] = "1"
    session.clear()
    assert rc.merge_headers(session, None) == []
    assert rc.merge_headers({"Plain": "dict"}, None) == [("Plain", "dict")]  # `client.headers = {...}`


@pytest.mark.parametrize(
    "auth", [("alice", "s3cret"), requests.auth.HTTPBasicAuth("bob", "pw:with:colons"), ("ünï", "cødé")]
)
def test_basic_auth_is_requests_header(auth):
    theirs = prepared(auth=auth).headers["Authorization"]
    _, headers = rc.apply_auth(auth, "GET", "http://h/", [("Authorization", "old")], b"")
    assert headers == [("Authorization", theirs)]


def test_a_custom_auth_base_edits_the_request():
    class Token(requests.auth.AuthBase):
        def __call__(self, r):
            r.headers["X-Token"] = "t"
            return r

    url, headers = rc.apply_auth(Token(), "GET", "http://h/x", [("Accept", "*/*")], b"")
    assert url == "http://h/x" and dict(headers) == {"Accept": "*/*", "X-Token": "t"}


def test_digest_auth_is_refused_not_dropped():
    with pytest.raises(rc.NotSupported, match="HTTPDigestAuth"):
        rc.apply_auth(requests.auth.HTTPDigestAuth("u", "p"), "GET", "http://h/", [], b"")


def test_squall_errors_are_caught_as_requests_errors():
    for name, base in [
        ("HTTPError", requests.exceptions.HTTPError),
        ("ConnectionError", requests.exceptions.ConnectionError),
        ("InvalidURL", requests.exceptions.InvalidURL),
    ]:
        with pytest.raises(base):
            raise rc.error_class(name)("x")
    assert issubclass(rc.error_class("InvalidURL"), ValueError)
    with pytest.raises(requests.exceptions.JSONDecodeError):
        try:
            import json

            json.loads("not json")
        except ValueError as e:
            raise rc.json_error(e, "not json") from None
