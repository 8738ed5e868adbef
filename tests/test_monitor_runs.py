"""Monitoring wired into the commands: the target's samples beside the load's seconds, checked against
what /proc says the target spent; the generator's own view in every result."""

import json
import os
from pathlib import Path

from support import HERE, squall

FILES = HERE / "locustfiles"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds_of_tree(pid):
    """utime + stime of a process and its children (nginx's master and worker), from /proc."""
    total = 0
    for task in [pid, *_children(pid)]:
        fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                    out.append(int(entry))
            except OSError:
                pass
    return out


def test_bench_monitors_nginx_against_proc(nginx, tmp_path):
    out = tmp_path / "r.json"
    before = cpu_seconds_of_tree(nginx.proc.pid)
    p = squall("bench", nginx.url + "/", "-c", 8, "-t", "3s", "--monitor-pid", nginx.proc.pid, "--json", out, "-q")
    spent = cpu_seconds_of_tree(nginx.proc.pid) - before
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    target = r["monitor"]["targets"][0]
    assert target["label"].startswith(f"pid {nginx.proc.pid}") and target["peak"]["processes"] == 2
    # A sample per second of the load's time series, on the same t (a sampler starved past a whole
    # second skips it rather than bunch up: at most one missing on this shared machine).
    ts = [s["t"] for s in target["series"]]
    assert ts == sorted(set(ts)) and set(ts) <= {p["t"] for p in r["timeseries"]}, (ts, len(r["timeseries"]))
    assert len(ts) >= len(r["timeseries"]) - 2, (ts, len(r["timeseries"]))
    measured = sum(s["cpu_percent"] for s in target["series"] if s["cpu_percent"] is not None) / 100
    # The samples cover the run's seconds; /proc's delta covers the whole command (start-up and exit,
    # when nginx does nothing), so they agree to the clock tick and the sampling edges: 15%.
    assert spent > 0.3 and abs(measured - spent) <= 0.15 * spent, (measured, spent)
    assert "Resources" in p.stdout and "pid" in p.stdout
    assert {t["name"] for t in r["generator"]["threads"]} >= {"squall-worker-0"}


def test_locustfile_runs_carry_the_generators_view_and_monitoring(nginx, tmp_path):
    out = tmp_path / "r.json"
    p = squall(
        "-f", FILES / "dashboard.py", "-H", nginx.url, "--headless", "-u", 3, "-t", "2s",
        "--monitor-name", "nginx", "--result-json", out, "--only-summary",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["monitor"]["targets"][0]["label"] == "name nginx" and r["monitor"]["host"]["series"]
    assert r["generator"]["saturated"] is False and r["generator"]["warnings"] == []


def test_monitoring_a_process_that_does_not_exist_is_a_usage_error(nginx):
    p = squall("bench", nginx.url + "/", "-n", 10, "--monitor-pid", 999_999_999)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such process" in p.stderr
