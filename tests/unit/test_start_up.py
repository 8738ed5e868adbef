"""What `squall bench` and `squall mqtt` load before they run: the command line without the
Locust-compatible API, `squall run`'s module or Ray's driver (0.24 CPU-s of imports with them, 0.1
without). Checked in a fresh interpreter, since this one has loaded everything already."""

import subprocess
import sys

# Modules only `squall run` (-f), the Locust-compatible API, a distributed run or `squall import` (its
# importers, PyYAML) needs.
NOT_AT_START = {
    "greenlet",
    "squall.importers",
    "squall.importers.openapi",
    "yaml",
    "squall.commands.run",
    "squall.contrib.fasthttp",
    "squall.distributed.runs",
    "squall.runtime.hub",
    "squall.locust_compat",
    "squall.user.users",
}


def probe_locustfile(tmp_path, line):
    """`squall -f` on a locustfile that runs `line` (gc, os and sys imported) as squall loads it, then
    exits at once; the finished process."""
    lf = tmp_path / "probe.py"
    lf.write_text(f"import gc, os, sys\n{line}; sys.stdout.flush(); os._exit(0)\n")
    return subprocess.run(
        [sys.executable, "-m", "squall", "-f", str(lf), "--headless", "-H", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )


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


# Modules a `squall -f` run loads only when its flags ask: the other commands', a distributed run's
# (Ray's driver, Locust's --master/--worker), the breaking-point search's statistics. Left out, the
# load before the locustfile runs is 0.218 CPU-s instead of 0.249 (medians of 15 alternated runs).
NOT_FOR_A_RUN = {
    "squall.commands.bench",
    "squall.commands.imports",
    "squall.importers",
    "squall.commands.mqtt",
    "squall.commands.demo",
    "squall.commands.report",
    "squall.distributed.roles",
    "squall.distributed.runs",
    "squall.distributed.workers",
    "squall.distributed.nodes",
    "statistics",
}


def test_a_run_loads_only_what_its_flags_ask_for(tmp_path):
    out = probe_locustfile(tmp_path, "sys.stdout.write(' '.join(sys.modules) + '\\n')")
    loaded = set(out.stdout.split())
    assert "squall.commands.run" in loaded and "squall.limit" in loaded, out.stdout + out.stderr
    assert not loaded & NOT_FOR_A_RUN, sorted(loaded & NOT_FOR_A_RUN)


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


def probe_plugin(tmp_path):
    """A distribution in `tmp_path` whose gevent plugins note the events they are called with."""
    dist = tmp_path / "squall_probe_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: squall-probe-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[gevent.plugins.monkey.will_patch_module]\nprobe = squall_probe:will_patch\n"
        "[gevent.plugins.monkey.did_patch_all]\nprobe = squall_probe:did_patch_all\n"
    )
    (tmp_path / "squall_probe.py").write_text(
        "seen = []\ndef will_patch(event):\n    seen.append(event.module_name)\n"
        "def did_patch_all(event):\n    seen.append('all')\n"
    )


def plugins_called(path_entries):
    """The events squall's patching called the probe's plugins with, `path_entries` first on sys.path."""
    code = (
        f"import sys; sys.path[:0] = {[str(p) for p in path_entries]!r}\n"
        "from importlib import metadata\n"
        "from squall.runtime import gevent_hub\n"
        "assert gevent_hub.enable()\n"
        "import squall_probe\n"
        "assert metadata.entry_points.__module__ == 'importlib.metadata', 'left patched'\n"
        "print(' '.join(squall_probe.seen))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()


def test_gevent_plugins_are_still_called_when_found_without_importlib_metadata(tmp_path):
    """squall patches with gevent finding its plugins once, without importlib.metadata
    (squall.runtime.gevent_plugins), not by asking it 25 times: a real plugin, a distribution on the path
    with gevent's entry points, is still called for each event, as often as gevent asks."""
    probe_plugin(tmp_path)
    seen = plugins_called([tmp_path])
    assert seen[-1] == "all"
    assert {"socket", "ssl", "_thread", "time"} <= set(seen)  # modules patch_all patches, announced


def test_gevent_plugins_in_a_zip_on_the_path_are_read_through_importlib_metadata(tmp_path):
    """A zip on sys.path is read by importlib.metadata alone: squall asks it (once), and the plugin
    zipped there is called as gevent would call it."""
    import zipfile

    probe_plugin(tmp_path / "src")
    with zipfile.ZipFile(tmp_path / "plugins.zip", "w") as z:
        for f in (tmp_path / "src").rglob("*"):
            z.write(f, f.relative_to(tmp_path / "src"))
    seen = plugins_called([tmp_path / "plugins.zip"])
    assert seen[-1] == "all" and {"socket", "ssl"} <= set(seen)


def test_the_plugins_found_are_importlib_metadatas(tmp_path):
    """Ground truth: importlib.metadata's own answer on the same path, for every gevent group. The path
    holds a plugin twice (a later copy of a distribution is not counted, as importlib.metadata does not),
    an .egg-info, comments and blank lines, and the environment's own distributions (gevent's plugin)."""
    first, later = tmp_path / "first", tmp_path / "later"
    probe_plugin(first)
    probe_plugin(later)
    (later / "squall_probe_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[gevent.plugins.monkey.will_patch_all]\nshadowed = squall_probe:will_patch\n"
    )
    egg = first / "Other.Probe-2.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: Other.Probe\nVersion: 2.0\n")
    (egg / "entry_points.txt").write_text(
        "# a comment\n\n[console_scripts]\nprobe = squall_probe:main\n\n"
        "[gevent.plugins.monkey.did_patch_module]\n  egg =  squall_probe : did_patch_all [extra]\n"
    )
    code = (
        f"import sys; sys.path[:0] = [{str(first)!r}, {str(later)!r}]\n"
        "from importlib import metadata\n"
        "from squall.runtime import gevent_plugins\n"
        "found = gevent_plugins.read()\n"
        "named = {e.group for d in metadata.distributions() for e in d.entry_points}\n"
        "groups = sorted({g for g in named if g.startswith('gevent.plugins.')} | set(found))\n"
        "for g in groups:\n"
        "    print(g, sorted((e.name, e.value) for e in metadata.entry_points(group=g)),\n"
        "          sorted((e.name, e.value) for e in found.get(g, [])))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    lines = out.stdout.splitlines()
    assert len(lines) >= 3, out.stdout  # the probe's two groups and the egg's, gevent's own beside them
    for line in lines:
        group, rest = line.split(" ", 1)
        truth, ours = rest.split("] [")
        assert truth + "]" == "[" + ours, line
    assert "shadowed" not in out.stdout and "'egg'" in out.stdout


def test_the_collector_is_paused_until_the_locustfile_runs(tmp_path):
    """`squall -f` starts with the cyclic garbage collector paused (squall.start_up) and resumes it
    before the locustfile's code runs: the file finds it on, and squall's start-up frozen."""
    out = probe_locustfile(tmp_path, "sys.stdout.write(f'{gc.isenabled()} {gc.get_freeze_count()}\\n')")
    enabled, frozen = out.stdout.split()
    assert enabled == "True", out.stdout + out.stderr
    assert int(frozen) > 10_000  # squall's and gevent's modules' objects
