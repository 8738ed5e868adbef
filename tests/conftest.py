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
