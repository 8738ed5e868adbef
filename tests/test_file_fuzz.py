"""Fuzzing every file squall reads: results (`squall report`, `squall compare`), a crashed run's partial
files (RUN.json.partial.jsonl and .partial.json), Locust's config files (`--config`, ./locust.conf,
~/.locust.conf, ./pyproject.toml's [tool.locust]), OpenAPI documents (`squall import openapi`), Postman
collections (`squall import postman`) and HAR recordings (`squall import har`).

A seeded generator starts from valid files (web/samples/, real results; the partial files a run of them
would have left; config files of Locust's settings; tests/fixtures/openapi's documents, the Postman
collection and environment of tests/fixtures/postman, the HARs of tests/fixtures/har) and mutates them:
truncated, bytes flipped, values of the wrong type, huge numbers, NaN and infinities, deep nesting, keys
removed, other encodings, compressed, Locust's own JSON, YAML's anchors and tags, a few mutations at
once. Each case goes to the real command, `squall.cli.main` as `python -m squall` runs it (and a few per
test as a process of their own), and must end with exit 0, or exit 2 with one error line on stderr;
never a traceback, never past a time limit.

Seeded, so a failure replays: its message names the seed, the case and the mutations. SQUALL_FUZZ_N
sets the scale as in tests/unit/test_parser_fuzz.py (cases per test: N / 40); `make fuzz` runs more."""

import ast
import bz2
import contextlib
import copy
import gzip
import io
import json
import lzma
import os
import random
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from squall import cli
from squall.report import locust_json

N = int(os.environ.get("SQUALL_FUZZ_N", "4000"))
CASES = max(20, N // 40)
PROCESSES = 3  # cases per test also run as `python -m squall`
TIME_LIMIT = 15.0  # seconds for one case in this process (a starved shared host included)
SAMPLES = sorted((Path(__file__).parent.parent / "web" / "samples").glob("*.json"))
RAW = "@@raw@@"  # a value written as this text in the JSON (what json.dumps cannot write)
RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "9" * 400, "9" * 5000, "-" + "9" * 30, "1E-400"]
OTHER_VALUES = ["x", "", "100", [], {}, None, True, False, 0, -1, 1.5, 2**64, [1, "a"], {"a": None}, "\u00e9\x00"]


# -- Postman collections and HAR recordings (squall import postman, squall import har) ------------------

RECORDED = Path(__file__).parent / "fixtures"
RECORDED_SAMPLES = {
    "postman": ["postman/shop.postman_collection.json"],
    "har": ["har/chrome.har", "har/firefox.har"],
}


@pytest.mark.parametrize("kind", sorted(RECORDED_SAMPLES))
def test_import_reads_any_collection_or_recording(kind, tmp_path):
    """`squall import postman` (with and without a mutated environment file) and `squall import har` on
    mutated files: exit 0 with a file that parses as Python, or exit 2 with one line."""
    rnd = random.Random(11 if kind == "har" else 12)
    docs = {name: json.loads((RECORDED / name).read_text()) for name in RECORDED_SAMPLES[kind]}
    environment = json.loads((RECORDED / "postman" / "local.postman_environment.json").read_text())
    for case in range(CASES):
        name = rnd.choice(sorted(docs))
        names, data = mutated_json(rnd, docs[name])
        path = tmp_path / "input.json"
        path.write_bytes(data)
        argv = ["import", kind, path, "--dry-run"]
        if kind == "postman" and rnd.random() < 0.5:
            more, env = mutated_json(rnd, environment) if rnd.random() < 0.5 else ([], json.dumps(environment).encode())
            (tmp_path / "env.json").write_bytes(env)
            argv += ["--environment", tmp_path / "env.json"]
            names = [*names, ("environment", *more)]
        what = (kind, case, name, names)
        code, out, err = run_main(argv)
        check(what, code, err)
        if code == 0:
            ast.parse(out)  # the file it would write is Python
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv)[::2])


class Hang(BaseException):
    """A case ran past TIME_LIMIT (BaseException: the command's own handlers must not take it)."""


def run_main(argv):
    """`squall ARGV` in this process: (exit code, stdout, stderr); Hang past TIME_LIMIT."""

    def expired(signum, frame):
        raise Hang(f"still running after {TIME_LIMIT} s")

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    # Loading a locustfile installs Locust's and gevent's aliases (squall's modules under their names) and
    # squall's time.sleep for the rest of a process: undone, so that the tests that follow in this process
    # (an xdist worker's) see it as it was. Only the names under `locust` and `gevent` go: a library
    # first imported here stays, as it would in a process, since one with a C extension cannot be
    # imported afresh (yaml's parser, kept from the first import, then raised errors of its first
    # import's classes, which the importer's `except yaml.YAMLError` of the second did not catch).
    modules, meta_path, sleep = dict(sys.modules), list(sys.meta_path), time.sleep
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in argv])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        for name in set(sys.modules) - set(modules):
            if name.split(".")[0] in ("locust", "gevent"):
                del sys.modules[name]
        sys.modules.update((name, m) for name, m in modules.items() if sys.modules.get(name) is not m)
        sys.meta_path[:] = meta_path
        time.sleep = sleep
    return code, out.getvalue(), err.getvalue()


def run_process(argv, cwd=None, env=None):
    p = subprocess.run(
        [sys.executable, "-m", "squall", *map(str, argv)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=60,
        cwd=cwd,
        env=env,
    )
    return p.returncode, p.stdout, p.stderr


def check(what, code, err):
    """Exit 0, or 2 with one error line on stderr (a line ends with a newline; before it only the config
    files' own one-line warnings, `squall: warning: ignoring unknown setting`); no traceback either way."""
    assert "Traceback" not in err, (what, err[-3000:])
    assert code in (0, 2), (what, code, err[-3000:])
    if code == 2:
        lines = [line for line in err.rstrip("\n").split("\n") if not line.startswith("squall: warning: ")]
        assert len(lines) == 1 and lines[0].startswith("squall") and ": error: " in lines[0], (what, err[-3000:])


# -- JSON documents -----------------------------------------------------------------------------------


def _containers(doc):
    """Every (container, key) in doc, iteratively (a path to each value)."""
    out, stack = [], [doc]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for k in keys:
            out.append((node, k))
            if isinstance(node[k], (dict, list)):
                stack.append(node[k])
    return out


def _pick(rnd, doc, numbers_only=False):
    places = _containers(doc)
    if numbers_only:
        numeric = [(c, k) for c, k in places if isinstance(c[k], (int, float)) and not isinstance(c[k], bool)]
        places = numeric or places
    return rnd.choice(places) if places else None


def _deep(rnd):
    depth = rnd.choice([64, 500, 2000, 100_000])
    return ("[" * depth + "]" * depth) if rnd.random() < 0.5 else ('{"a":' * depth + "1" + "}" * depth)


def mutate_doc(rnd, doc):
    """A structural mutation of a parsed document, in place; returns (its name, raw texts to put in)."""
    kind = rnd.choice(["wrong type", "huge number", "nan", "deep", "remove key", "empty container"])
    place = _pick(rnd, doc, numbers_only=kind in ("huge number", "nan"))
    if place is None:
        return "nothing to mutate", []
    container, key = place
    if kind == "wrong type":
        container[key] = copy.deepcopy(rnd.choice(OTHER_VALUES))
        return kind, []
    if kind == "huge number":
        if rnd.random() < 0.5:
            container[key] = rnd.choice([2**63, 2**64 + 1, 10**30, -(2**63), 1e308, -1e308])
            return kind, []
        container[key] = RAW
        return kind, [rnd.choice(RAW_NUMBERS[3:])]
    if kind == "nan":
        container[key] = RAW
        return kind, [rnd.choice(RAW_NUMBERS[:5])]
    if kind == "deep":
        container[key] = RAW
        return kind, [_deep(rnd)]
    if kind == "remove key" and isinstance(container, dict):
        del container[key]
        return kind, []
    container[key] = {} if isinstance(container[key], dict) else []
    return "empty container", []


def dump(doc, raws):
    text = json.dumps(doc, indent=1)
    for raw in raws:
        text = text.replace(f'"{RAW}"', raw, 1)
    return text


def mutate_bytes(rnd, data):
    """A mutation of a file's bytes; returns (its name, the bytes)."""
    kind = rnd.choice(["truncate", "flip", "encoding", "compressed", "garbage"])
    if kind == "truncate":
        return kind, data[: rnd.randrange(max(1, len(data)))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rnd.randint(1, 8)):
            if out:
                out[rnd.randrange(len(out))] ^= rnd.randint(1, 255)
        return kind, bytes(out)
    if kind == "encoding":
        text = data.decode("utf-8", errors="replace").replace('"', '"\u00e9', 1)  # one character past ASCII
        codec = rnd.choice(["utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252", "utf-8-sig", "shift_jis"])
        return f"{kind} {codec}", text.encode(codec, errors="replace")
    if kind == "compressed":
        how = rnd.choice(["gzip", "bz2", "xz", "zip"])
        if how == "zip":
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as z:
                z.writestr("run.json", data)
            return f"{kind} zip", buffer.getvalue()
        return f"{kind} {how}", {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[how](data)
    return kind, rnd.choice([b"", b"  \n", b"null", b"[]", b"{}", b'"x"', b"0", b"\x00" * 10, rnd.randbytes(200)])


def mutated_json(rnd, doc):
    """A valid document's file, mutated 1 to 3 times (structure and bytes); returns (names, bytes)."""
    doc = copy.deepcopy(doc)
    names, raws = [], []
    for _ in range(rnd.randint(0, 2)):
        name, more = mutate_doc(rnd, doc)
        names.append(name)
        raws += more
    data = dump(doc, raws).encode()
    if not names or rnd.random() < 0.5:
        name, data = mutate_bytes(rnd, data)
        names.append(name)
    return names, data


def samples():
    return [json.loads(p.read_text()) for p in SAMPLES]


def result_file(rnd, docs):
    """A result to read: a sample mutated, or Locust's JSON stats (mutated or not)."""
    doc = rnd.choice(docs)
    if rnd.random() < 0.1:
        rows = locust_json.rows(doc)
        if rnd.random() < 0.5:
            names, data = mutated_json(rnd, rows)
            return ["Locust's JSON", *names], data
        return ["Locust's JSON"], json.dumps(rows).encode()
    return mutated_json(rnd, doc)


def test_samples_are_results():
    """The generator's valid files are: each sample renders, and two compare."""
    assert len(SAMPLES) >= 5
    for path in SAMPLES:
        code, _, err = run_main(["report", path, "--html", os.devnull])
        assert code == 0, err
    code, out, err = run_main(["compare", *SAMPLES[:2]])
    assert code == 0 and "Aggregated" in out, err


@pytest.mark.parametrize("seed", [1, 2])
def test_report_reads_any_result_file(seed, tmp_path):
    rnd, docs = random.Random(seed), samples()
    for case in range(CASES):
        names, data = result_file(rnd, docs)
        path = tmp_path / "run.json"
        path.write_bytes(data)
        argv = ["report", path, "--html", tmp_path / "report.html"]
        what = (seed, case, names)
        check(what, *run_main(argv)[::2])
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv)[::2])


@pytest.mark.parametrize("seed", [3, 4])
def test_compare_reads_any_result_files(seed, tmp_path):
    rnd, docs = random.Random(seed), samples()
    for case in range(CASES):
        paths, names = [], []
        for i in range(rnd.choice([2, 2, 3])):
            path = tmp_path / f"run{i}.json"
            if i == 0 or rnd.random() < 0.5:
                more, data = result_file(rnd, docs)
                names.append(more)
            else:
                data = json.dumps(rnd.choice(docs)).encode()
            path.write_bytes(data)
            paths.append(path)
        argv = ["compare", *paths, *(["--html", tmp_path / "compare.html"] if rnd.random() < 0.3 else [])]
        what = (seed, case, names)
        check(what, *run_main(argv)[::2])
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv)[::2])


def partial_files(doc):
    """What a run of `doc` would have left beside RUN.json had it crashed: the series and the totals."""
    header = {"squall_partial": 1, **{k: doc.get(k) for k in ("squall_version", "kind", "url", "start_unix", "load")}}
    series = "".join(json.dumps(line) + "\n" for line in [header, *doc["timeseries"]])
    totals = {**{k: doc[k] for k in ("aggregate", "endpoints", "errors")}, "seconds": len(doc["timeseries"])}
    return series.encode(), json.dumps(totals).encode()


@pytest.mark.parametrize("seed", [5, 6])
def test_report_reads_any_partial_files(seed, tmp_path):
    rnd, docs = random.Random(seed), samples()
    for case in range(CASES):
        doc = rnd.choice(docs)
        series, totals = partial_files(doc)
        names = []
        which = rnd.choice(["series", "totals", "both", "a line"])
        if which == "a line":  # one line of the series mutated, the others whole
            lines = series.split(b"\n")
            i = rnd.randrange(len(lines))
            more, lines[i] = mutated_json(rnd, json.loads(lines[i])) if lines[i] else mutate_bytes(rnd, lines[i])
            names.append(("line", i, more))
            series = b"\n".join(lines)
        if which in ("series", "both"):
            more, series = mutate_bytes(rnd, series) if rnd.random() < 0.5 else mutated_json(rnd, doc["timeseries"])
            names.append(("series", more))
        if which in ("totals", "both"):
            more, totals = mutated_json(rnd, json.loads(totals))
            names.append(("totals", more))
        path = tmp_path / "run.json.partial.jsonl"
        path.write_bytes(series)
        (tmp_path / "run.json.partial.json").write_bytes(totals)
        if rnd.random() < 0.1:
            (tmp_path / "run.json.partial.json").unlink()
        argv = ["report", path, "--html", tmp_path / "report.html"]
        what = (seed, case, which, names)
        check(what, *run_main(argv)[::2])
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv)[::2])


# -- Locust's config files ----------------------------------------------------------------------------

LOCUSTFILE = """from locust import HttpUser, task


class Visitor(HttpUser):
    @task
    def t(self):
        self.client.get("/")
"""
# Settings as Locust's config files hold them: the text of a conf file, and the TOML value.
SETTINGS = {
    "users": ("10", 10),
    "spawn-rate": ("2.5", 2.5),
    "run-time": ("1m30s", "1m30s"),
    "headless": ("true", True),
    "host": ("http://127.0.0.1:8089", "http://127.0.0.1:8089"),
    "tags": ("a b", ["a", "b"]),
    "exclude-tags": ("c", ["c"]),
    "stop-timeout": ("5s", "5s"),
    "loglevel": ("INFO", "INFO"),
    "threshold": ("p95<300ms; error_rate<1%", ["p95<300ms", "error_rate<1%"]),
    "exit-code-on-error": ("1", 1),
    "reset-stats": ("false", False),
    "only-summary": ("true", True),
    "expect-workers": ("2", 2),
    "no-such-setting": ("1", 1),
}
CONF_VALUES = [
    "",
    "nan",
    "inf",
    "-1",
    "0",
    "1e999",
    "9" * 5000,
    "0x10",
    "\u0663",
    "true",
    "[1, 2]",
    "\x00",
    "x" * 10_000,
]
TOML_VALUES = [
    [], {}, [[1]], {"a": 1}, float("nan"), float("inf"), -1, 0, 2**63 - 1, "", "nan", True, 1.5, [1, "a"], [{"a": 1}],
]  # fmt: skip
TOML_RAW = ["1979-05-27T07:32:00Z", "07:32:00", "1979-05-27", "nan", "-inf", "0x7fffffffffffffff", "1e999"]


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"


def config_file(rnd, toml):
    """A config file of a few settings, some values mutated; returns (names, text)."""
    keys = rnd.sample(sorted(SETTINGS), rnd.randint(1, 6))
    names, lines = [], []
    for key in keys:
        text, value = SETTINGS[key]
        if rnd.random() < 0.3:
            if toml:
                choice = rnd.choice([*range(len(TOML_VALUES)), "raw", "deep"])
                if choice == "raw":
                    lines.append(f"{key} = {rnd.choice(TOML_RAW)}")
                elif choice == "deep":
                    depth = rnd.choice([50, 500, 5000])
                    lines.append(f"{key} = " + "[" * depth + "]" * depth)
                else:
                    lines.append(f"{key} = {toml_value(TOML_VALUES[choice])}")
            else:
                lines.append(f"{key} = {rnd.choice(CONF_VALUES)}")
            names.append(("value", key, lines[-1][:60]))
        else:
            lines.append(f"{key} = {toml_value(value) if toml else text}")
    if toml:
        head = rnd.choice(["[tool.locust]"] * 6 + ["[tool]\nlocust = 5", "tool = 1", "[[tool.locust]]", "[tool.other]"])
        if not head.startswith("[tool.locust]"):
            names.append(("table", head))
        return names, "[project]\nname = 'x'\n\n" + head + "\n" + "\n".join(lines) + "\n"
    if rnd.random() < 0.2:
        lines.insert(
            rnd.randrange(len(lines) + 1), rnd.choice(["users", "[locust]", "# note", "; note", "= 1", "a=b=c"])
        )
        names.append(("line", lines[0][:20]))
    return names, "\n".join(lines) + "\n"


@pytest.fixture
def config_dirs(tmp_path, monkeypatch):
    """A home and a working directory of their own, the locustfile in it, no LOCUST_* variables."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (cwd / "locustfile.py").write_text(LOCUSTFILE)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    for name in [n for n in os.environ if n.startswith("LOCUST_")]:
        monkeypatch.delenv(name)
    return home, cwd


@pytest.mark.parametrize("seed", [7, 8])
@pytest.mark.parametrize("source", ["--config", "--config toml", "locust.conf", "pyproject.toml", "~/.locust.conf"])
def test_the_run_reads_any_config_file(seed, source, config_dirs):
    home, cwd = config_dirs
    rnd = random.Random(f"{seed} {source}")
    path = {
        "--config": cwd / "extra.conf",
        "--config toml": cwd / "extra.toml",
        "locust.conf": cwd / "locust.conf",
        "pyproject.toml": cwd / "pyproject.toml",
        "~/.locust.conf": home / ".locust.conf",
    }[source]
    toml = path.suffix == ".toml"
    argv = ["-f", "locustfile.py", *(["--config", path.name] if source.startswith("--config") else []), "-l"]
    for case in range(CASES):
        names, text = config_file(rnd, toml)
        data = text.encode()
        if rnd.random() < 0.4:
            name, data = mutate_bytes(rnd, data)
            names.append(name)
        path.write_bytes(data)
        what = (seed, source, case, names)
        code, out, err = run_main(argv)
        check(what, code, err)
        assert code == 2 or out == "Visitor\n", (what, out, err)
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv, cwd=cwd, env={**os.environ, "HOME": str(home)})[::2])


def test_a_toml_boolean_for_a_value_is_its_text(config_dirs):
    """Found by the fuzzing above (SQUALL_FUZZ_N=20000): `run-time = true` in [tool.locust] reached the
    run as the boolean True (AttributeError in the duration's parser); it is the text "true" now, as a
    conf file's would be, and refused as such."""
    _home, cwd = config_dirs
    (cwd / "pyproject.toml").write_text("[tool.locust]\nrun-time = true\n")
    code, _, err = run_main(["-f", "locustfile.py", "-l"])
    assert code == 2 and "invalid duration 'true'" in err, err


# -- OpenAPI documents (squall import openapi) ----------------------------------------------------------

OPENAPI = Path(__file__).parent / "fixtures" / "openapi"
OPENAPI_SAMPLES = [
    "petstore3-swagger.yaml",
    "petstore-v2.json",
    "petstore-expanded-v3.yaml",
    "webhook-example-v3.1.yaml",
]
YAML_PIECES = ["&a [*a]", "*nope", "!!python/object:os.system", "- - - -", ": :", "'", '"', "\t", "{", "[", "%YAML 9"]


def openapi_docs():
    import yaml

    return [yaml.safe_load((OPENAPI / name).read_text()) for name in OPENAPI_SAMPLES]


def openapi_file(rnd, docs):
    """A document to import: a sample mutated as JSON, or its YAML text mutated (or both)."""
    name = rnd.choice(OPENAPI_SAMPLES)
    doc = docs[OPENAPI_SAMPLES.index(name)]
    if rnd.random() < 0.6:
        return [name, "json", *mutated_json(rnd, doc)[0]], mutated_json(rnd, doc)[1]
    text = (OPENAPI / name).read_text()
    lines = text.split("\n")
    names = [name, "yaml"]
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(lines))
        piece = rnd.choice(YAML_PIECES)
        lines[i] = lines[i][: rnd.randrange(len(lines[i]) + 1)] + piece
        names.append(("line", i, piece))
    data = "\n".join(lines).encode()
    if rnd.random() < 0.3:
        more, data = mutate_bytes(rnd, data)
        names.append(more)
    return names, data


@pytest.mark.parametrize("seed", [9, 10])
def test_import_reads_any_openapi_document(seed, tmp_path):
    """`squall import openapi` on mutated documents: exit 0 with a file that parses as Python, or exit 2
    with one line; the --dry-run output is what would be written."""
    rnd, docs = random.Random(seed), openapi_docs()
    for case in range(CASES):
        names, data = openapi_file(rnd, docs)
        path = tmp_path / ("spec.json" if "json" in names else "spec.yaml")
        path.write_bytes(data)
        argv = ["import", "openapi", path, "--dry-run"]
        what = (seed, case, names)
        code, out, err = run_main(argv)
        check(what, code, err)
        if code == 0:
            ast.parse(out)  # the file it would write is Python
        if case < PROCESSES:
            check((*what, "process"), *run_process(argv)[::2])
