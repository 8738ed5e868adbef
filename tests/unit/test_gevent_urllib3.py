"""squall's gevent patching makes urllib3's pools wait cooperatively, as Locust's does, without importing
urllib3 itself: the patch comes when something imports it (in a process of its own: gevent's patching
must not reach the test's)."""

import subprocess
import sys

CHECK = """
import sys
from squall.runtime import gevent_hub
assert gevent_hub.enable()
assert "urllib3" not in sys.modules, "imported by the patching"
import requests  # imports urllib3, as a locustfile's library would
from gevent import queue
import urllib3
assert urllib3.connectionpool.ConnectionPool.QueueCls is queue.LifoQueue
print("ok")
"""


def test_urllib3_is_patched_when_imported_not_before():
    p = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "ok", p.stderr[-2000:]
