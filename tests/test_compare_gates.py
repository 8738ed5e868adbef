"""`squall compare --fail-if` on two real runs whose difference is known: the same bench against a server
that answers after exactly 5 ms and one that answers after 20 ms (tests/servers/delay_server.py)."""

import json
import re

import pytest

from support import serving, squall


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The two runs' result files: 4 connections, 200 requests each."""
    d = tmp_path_factory.mktemp("compare")
    for label, delay in (("fast", 5), ("slow", 20)):
        with serving("delay_server.py", delay) as port:
            p = squall("bench", f"http://127.0.0.1:{port}/", "-n", "200", "-c", "4", "--json", d / f"{label}.json")
            assert p.returncode == 0, p.stderr
    return d / "fast.json", d / "slow.json"


def test_gates_fail_on_the_change_the_servers_made_and_pass_beyond_it(runs):
    """Ground truth: the servers sleep 5 and 20 ms (plus the loopback and the host's lateness, a ms or
    two at most here), so the median rose by between (20 - 8) / 8 = 150% and (23 - 5) / 5 = 360%, and
    with 4 connections each waiting for its answer the rate fell to about a quarter (-75%)."""
    fast, slow = runs
    p = squall(
        "compare", fast, slow, "--labels", "fast,slow",
        "--fail-if", "p50>+100%", "--fail-if", "p50>+500%", "--fail-if", "rps<-50%", "--fail-if", "rps<-90%",
        "--fail-if", "error_rate>+0.1pp",
    )  # fmt: skip
    assert p.returncode == 99, (p.stdout, p.stderr)
    lines = p.stdout[p.stdout.index("Regression gates") :].splitlines()
    assert lines[0] == "Regression gates (--fail-if), against fast"
    verdict = {line.split()[1]: line.split()[0] for line in lines[1:-1]}
    assert verdict == {"p50>+100%": "FAIL", "p50>+500%": "pass", "rps<-50%": "FAIL", "rps<-90%": "pass",
                       "error_rate>+0.1pp": "pass"}  # fmt: skip
    assert lines[-1] == "  3 passed, 2 failed (exit code 99)"
    # The numbers shown are the runs' own, and the change is theirs.
    base, new = (json.loads(f.read_text())["aggregate"]["percentiles_us"]["50"] / 1000 for f in runs)
    assert 5 <= base <= 8 and 20 <= new <= 23, (base, new)
    shown = re.search(r"p50>\+100%\s+slow\s+([\d.]+) ms -> ([\d.]+) ms \(\+([\d.]+)%\)", p.stdout)
    assert shown is not None, p.stdout
    assert float(shown[1]) == pytest.approx(base, abs=0.001) and float(shown[2]) == pytest.approx(new, abs=0.001)
    assert float(shown[3]) == pytest.approx((new - base) / base * 100, abs=0.1)


def test_gates_that_hold_exit_0_and_a_bad_one_is_one_line_before_any_work(runs, tmp_path):
    fast, slow = runs
    p = squall("compare", fast, slow, "--fail-if", "p50>+1000%")
    assert p.returncode == 0 and "1 passed, 0 failed\n" in p.stdout, (p.stdout, p.stderr)
    html = tmp_path / "c.html"
    p = squall("compare", fast, slow, "--fail-if", "p50>100%", "--html", html)
    assert p.returncode == 2 and p.stdout == "" and not html.exists()
    assert p.stderr.count("\n") == 1 and "a change carries its sign" in p.stderr, p.stderr
