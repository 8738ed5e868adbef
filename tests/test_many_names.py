"""A locustfile naming each request after its id (issue 41: 5,000 names held 2.3 GB): every request is
still counted under its own name, exactly (nginx's access log is the ground truth), the per-second
series adds up to the same counts, and the run warns once, on one line, that so many names are likely
ids to group with `name=`."""

import collections
import json
import os
import re

from support import HERE, squall

LOCUSTFILE = HERE / "locustfiles" / "names_by_id.py"
NAMES, TIMES = 1500, 2  # past the warning's 1,000 names (squall.web.live.MANY_NAMES)


def served_paths(nginx):
    """Requests nginx logged since the last reset, by path."""
    requests = re.findall(r'"GET (\S+) HTTP', (nginx.dir / "access.log").read_text())
    return collections.Counter(requests)


def test_every_request_counts_under_its_own_name_and_the_run_warns_once(nginx, tmp_path):
    nginx.reset_log()
    out = tmp_path / "r.json"
    env = {**os.environ, "NAMES_BY_ID": str(NAMES), "NAMES_BY_ID_TIMES": str(TIMES)}
    p = squall(
        "-f", LOCUSTFILE, "-H", nginx.url, "--headless", "-u", 4, "-r", 100, "-t", "60s",
        "--result-json", out, "--only-summary", env=env, timeout=90,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(out.read_text())
    counted = {e["name"]: e["requests"] for e in r["endpoints"]}
    expected = {f"/item/{i}": TIMES for i in range(NAMES)}
    assert r["abandoned"] == 0  # the users stopped themselves: nothing was in flight
    assert counted == expected
    nginx.requests_logged()  # waits for nginx's last lines
    assert served_paths(nginx) == collections.Counter(expected)
    # The seconds' entries add up to each name's total; every histogram holds its name's requests.
    per_second = collections.Counter()
    for second in r["timeseries"]:
        for e in second["endpoints"]:
            per_second[e["name"]] += e["requests"]
    assert per_second == collections.Counter(expected)
    for e in r["endpoints"]:
        assert e["min_us"] <= e["percentiles_us"]["50"] <= e["max_us"] == e["percentiles_us"]["100"], e
        assert sum(b[2] for b in e["distribution"]) == TIMES, e
    # One warning, one line, squall's style, whatever the run printed around it.
    warnings = [line for line in p.stderr.splitlines() if "distinct request names" in line]
    assert len(warnings) == 1, p.stderr[-2000:]
    # (how many so far when the run first had more than 1,000)
    assert re.match(r"squall: warning: [\d,]+ distinct request names \(more than 1,000\); .*name=", warnings[0])


def test_a_few_hundred_names_are_no_warning(nginx, tmp_path):
    nginx.reset_log()
    env = {**os.environ, "NAMES_BY_ID": "300", "NAMES_BY_ID_TIMES": "1"}
    p = squall("-f", LOCUSTFILE, "-H", nginx.url, "--headless", "-u", 2, "-t", "60s", "--only-summary", env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "distinct request names" not in p.stderr
    assert sum(served_paths(nginx).values()) == 300
