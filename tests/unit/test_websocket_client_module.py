"""`import websocket` while squall runs a locustfile (squall.locust_compat): squall's websocket-client on the
engine, with the library's own exceptions and names, for a file's import and for python-socketio's Engine.IO
client alike; outside the users' greenlets a connection is the library's own; SQUALL_WEBSOCKET=library
keeps the library. Each in a fresh interpreter (the aliases change the process)."""

import os
import subprocess
import sys


def python(code, **env):
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=dict(os.environ, **env)
    )
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]


def test_import_websocket_is_squalls_with_the_librarys_exceptions():
    python(
        "from squall import locust_compat\n"
        "locust_compat.install(gevent=False)\n"
        "import websocket, engineio.client\n"
        "import websocket._exceptions as library\n"
        "assert websocket.__spec__.name == 'squall.contrib.websocket_client', websocket.__spec__\n"
        "assert engineio.client.websocket is websocket  # python-socketio's transport too\n"
        "assert websocket.WebSocketTimeoutException is library.WebSocketTimeoutException\n"
        "assert websocket.ABNF.OPCODE_BINARY == 2 and callable(websocket.enableTrace)  # the library's names\n"
        "try:\n"
        "    websocket.create_connection('ws://127.0.0.1:9/')  # no run: the library's own connection\n"
        "except ConnectionRefusedError:\n"
        "    pass\n"
        "ws = websocket.WebSocket()\n"
        "try:\n"
        "    ws.connect('ws://127.0.0.1:9/')  # the same, by the library's own WebSocket behind this one\n"
        "except ConnectionRefusedError:\n"
        "    assert isinstance(ws, websocket.WebSocket) and ws.connected is False and ws.sock is None\n"
        "print('ok')\n"
    )


def test_squall_websocket_library_keeps_the_library():
    python(
        "from squall import locust_compat\n"
        "locust_compat.install(gevent=False)\n"
        "import websocket\n"
        "assert websocket.__file__.endswith('websocket/__init__.py'), websocket.__file__\n"
        "print('ok')\n",
        SQUALL_WEBSOCKET="library",
    )
