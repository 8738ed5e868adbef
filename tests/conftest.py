import shutil

import pytest

from support import Nginx, OddServer


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


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
