"""The dashboard's request policy (squall.web.guard) on header sets: whom it answers, whose controls it
takes. The same rules against a real dashboard and a real browser: tests/test_web_safety.py."""

from email.message import Message

from squall.web.guard import Guard, is_loopback


def headers(*pairs):
    m = Message()
    for k, v in pairs:
        m[k] = v
    return m


def test_bound_to_loopback_it_answers_localhost_its_name_and_ip_addresses_only():
    guard = Guard("127.0.0.1")
    for host in ("127.0.0.1:8089", "localhost:8089", "LOCALHOST", "localhost.", "[::1]:8089", "10.1.2.3", "127.0.0.1"):
        assert guard.host_refusal(headers(("Host", host)), "/") is None, host
    assert guard.host_refusal(headers(), "/") is None  # HTTP/1.0 without a Host: no browser sends that
    for host in ("evil.test", "evil.test:8089", "localhost.evil.test", "127.0.0.1.nip.io", "[::1", "a:b:c", "x:80x"):
        why = guard.host_refusal(headers(("Host", host)), "/")
        assert why and "\n" not in why, host
    assert guard.host_refusal(headers(("Host", "127.0.0.1"), ("Host", "127.0.0.1")), "/")  # two
    assert guard.host_refusal(headers(("Host", "127.0.0.1")), "http://evil.test/api/live")  # absolute form
    assert guard.host_refusal(headers(("Host", "127.0.0.1")), "http://[::1/") is not None
    named = Guard("localhost")
    assert is_loopback("localhost") and named.host_refusal(headers(("Host", "localhost:1")), "/") is None


def test_beyond_loopback_it_answers_every_name():
    for bind in ("0.0.0.0", "", "loadgen.example"):
        guard = Guard(bind)
        assert not is_loopback(bind)
        assert guard.host_refusal(headers(("Host", "prometheus-target.svc:8089")), "/metrics") is None


def test_controls_come_from_the_page_own_origin_as_json_with_the_token():
    guard = Guard("127.0.0.1")
    page = [("Host", "127.0.0.1:8089"), ("Content-Type", "application/json"), ("X-Squall-Token", guard.token)]
    assert guard.control_refusal(headers(*page)) is None  # curl with the token: no Origin, no Sec-Fetch
    same = [("Origin", "http://127.0.0.1:8089"), ("Sec-Fetch-Site", "same-origin")]
    assert guard.control_refusal(headers(*page, *same)) is None
    assert guard.control_refusal(headers(*page, ("Origin", "https://127.0.0.1:8089"))) is None  # a TLS proxy
    for extra, status in (
        ([("Origin", "http://localhost:8089")], 403),  # the same server by another name: another origin
        ([("Origin", "http://127.0.0.1:1")], 403),
        ([("Origin", "null")], 403),
        ([("Origin", "http://127.0.0.1:8089"), ("Origin", "http://127.0.0.1:8089")], 403),
        ([("Sec-Fetch-Site", "same-site")], 403),  # another port of localhost
        ([("Sec-Fetch-Site", "cross-site")], 403),
        ([("Sec-Fetch-Site", "none")], 403),
    ):
        refused = guard.control_refusal(headers(*page, *extra))
        assert refused and refused[0] == status, extra
    no_type = [p for p in page if p[0] != "Content-Type"]
    for kind in (None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/jsonx"):
        refused = guard.control_refusal(headers(*no_type, *([("Content-Type", kind)] if kind else [])))
        assert refused and refused[0] == 415, kind
    assert guard.control_refusal(headers(*no_type, ("Content-Type", "Application/JSON; charset=utf-8"))) is None
    no_token = [p for p in page if p[0] != "X-Squall-Token"]
    for given in (None, "", "x", guard.token + "x", guard.token.upper(), "\xe9" * 32):
        refused = guard.control_refusal(headers(*no_token, *([("X-Squall-Token", given)] if given is not None else [])))
        assert refused and refused[0] == 403, given
    assert Guard("127.0.0.1").token != guard.token  # a run's own


def test_another_sites_page_cannot_load_the_data_but_a_link_opens_the_page():
    guard = Guard("127.0.0.1")
    assert guard.read_refusal(headers()) is None  # curl, Prometheus
    assert guard.read_refusal(headers(("Sec-Fetch-Site", "same-origin"))) is None
    assert guard.read_refusal(headers(("Sec-Fetch-Site", "none"))) is None  # typed in the address bar
    link = [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]
    assert guard.read_refusal(headers(*link)) is None
    for site in ("cross-site", "same-site"):
        for mode, dest in (("no-cors", "script"), ("cors", "empty"), ("navigate", "iframe"), ("no-cors", "image")):
            fetched = [("Sec-Fetch-Site", site), ("Sec-Fetch-Mode", mode), ("Sec-Fetch-Dest", dest)]
            assert guard.read_refusal(headers(*fetched)), (site, mode, dest)
