"""Outputs that survive every way a run ends: a file that cannot be written is a non-zero exit and the
run's partial file stays; Ctrl-C pressed again (or again and again) while the outputs are written
neither cuts a file short nor loses one. Ground truth: the server's own count of requests."""

import json
import resource
import shlex
import signal
import subprocess
import sys
import time

from support import HERE, squall, squall_process, wait_until

FILES = HERE / "locustfiles"
LIMIT = 12 * 1024  # bytes a file may grow to (RLIMIT_FSIZE): the CSV files fit, a result JSON does not


def small_files():
    """In the child: files beyond LIMIT fail with EFBIG, as a full disk fails with ENOSPC (Python
    ignores SIGXFSZ, so the write returns the error instead of killing the process)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_result_that_cannot_be_written_is_exit_5_and_its_partial_file_stays(nginx, tmp_path):
    nginx.reset_log()
    out, prefix = tmp_path / "r.json", tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-m", "squall", "bench", nginx.url + "/", "-n", "300", "-c", "4", "--json", str(out),
         "--csv", str(prefix), "-q"],
        capture_output=True, text=True, timeout=60, preexec_fn=small_files,
    )  # fmt: skip
    assert p.returncode == 5, p.stderr
    assert f"squall: error: cannot write {out}: File too large" in p.stderr
    assert not out.exists()  # never half a file: the temporary one is gone, no result under its name
    assert list(tmp_path.glob(".r.json.*")) == []
    # The CSV files (small) were written all the same, with every request nginx served.
    stats = (tmp_path / "run_stats.csv").read_text().splitlines()
    assert stats[-1].split(",")[2] == "300" == str(nginx.requests_logged())
    # The partial file is the run's only copy: it stays, and squall report renders it.
    partial = tmp_path / "r.json.partial.jsonl"
    assert partial.exists() and f"stays in {partial}" in p.stderr
    rendered = squall("report", partial, "--html", tmp_path / "partial.html")
    assert rendered.returncode == 0, rendered.stderr


def test_an_output_directory_removed_mid_run_is_exit_5_not_a_traceback(nginx, tmp_path):
    """The partial files' directory goes while the run writes them each second: said once, the run goes
    on, its result is said unwritable (exit 5) and the CSV files elsewhere hold every request nginx
    served (a traceback from the partial files' write ended the run, exit 1, the CSV never written)."""
    nginx.reset_log()
    gone, prefix = tmp_path / "gone", tmp_path / "run"
    gone.mkdir()
    with open(tmp_path / "stderr", "w") as err:
        proc = squall_process(
            "bench", nginx.url + "/", "-t", "3s", "-c", 2, "--json", gone / "r.json", "--csv", prefix, "-q",
            stderr=err,
        )  # fmt: skip
        wait_until(lambda: (gone / "r.json.partial.json").exists(), "the partial totals", proc, timeout=30)
        for f in gone.iterdir():
            f.unlink()
        gone.rmdir()
        proc.communicate(timeout=60)
    stderr = (tmp_path / "stderr").read_text()
    assert proc.returncode == 5 and "Traceback" not in stderr, stderr[-2000:]
    assert f"cannot write {gone / 'r.json'}.partial.jsonl (No such file or directory): the run goes on" in stderr
    assert f"squall: error: cannot write {gone / 'r.json'}: No such file or directory" in stderr
    counted = int((tmp_path / "run_stats.csv").read_text().splitlines()[-1].split(",")[2])
    assert counted <= nginx.requests_logged() <= counted + 2  # (+ one in flight a connection at the end)


def test_a_reader_that_closes_stdout_changes_neither_the_files_nor_the_exit_code(nginx, tmp_path):
    """`squall bench URL --json r.json ... | head -1`: the pipe closes after the first line. The run still
    writes every file and exits with its own code (99: a threshold failed); a BrokenPipeError from the
    summary's print ended it with 0, its files unwritten and its partial files left. The same for a
    locustfile's run whose JSON goes to stdout (`--json`: its code, 1, its requests failing: 500)."""
    nginx.reset_log()
    out, prefix, html = tmp_path / "r.json", tmp_path / "run", tmp_path / "r.html"
    cmd = [sys.executable, "-m", "squall", "bench", nginx.url + "/", "-n", "300", "-c", "4", "--json", str(out),
           "--csv", str(prefix), "--html", str(html), "--threshold", "p50<0.001ms"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # (closed before the first line: the pipe's reader is gone)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 99 and b"Traceback" not in err, err[-2000:]
    assert json.loads(out.read_text())["aggregate"]["requests"] == 300 == nginx.requests_logged()
    assert html.read_text().rstrip().endswith("</html>") and (tmp_path / "run_stats.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []
    locustfile = tmp_path / "failing.py"
    locustfile.write_text(
        "from locust import HttpUser, constant, task\n\n\nclass Failing(HttpUser):\n    wait_time = constant(0.01)\n\n"
        "    @task\n    def gone(self):\n        self.client.get('/status/500')\n"
    )
    cmd = [sys.executable, "-m", "squall", "-f", str(locustfile), "-H", nginx.url, "--headless", "-u", "1",
           "-t", "1s", "--json", "--csv", str(tmp_path / "f")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and b"Traceback" not in err, err[-2000:]
    assert (tmp_path / "f_stats.csv").exists()


def test_a_report_shows_the_runs_command_line_not_its_own(nginx, tmp_path):
    """The result keeps the run's command line (its password redacted, as the page shows it), which
    `squall report`'s page shows under Command: it showed `squall report r.json`."""
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    url = nginx.url.replace("http://", "http://ann:s3cret@") + "/"
    p = squall("bench", url, "-n", 20, "-c", 2, "--json", out, "-q")
    assert p.returncode == 0, p.stderr
    line = json.loads(out.read_text())["command_line"]
    shown = nginx.url.replace("http://", "http://ann:***@") + "/"
    assert line == shlex.join(["squall", "bench", shown, "-n", "20", "-c", "2", "--json", str(out), "-q"])
    assert squall("report", out, "--html", html).returncode == 0
    page = html.read_text()
    assert json.dumps(line)[1:-1] in page and "squall report" not in page and "s3cret" not in page


def _interrupt_twice(proc, served, burst_s):
    """SIGINT once the target has seen requests, then again every 50 ms for `burst_s` (the writing)."""
    wait_until(lambda: served() > 2000, "2,000 requests at the target", proc, timeout=60)
    proc.send_signal(signal.SIGINT)
    end = time.monotonic() + burst_s
    while time.monotonic() < end and proc.poll() is None:
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)


def test_ctrl_c_again_and_again_while_a_locustfile_writes_its_outputs(nginx, tmp_path):
    """2,000 endpoint names: building the result and writing the JSON, CSV and HTML takes long enough for
    a burst of Ctrl-C to land in it (the issue: no file written, exit -2, every time)."""
    nginx.reset_log()
    out, prefix, html = tmp_path / "r.json", tmp_path / "run", tmp_path / "r.html"
    with open(tmp_path / "stderr", "w") as err:
        proc = squall_process(
            "-f", FILES / "many_names.py", "-H", nginx.url, "--headless", "-u", 4, "-t", "60s",
            "--result-json", out, "--csv", prefix, "--html", html, "--only-summary", stderr=err,
        )  # fmt: skip
        _interrupt_twice(proc, nginx.requests_logged, burst_s=4.0)
        proc.communicate(timeout=60)
    assert proc.returncode == 0, (tmp_path / "stderr").read_text()[-2000:]  # -f: Locust's code, not 130
    r = json.loads(out.read_text())  # whole
    assert len(r["endpoints"]) == 2000
    counted = r["aggregate"]["requests"]
    # What nginx served: every counted request, and the few in flight when the users stopped.
    assert counted <= nginx.requests_logged() <= counted + r["abandoned"]
    stats = (tmp_path / "run_stats.csv").read_text().splitlines()
    assert len(stats) == 2002 and stats[-1].split(",")[2] == str(counted)
    assert html.read_text().rstrip().endswith("</html>")


def test_ctrl_c_again_while_bench_writes_its_outputs(nginx, tmp_path):
    nginx.reset_log()
    out, prefix, html = tmp_path / "b.json", tmp_path / "b", tmp_path / "b.html"
    proc = squall_process(
        "bench", nginx.url + "/", "-c", 4, "-t", "60s", "--json", out, "--csv", prefix, "--html", html, "-q",
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    _interrupt_twice(proc, nginx.requests_logged, burst_s=2.0)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    r = json.loads(out.read_text())
    assert r["aggregate"]["requests"] <= nginx.requests_logged() <= r["aggregate"]["requests"] + r["abandoned"]
    assert (tmp_path / "b_stats.csv").read_text().splitlines()[-1].split(",")[2] == str(r["aggregate"]["requests"])
    assert html.read_text().rstrip().endswith("</html>")
