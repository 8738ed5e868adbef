"""Bad input: one clear line on stderr, a documented exit code, never a traceback or a hang."""

import gzip
import json
import os
import resource

import pytest

from support import HERE, free_port, squall


def one_line_error(p, code, *needles):
    assert p.returncode == code, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["not a url"], "invalid URL"),
        (["localhost:8080/"], "invalid URL"),
        (["ftp://127.0.0.1/"], "scheme 'ftp' is not http, https, ws or wss"),
        (["http://127.0.0.1:1/", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["http://127.0.0.1:1/", "-t", "10 parsecs"], "invalid duration"),
        (["http://127.0.0.1:1/", "-c", "0"], "must be at least 1"),
        (["http://127.0.0.1:1/", "-n", "many"], "not a whole number"),
        (["http://127.0.0.1:1/", "--rate", "-5"], "invalid rate"),
        (["http://127.0.0.1:1/", "-H", "NoColon"], "invalid header"),
        (["http://127.0.0.1:1/", "--data-file", "/nonexistent/body"], "cannot read --data-file"),
        (["http://127.0.0.1:1/", "-m", "GE T"], "invalid HTTP method"),
        (["http://127.0.0.1:1/", "--web-port", "65536"], "invalid port '65536': a port is 0 to 65535"),
        (["http://127.0.0.1:1/", "--web-port", "-1"], "invalid port '-1'"),
    ],
)
def test_usage_errors_exit_2(args, needle):
    one_line_error(squall("bench", *args), 2, needle)


@pytest.mark.parametrize(
    "args",
    [
        ["demo", "--serve", "--port", "99999"],
        ["mqtt", "--broker", "mqtt://127.0.0.1:1", "--web-port", "70000"],
        ["-f", HERE / "locustfiles" / "cli_bounded.py", "--headless", "-P", "70000"],
        ["-f", HERE / "locustfiles" / "cli_bounded.py", "--master", "--master-bind-port", "70000"],
        ["-f", HERE / "locustfiles" / "cli_bounded.py", "--worker", "--master-port", "70000"],
    ],
)
def test_a_port_past_65535_is_refused_by_every_command_in_one_line(args):
    """Each was a traceback from bind or connect (OverflowError) before its parser refused it."""
    one_line_error(squall(*args), 2, "invalid port '", "a port is 0 to 65535")


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--exit-code-on-error", "256"], "invalid exit code '256': an exit code is 0 to 255"),  # (was exit 0)
        (["--exit-code-on-error", "-1"], "invalid exit code '-1'"),
        (["--master", "--expect-workers", "0"], "--expect-workers: '0' must be at least 1"),
        (["--master", "--expect-workers-max-wait", "-1"], "'-1' must be at least 0"),
        (["--processes", "99999999999999999999"], "more than 16 a core"),  # (it forked until killed)
    ],
)
def test_locustfile_run_values_out_of_range_are_refused_in_one_line(flags, needle):
    run = ("-f", HERE / "locustfiles" / "cli_bounded.py", "--headless", "-H", "http://127.0.0.1:1", "-t", "1s")
    one_line_error(squall(*run, *flags), 2, needle)


def test_no_command_and_unknown_command():
    assert squall().returncode == 2
    one_line_error(squall("frobnicate"), 2, "invalid choice")


def test_refused_connection_exits_3():
    one_line_error(squall("bench", f"http://127.0.0.1:{free_port()}/", "-n", 5), 3, "connection refused")


def test_unresolvable_host_exits_3():
    one_line_error(squall("bench", "http://no-such-host.invalid/", "-n", 5), 3, "cannot resolve host")


def test_server_closing_mid_response_fails_every_request(odd_server):
    line = one_line_error(squall("bench", odd_server.url + "/close-mid", "-n", 20, "-c", 2), 1, "every request failed")
    assert "closed the connection mid-response" in line


def _limit_files(soft, hard):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_open_file_limit_is_raised_or_explained(nginx):
    p = squall("bench", nginx.url + "/", "-c", 400, "-n", 800, preexec_fn=_limit_files(128, 4096))
    assert p.returncode == 0, p.stderr  # soft limit raised to the hard limit by squall itself
    one_line_error(
        squall("bench", nginx.url + "/", "-c", 400, "-n", 800, preexec_fn=_limit_files(128, 256)),
        2,
        "open files",
        "ulimit -n",
    )


def test_a_locustfile_run_past_the_open_file_limit_says_only_that(nginx):
    """The limit is checked before the run logs its start: the refusal is the one line printed."""
    one_line_error(
        squall("-f", HERE / "locustfiles" / "cli_bounded.py", "--headless", "-H", nginx.url, "-u", 400, "-t", "1s",
               preexec_fn=_limit_files(128, 256)),
        2, "open files", "ulimit -n",
    )  # fmt: skip


def test_names_too_long_are_refused_before_the_run(nginx, tmp_path):
    """An output, a config file or an input whose name the file system cannot take: one line, exit 2, and
    nothing sent (the outputs were found unwritable only after the run, exit 5; --config's was a
    traceback: pathlib's is_file raises on ENAMETOOLONG)."""
    long, before = "n" * 256, nginx.requests_logged()
    for flag, value in (("--json", tmp_path / long), ("--html", tmp_path / long), ("--csv", tmp_path / ("c" * 240))):
        one_line_error(squall("bench", nginx.url + "/", "-n", 5, flag, value), 2, flag, "file name too long")
    one_line_error(squall("bench", nginx.url + "/", "-n", 5, "--data-file", tmp_path / long), 2, "--data-file")
    locustfile = HERE / "locustfiles" / "cli_bounded.py"
    run = ("-f", locustfile, "--headless", "-H", nginx.url, "-t", "1s")
    one_line_error(squall(*run, "--config", tmp_path / long), 2, "config file", "not found")
    one_line_error(squall(*run, "--csv", tmp_path / ("c" * 240)), 2, "--csv", "file name too long")
    assert nginx.requests_logged() == before


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_silent_target_times_out_and_ctrl_c_is_prompt(tmp_path, sigint):
    """A server that accepts but never answers the TLS handshake: the pre-run connect times out with
    one line, and Ctrl-C during it ends squall at once instead of after the timeout. Also when squall
    starts with SIGINT ignored (a non-interactive shell's background job: `.ci/run ... &` gave it to
    every test's squall, and the CI run saw no exit in 10 s; before squall.runtime.signals.take_ctrl_c it
    ignored SIGINT until the connect timed out)."""
    import os
    import signal
    import socket
    import subprocess
    import time

    from support import squall_process

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"https://127.0.0.1:{silent.getsockname()[1]}/"
        one_line_error(squall("bench", url, "-n", 1, "--timeout", "1s"), 3, "timed out")
        silent.setblocking(False)
        while True:  # drop what the first run left in the backlog
            try:
                silent.accept()[0].close()
            except BlockingIOError:
                break
        silent.settimeout(30)
        # With faulthandler on, a process that does not end is made to say where each thread waits.
        disposition = signal.SIG_IGN if sigint == "ignored" else signal.SIG_DFL
        proc = squall_process(
            "bench",
            url,
            "-n",
            1,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),
        )
        held, _ = silent.accept()  # squall has started: it waits for a TLS handshake that won't come
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler dumps every thread's stack
            _, stderr = proc.communicate(timeout=10)
            pytest.fail(f"no exit 10 s after SIGINT; the threads then:\n{stderr[-4000:]}")
        assert time.monotonic() - t0 < 3
        assert proc.returncode == 130 and "Traceback" not in stderr
        held.close()


def test_output_paths_are_checked_before_the_run(nginx, tmp_path):
    nginx.reset_log()
    missing = tmp_path / "no" / "such" / "dir"
    for cmd in (
        ["bench", nginx.url + "/", "-n", 5, "--json", missing / "r.json"],
        ["bench", nginx.url + "/", "-n", 5, "--html", tmp_path],  # a directory
        ["bench", nginx.url + "/", "-n", 5, "--csv", missing / "run"],
        ["-f", HERE / "locustfiles" / "dashboard.py", "-H", nginx.url, "--headless", "-t", "1s",
         "--result-json", missing / "r.json"],
        ["-f", HERE / "locustfiles" / "dashboard.py", "-H", nginx.url, "--headless", "-t", "1s",
         "--html", missing / "r_{u}.html"],
    ):  # fmt: skip
        p = squall(*cmd)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert nginx.requests_logged() == 0  # refused before any load


def test_no_output_is_written_over_an_input_or_another_output(nginx, tmp_path):
    """Refused before the run, the input untouched: `squall report r.json --html r.json` replaced the
    measured result with its own report, as two outputs naming one file lost the first."""
    nginx.reset_log()
    result, body, locustfile = tmp_path / "r.json", tmp_path / "body.bin", tmp_path / "locustfile.py"
    result.write_bytes((HERE.parent / "web" / "samples" / "bench-open.json").read_bytes())
    body.write_bytes(b"x=1")
    locustfile.write_bytes((HERE / "locustfiles" / "dashboard.py").read_bytes())
    inputs = {path: path.read_bytes() for path in (result, body, locustfile)}
    bench = ["bench", nginx.url + "/", "-n", 5]
    run = ["-f", locustfile, "-H", nginx.url, "--headless", "-t", "1s"]
    for cmd, needle in (
        (["report", result, "--html", result], "--html"),
        (["compare", result, result, "--html", result], "--html"),
        ([*bench, "--data-file", body, "--json", body], "--json"),
        ([*bench, "--json", tmp_path / "out", "--html", tmp_path / "out"], "--html"),
        ([*bench, "--csv", tmp_path / "run", "--json", tmp_path / "run_stats.csv"], "--json"),
        ([*run, "--html", locustfile], "--html"),
        (["mqtt", "--broker", "mqtt://127.0.0.1:1", "-t", "1s", "--payload", f"@{body}", "--json", body], "--json"),
    ):
        line = one_line_error(squall(*cmd), 2, needle)
        assert "reads" in line or "writes that file too" in line, line
    assert {path: path.read_bytes() for path in inputs} == inputs
    assert nginx.requests_logged() == 0  # refused before any load
    p = squall(*bench, "-q", "--json", "/dev/null", "--html", "/dev/null")  # (a device: anything may write there)
    assert p.returncode == 0, p.stderr


def test_http2_against_a_server_without_it_is_one_line_before_the_run(nginx):
    """--http2 over plain HTTP is prior knowledge: nginx's HTTP/1.1 port answers the preface with a 400.
    Said before the run (exit 3), not 3,000 failures of "closed mid-response" over a connection each;
    the same preflight passes on its HTTP/2 ports, with and without TLS."""
    nginx.reset_log()
    line = one_line_error(squall("bench", nginx.url + "/", "--http2", "-n", 300, "-c", 10), 3)
    assert line.endswith(
        "does not speak HTTP/2 without TLS (prior knowledge): it answered as HTTP/1.x ('HTTP/1.1 400 Bad Request'); "
        "run without --http2 for HTTP/1.1"
    ), line
    assert nginx.requests_logged() <= 1  # (the preface's 400 at most)
    for url in (nginx.h2c_url, nginx.tls_url):
        p = squall("bench", url + "/", "--http2", "--insecure", "-n", 20, "-c", 2, "-q")
        assert p.returncode == 0, p.stderr


def test_a_server_that_never_answers_is_not_a_success(tmp_path):
    import socket

    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
        p = squall("bench", f"http://127.0.0.1:{port}/", "-c", 2, "-t", "1s", "-q")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "no request completed" in p.stderr


def _result_files(tmp_path):
    """A result in the forms people hand over by mistake: (file, what the error line must say)."""
    sample = (HERE.parent / "web" / "samples" / "bench-closed.json").read_bytes()
    text = sample.decode()
    files = {
        "run.json.gz": (gzip.compress(sample), "gzip-compressed: decompress it first"),
        "utf16.json": (text.encode("utf-16"), "is UTF-16 text"),
        "utf16le.json": (text.replace('"GET"', '"G\u00c9T"', 1).encode("utf-16-le"), "looks like UTF-16 or UTF-32"),
        "binary.json": (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "is not text (a binary file)"),
        "latin1.json": (text.replace('"GET"', '"G\u00c9T"', 1).encode("latin-1"), "is not UTF-8 text (byte 0xc9"),
        "stats.json": (json.dumps([{"name": "/", "method": "GET", "num_requests": 1}]).encode(), "Locust's JSON stats"),
        "cut.json": (sample[: len(sample) // 2], "ends before its JSON does"),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, "nests deeper than 64 levels"),
        "nan.json": (text.replace('"duration_s": ', '"duration_s": NaN, "x": ', 1).encode(), "duration_s is nan"),
        "types.json": (text.replace('"requests": 200447', '"requests": "many"', 1).encode(), "aggregate.requests is"),
        "r.json.partial.json": (b'{"seconds": 3}', "a crashed run's totals only; squall report "),
    }
    for name, (data, _) in files.items():
        (tmp_path / name).write_bytes(data)
    return [(tmp_path / name, needle) for name, (_, needle) in files.items()]


@pytest.mark.slow
def test_report_and_compare_refuse_what_is_not_a_result_in_one_line(tmp_path):
    """squall report and squall compare on a compressed file, another encoding, Locust's JSON, a truncated
    or otherwise broken result: exit 2, one line naming the file and what it is (issue 26)."""
    good = HERE.parent / "web" / "samples" / "bench-open.json"
    for path, needle in _result_files(tmp_path):
        one_line_error(squall("report", path, "--html", tmp_path / "r.html"), 2, str(path), needle)
        one_line_error(squall("compare", good, path), 2, str(path), needle)
    assert not (tmp_path / "r.html").exists()


def test_report_and_compare_refuse_an_output_they_cannot_write_in_one_line(tmp_path):
    """Checked before anything is read or drawn: a name too long for the file system (a traceback from
    the write before), a directory, a missing directory; and --png's directory likewise."""
    good = HERE.parent / "web" / "samples" / "bench-open.json"
    long = str(tmp_path / ("q" * 256))
    for out, needle in (
        (long + ".html", "file name too long"),
        (tmp_path, "is a directory"),
        (tmp_path / "no" / "r.html", "no such directory"),
    ):
        one_line_error(squall("report", good, "--html", out), 2, "--html", needle)
        one_line_error(squall("compare", good, good, "--html", out), 2, "--html", needle)
    p = squall("compare", good, good, "--html", tmp_path / "c.html")
    assert p.returncode == 0 and (tmp_path / "c.html").read_text().startswith("<!doctype html>"), p.stderr
    assert sorted(os.listdir(tmp_path)) == ["c.html"]  # written whole, no temporary left


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["bench", "http://127.0.0.1:1/", "-n", "1", "--data-file", "/dev/zero"],
            "--data-file '/dev/zero' is larger than 64 MiB",
        ),
        (
            ["bench", "ws://127.0.0.1:1/", "-n", "1", "--message", "@/dev/zero"],
            "--message '@/dev/zero' is larger than 64 MiB",
        ),
        (
            ["mqtt", "--broker", "mqtt://127.0.0.1:1", "-t", "1s", "--payload", "@/dev/zero"],
            "payload file '/dev/zero' is larger",
        ),
        (["report", "/dev/zero", "--html", "/dev/null"], "/dev/zero is larger than 256 MiB"),
        (["compare", "/dev/zero", "/dev/zero"], "/dev/zero is larger than 256 MiB"),
    ],
)
def test_a_file_without_end_is_refused_not_read_until_memory_runs_out(args, needle):
    """/dev/zero as a body, a message, a payload or a result: each was read whole (a hang while memory
    grew); now at most a bound is read, and more is refused in one line."""
    one_line_error(squall(*args, timeout=60), 2, needle)
