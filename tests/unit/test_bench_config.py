"""`squall bench`: header parsing and the engine configuration built from the parsed command line."""

import pytest

from squall.cli import build_parser
from squall.commands import bench
from squall.errors import UsageError


def config_of(*argv):
    parser, _ = build_parser()
    return bench.engine_config(parser.parse_args(["bench", "http://127.0.0.1:8000/x?y=1", *argv]))


@pytest.mark.parametrize(
    "raw, parsed",
    [
        (["Accept: text/plain"], [("Accept", "text/plain")]),
        (["  X-Pad :   spaced value  "], [("X-Pad", "spaced value")]),
        (["Authorization: Bearer a:b:c"], [("Authorization", "Bearer a:b:c")]),
        (["Empty:"], [("Empty", "")]),
        (["A: 1", "A: 2", "B: 3"], [("A", "1"), ("A", "2"), ("B", "3")]),
        ([], []),
    ],
)
def test_headers(raw, parsed):
    assert bench._headers(raw) == parsed


@pytest.mark.parametrize("raw", ["no colon", ": no name", "   : x"])
def test_bad_headers(raw):
    with pytest.raises(UsageError, match="invalid header"):
        bench._headers([raw])


def test_defaults():
    config, body = config_of()
    assert body == b""
    assert config == {
        "url": "http://127.0.0.1:8000/x?y=1",
        "method": "GET",
        "headers": [],
        "name": None,
        "connections": 50,
        "requests": 200,  # neither -n nor -t
        "duration": None,
        "rate": None,
        "arrival": "constant",
        "ramp": None,
        "timeout": 30.0,
        "insecure": False,
        "http2": False,
        "h2_streams": 1,
        "keepalive": True,
        "binary": False,
        "threads": None,
    }


def test_every_flag_reaches_the_engine():
    config, body = config_of(
        "-t", "2m", "-c", "8", "--rate", "500.5", "--arrival", "poisson", "--ramp", "10s", "--threads", "3",
        "-m", "PUT", "-H", "A: b", "-d", "payload", "--name", "put x", "--timeout", "250ms", "--insecure",
        "--http2", "--h2-streams", "4", "--no-keepalive",
    )  # fmt: skip
    assert body == b"payload"
    assert config == {
        "url": "http://127.0.0.1:8000/x?y=1",
        "method": "PUT",
        "headers": [("A", "b")],
        "name": "put x",
        "connections": 8,
        "requests": None,
        "duration": 120.0,
        "rate": 500.5,
        "arrival": "poisson",
        "ramp": 10.0,
        "timeout": 0.25,
        "insecure": True,
        "http2": True,
        "h2_streams": 4,
        "keepalive": False,
        "binary": False,
        "threads": 3,
    }


def test_a_body_makes_the_method_post():
    config, body = config_of("-d", '{"a": 1}')
    assert (config["method"], body) == ("POST", b'{"a": 1}')


def test_data_file(tmp_path):
    path = tmp_path / "body.bin"
    path.write_bytes(b"\x00\x01binary")
    config, body = config_of("--data-file", str(path))
    assert (config["method"], body) == ("POST", b"\x00\x01binary")


def test_an_unreadable_data_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot read --data-file"):
        config_of("--data-file", str(tmp_path / "missing"))


def test_closed_model_uses_no_more_connections_than_requests():
    assert config_of("-n", "10", "-c", "50")[0]["connections"] == 10
    assert config_of("-n", "10", "-c", "5")[0]["connections"] == 5
    # with a duration or a rate, every connection may be used
    assert config_of("-n", "10", "-c", "50", "--rate", "100")[0]["connections"] == 50
    assert config_of("-t", "1s", "-c", "50")[0]["connections"] == 50


def test_requests_and_duration_together():
    config, _ = config_of("-n", "1000", "-t", "5s")
    assert (config["requests"], config["duration"]) == (1000, 5.0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-c", "0"], "'0' must be at least 1"),
        (["-n", "ten"], "'ten' is not a whole number"),
        (["-t", "soon"], "invalid duration 'soon'"),
        (["--rate", "0"], "invalid rate '0': must be a number more than zero"),
        (["--rate", "fast"], "invalid rate 'fast'"),
        (["--timeout", "0s"], "must be more than zero"),
        (["--h2-streams", "-1"], "'-1' must be at least 1"),
        (["--threads", "1.5"], "'1.5' is not a whole number"),
    ],
)
def test_bad_values_are_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message):
        config_of(*argv)


def test_mqtt_verify_never_ends_in_0_with_unsent_or_refused_messages():
    from squall import exitcodes
    from squall.commands.mqtt import exit_code

    def result(**m):
        base = {"subscribe_only": False, "published": 358, "verify": True, "unsent": 0, "failed": 0,
                "delivery": {"lost": 0, "received": 358}}  # fmt: skip
        return {"mqtt": {**base, **m}}

    assert exit_code(result())[0] == exitcodes.OK
    assert exit_code(result(unsent=392))[0] == exitcodes.LOST
    assert exit_code(result(failed=35))[0] == exitcodes.LOST
    assert exit_code(result(unsent=392, verify=False, delivery=None))[0] == exitcodes.OK  # without --verify: counted
    # The engine's `failed` counts the unsent too (each due message is published, failed or unsent):
    # 401 unsent of 401 failed are 401 messages, not 802.
    assert exit_code(result(unsent=401, failed=401)) == (exitcodes.LOST, "401 messages never sent: not delivered")
    assert exit_code(result(unsent=401, failed=410))[1] == (
        "401 messages never sent and 9 refused or unacknowledged: not delivered"
    )
    assert exit_code(result(failed=35))[1] == "35 refused or unacknowledged: not delivered"
