import shutil

import pytest

from support import Nginx, OddServer, serving


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sse():
    """tests/servers/sse_server.py (events and streamed chat completions at known delays; what it sent at
    GET /__sent: support.sent): its base URL."""
    with serving("sse_server.py") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def ws():
    """tests/servers/ws_server.py (a WebSocket server that counts what it received and sent: support.ws_counts):
    its host:port."""
    with serving("ws_server.py") as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def odd_server():
    server = OddServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (its own browser download is never used), for the tests of
    the page."""
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "Chromium is missing: `make test` installs it (scripts/install-system-deps.sh)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


# The tiers (Makefile): `make check` runs what is not `slow`; `make test` runs everything, the `serial`
# tests after the others, alone on the machine (they measure time or capacity against ground truth, which
# a neighbour's CPU would move). A test that takes longer than SLOW_S without its mark is named at the end
# of every run, so that the fast tier's growth is seen when it happens.
SLOW_S = 5.0
_unmarked: list[tuple[str, float]] = []


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > SLOW_S and "slow" not in report.keywords:
        _unmarked.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter):
    if _unmarked:
        terminalreporter.write_sep("=", f"over {SLOW_S:.0f} s without @pytest.mark.slow (make check runs them)")
        for nodeid, seconds in sorted(_unmarked, key=lambda x: -x[1]):
            terminalreporter.write_line(f"{seconds:6.1f}s {nodeid}")
