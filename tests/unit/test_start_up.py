"""What `squall bench` and `squall mqtt` load before they run: the command line without the
Locust-compatible API, `squall run`'s module or Ray's driver (0.24 CPU-s of imports with them, 0.1
without). Checked in a fresh interpreter, since this one has loaded everything already."""

import subprocess
import sys

# Modules only `squall run` (-f), the Locust-compatible API or a distributed run needs.
NOT_AT_START = {
    "greenlet",
    "squall.commands.run",
    "squall.contrib.fasthttp",
    "squall.distributed.runs",
    "squall.runtime.hub",
    "squall.locust_compat",
    "squall.user.users",
}


def loaded_after(code):
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(out.stdout.split())


def test_the_command_line_loads_without_the_locust_api():
    loaded = loaded_after("import squall.cli; squall.cli.build_parser()")
    assert "squall.commands.bench" in loaded and "squall.commands.mqtt" in loaded
    assert not loaded & NOT_AT_START, sorted(loaded & NOT_AT_START)


def test_the_api_still_imports_from_the_package():
    loaded = loaded_after(
        "from squall import HttpUser, FastHttpUser, task, between, events\n"
        "from squall import *\n"  # every name of __all__ resolves
        "import squall\n"
        "assert set(squall.__all__) == {'__version__', *squall._HOMES}, 'squall.__all__ and _HOMES differ'\n"
        "assert 'TaskSet' in dir(squall) and squall.TaskSet.__name__ == 'TaskSet'\n"
        "try:\n"
        "    squall.NoSuchName\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('squall.NoSuchName did not raise AttributeError')"
    )
    assert {"squall.user.users", "squall.contrib.fasthttp"} <= loaded


def test_gevent_plugins_are_still_called_when_entry_points_are_read_once(tmp_path):
    """squall patches with gevent reading the installed distributions' entry points once, not 25 times
    (squall.runtime.gevent_hub._entry_points_read_once): a real plugin, a distribution on the path with
    gevent's entry points, is still called for each event, as often as gevent asks."""
    dist = tmp_path / "squall_probe_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: squall-probe-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[gevent.plugins.monkey.will_patch_module]\nprobe = squall_probe:will_patch\n"
        "[gevent.plugins.monkey.did_patch_all]\nprobe = squall_probe:did_patch_all\n"
    )
    (tmp_path / "squall_probe.py").write_text(
        "seen = []\ndef will_patch(event):\n    seen.append(event.module_name)\n"
        "def did_patch_all(event):\n    seen.append('all')\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "from importlib import metadata\n"
        "from squall.runtime import gevent_hub\n"
        "assert gevent_hub.enable()\n"
        "import squall_probe\n"
        "assert metadata.entry_points.__module__ == 'importlib.metadata', 'left patched'\n"
        "print(' '.join(squall_probe.seen))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    seen = out.stdout.split()
    assert seen[-1] == "all"
    assert {"socket", "ssl", "_thread", "time"} <= set(seen)  # modules patch_all patches, announced
