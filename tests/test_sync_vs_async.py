"""The seeds' question, answered by the example in examples/sync_vs_async: the same FastAPI app served by
gunicorn's sync workers and by uvicorn, `--find-limit` on each, `squall compare` on the two results."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import free_ports, squall, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.serial]

EXAMPLE = Path(__file__).parent.parent / "examples" / "sync_vs_async"
BIN = Path(sys.executable).parent
WORKERS, STORE_MS = 2, 20


@pytest.fixture(scope="module")
def servers():
    sync_port, async_port = free_ports(2)
    procs = [
        subprocess.Popen(
            [BIN / "gunicorn", "-w", str(WORKERS), "-k", "sync", "-b", f"127.0.0.1:{sync_port}", "app:wsgi"],
            cwd=EXAMPLE, stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [BIN / "uvicorn", "--port", str(async_port), "--log-level", "warning", "app:api"],
            cwd=EXAMPLE, stderr=subprocess.DEVNULL,
        ),
    ]  # fmt: skip
    try:
        wait_for_port(sync_port, 20)
        wait_for_port(async_port, 20)
        yield f"http://127.0.0.1:{sync_port}/cases", f"http://127.0.0.1:{async_port}/cases"
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


def test_find_limit_on_both_servers_and_compare(servers, tmp_path):
    limits = {}
    for label, url in zip(("sync", "async"), servers):
        p = squall("bench", url, "--find-limit", "--step-time", "2s", "--json", tmp_path / f"{label}.json", timeout=150)
        assert p.returncode == 0, (p.stdout, p.stderr)
        limits[label] = json.loads((tmp_path / f"{label}.json").read_text())["limit"]["load"]
    # Known math for the sync server: each of 2 workers serves one request at a time, each takes 20 ms
    # in the store plus the app's own time: at most 100 requests a second; measured about 90.
    assert 0.6 * WORKERS * 1000 / STORE_MS <= limits["sync"] <= 1.05 * WORKERS * 1000 / STORE_MS, limits
    # The async server waits for the store concurrently: its limit is its CPU, many times more.
    assert limits["async"] >= 5 * limits["sync"], limits
    html = tmp_path / "compare.html"
    p = squall("compare", tmp_path / "sync.json", tmp_path / "async.json", "--labels", "sync,async", "--html", html)
    assert p.returncode == 0 and "sync" in p.stdout and "async" in p.stdout and html.exists()
