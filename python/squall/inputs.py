"""Files squall is given to read: saved results (`squall report`, `squall compare`), a crashed run's
partial files, Locust's config files. Each is read whole, checked, and either used or refused in one
line that says what the file is and, where it helps, what to do (exit 2 from the commands); never a
traceback half way through a report, whatever the file holds.

The policy, and why:

- A file squall reads is UTF-8 text (a leading BOM is taken). Anything else is named for what it is:
  compressed (gzip, bzip2, xz, zstd, zip: "decompress it first"), UTF-16 or UTF-32 text (by its BOM, or
  the NULs beside ASCII characters), other bytes that are not UTF-8 (with the offset of the first), so
  that the user knows which file to fix and how, instead of reading a codec's exception.
- JSON: a document cut short is said to be (a truncated copy is the usual cause); one that nests deeper
  than MAX_DEPTH is refused as soon as it is parsed, before any recursive walk (a squall result nests 7
  levels; Python's parser and every recursive walk after it fail past about 1,000); numbers too long
  for Python's int are an error, not a crash.
- A result is checked for every field the reports compute with (`check_result`): the types the page
  and `squall compare` rely on, counts that are whole and at most 2**64 (the engine's u64), a finite
  duration. Other fields pass as they are (the page tolerates what is missing, and turns NaN into
  null), so that results of older and newer versions still render.

A leaf module: it imports nothing from squall, so config.py, the reports and the web package all use it."""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64  # levels of nesting: a squall result has 7, a config section 3
# The most of a file read into memory: a special file without end (/dev/zero: `squall report` read it
# until memory ran out) or a mistaken multi-gigabyte file is refused at this size. A result of an
# hour-long run of 200 names is about 25 MB.
MAX_READ = 256 * 1024 * 1024
# A request body, WebSocket message or MQTT payload given as a file (bench's --data-file and --message
# @FILE, mqtt's --payload @FILE): what the engine sends as it is, so as much as a script's response.
MAX_SENT_FILE = 64 * 1024 * 1024
MAX_COUNT = 2**64  # the engine's counters are u64

# Magic numbers of the compressed files people hand over by mistake, and how to undo each.
_COMPRESSED = (
    (b"\x1f\x8b", "gzip-compressed", "gunzip"),
    (b"BZh", "bzip2-compressed", "bunzip2"),
    (b"\xfd7zXZ\x00", "xz-compressed", "unxz"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd"),
    (b"PK\x03\x04", "a zip archive", "unzip"),
)
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


class InputError(ValueError):
    """A file squall cannot use, in one line that names it."""


def at_file(value: str | None) -> str | None:
    """The FILE of an `@FILE` option value (bench's --message, mqtt's --payload), else None."""
    return value[1:] if value and value.startswith("@") else None


def read_bytes(path: str, limit: int = MAX_READ, name: str | None = None) -> bytes:
    """The bytes of `path`, at most `limit` of them, or InputError saying why not, naming the file as
    `name` (default: its path). A file larger than `limit` is refused after reading one byte more,
    never read to its end."""
    name = name or path
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(f"cannot read {name}: {e.strerror or e}") from None
    if len(data) > limit:
        raise InputError(f"{name} is larger than {limit >> 20} MiB, the most squall reads")
    return data


def read_text(path: str, what: str = "squall") -> str:
    """The UTF-8 text of `path`, or InputError saying why not (`what`: whose files are UTF-8, for the
    message: "squall" or "a config file")."""
    return decode(read_bytes(path), path, what)


def _wide_text(head: bytes) -> bool:
    """ASCII as UTF-16 or UTF-32 writes it: a NUL in every other (or three of every four) bytes, in
    the same places, the others not (a binary file has NULs too, but not so)."""
    for step in (2, 4):
        for text_at in range(step):
            lanes = [head[i::step] for i in range(step)]
            text, nuls = lanes[text_at], [b for i, lane in enumerate(lanes) if i != text_at for b in lane]
            if len(text) >= 4 and all(text) and not any(nuls):
                return True
    return False


def decode(data: bytes, name: str, what: str = "squall") -> str:
    for magic, kind, tool in _COMPRESSED:
        if data.startswith(magic):
            raise InputError(f"{name} is {kind}: decompress it first ({tool} {name})")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise InputError(f"{name} is {encoding} text: {what} reads UTF-8 (iconv -f {encoding} -t UTF-8)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if _wide_text(data[:64]):
            raise InputError(f"{name} looks like UTF-16 or UTF-32 text: {what} reads UTF-8") from None
        if b"\x00" in data[:64]:
            raise InputError(f"{name} is not text (a binary file): {what} reads UTF-8 text") from None
        raise InputError(
            f"{name} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): {what} reads UTF-8"
        ) from None


def parse_json(text: str, name: str) -> Any:
    """The JSON document in `text` (of the file `name`), nesting at most MAX_DEPTH levels (checked after
    parsing, without recursion; the parser itself stops at Python's recursion limit)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):  # both reach the end
            raise InputError(f"{name} ends before its JSON does (at line {e.lineno}): a truncated copy?") from None
        raise InputError(f"{name} is not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        doc = None
        deep = True
    except ValueError as e:  # an integer past Python's digit limit
        raise InputError(f"{name} is not JSON squall can read: {str(e).splitlines()[0]}") from None
    else:
        deep = depth(doc) > MAX_DEPTH
    if deep:
        raise InputError(f"{name} nests deeper than {MAX_DEPTH} levels: not a file squall wrote")
    return doc


def depth(value: Any) -> int:
    """How deep `value` nests (1 for a scalar), walked without recursion."""
    best, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        best = max(best, level)
        if best > MAX_DEPTH:
            return best
        if isinstance(node, dict):
            stack += [(v, level + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, level + 1) for v in node]
    return best


# -- results ---------------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= MAX_COUNT if isinstance(value, int) else True


def _count(doc: dict[str, Any], key: str, where: str) -> None:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InputError(f"{_at(where, key)} is {_shown(value)}, not a count")


def _number(doc: dict[str, Any], key: str, where: str, optional: bool = True, nullable: bool = True) -> None:
    if key not in doc and optional:
        return
    value = doc.get(key)
    if (value is None and nullable and key in doc) or _is_number(value):
        return
    raise InputError(f"{_at(where, key)} is {_shown(value)}, not a number")


def _kind(doc: dict[str, Any], key: str, where: str, types: tuple[type, ...], what: str) -> None:
    if key in doc and not isinstance(doc[key], types):
        raise InputError(f"{_at(where, key)} is {_shown(doc[key])}, not {what}")


def _endpoint(e: Any, where: str) -> None:
    """An ENDPOINT of web/README.md: what the reports and `squall compare` compute with."""
    if not isinstance(e, dict):
        raise InputError(f"{where} is {_shown(e)}, not an endpoint")
    for key in ("method", "name"):
        if not isinstance(e.get(key), str):
            raise InputError(f"{_at(where, key)} is {_shown(e.get(key))}, not a name")
    _count(e, "requests", where)
    _count(e, "failures", where)
    _number(e, "max_us", where, nullable=False)  # compare prints it
    for key in ("min_us", "mean_us", "stdev_us", "body_bytes", "wire_bytes"):
        _number(e, key, where)
    for key in ("percentiles_us", "status_codes"):
        _kind(e, key, where, (dict,), "an object")
        for k, v in (e.get(key) or {}).items():
            if not _is_number(v):
                raise InputError(f"{_at(where, key)}[{_shown(k)}] is {_shown(v)}, not a number")
    for key in ("spectrum", "distribution"):
        _kind(e, key, where, (list,), "a list")


def _endpoints(doc: dict[str, Any], key: str, where: str) -> None:
    items = doc.get(key)
    if not isinstance(items, list):
        raise InputError(f"{where}{key} is {_shown(items)}, not a list of endpoints")
    for i, e in enumerate(items):
        _endpoint(e, f"{where}{key}[{i}]")


def check_totals(doc: Any, name: str) -> None:
    """A run's totals (a partial run's RESULT.partial.json): aggregate, endpoints, errors."""
    try:
        if not isinstance(doc, dict):
            raise InputError(f"the file is {_shown(doc)}, not an object")
        _endpoint(doc.get("aggregate"), "aggregate")
        _endpoints(doc, "endpoints", "")
        _kind(doc, "errors", "", (list,), "a list")
    except InputError as e:
        raise InputError(f"{name} is not a squall run's totals: {e}") from None


def check_result(doc: Any, name: str) -> None:
    """A saved result (web/README.md, RESULT), checked for what the reports compute with."""
    if not isinstance(doc, dict):
        kind = "a list" if isinstance(doc, list) else _shown(doc)
        raise InputError(f"{name} is not a squall result (its JSON is {kind}, not an object)")
    missing = [k for k in ("kind", "aggregate", "endpoints", "timeseries", "duration_s") if k not in doc]
    if missing:
        raise InputError(f"{name} is not a squall result (no {', '.join(missing)})")
    try:
        if not isinstance(doc["kind"], str):
            raise InputError(f"kind is {_shown(doc['kind'])}, not a name")
        duration = doc["duration_s"]
        if not _is_number(duration) or not math.isfinite(duration) or duration < 0:
            raise InputError(f"duration_s is {_shown(duration)}, not a duration")
        reset = doc.get("reset_s")
        if reset is not None and (not _is_number(reset) or not 0 <= reset <= duration):
            raise InputError(f"reset_s is {_shown(reset)}, not a time within the run's {duration} s")
        _endpoint(doc["aggregate"], "aggregate")
        _endpoints(doc, "endpoints", "")
        points = doc["timeseries"]
        if not isinstance(points, list):
            raise InputError(f"timeseries is {_shown(points)}, not a list")
        for i, p in enumerate(points):
            where = f"timeseries[{i}]"
            if not isinstance(p, dict):
                raise InputError(f"{where} is {_shown(p)}, not a second")
            _number(p, "t", where, nullable=False)
            for key in ("requests", "failures"):
                if key in p:
                    _count(p, key, where)
            if "endpoints" in p:
                _endpoints(p, "endpoints", f"{where}.")
        _kind(doc, "url", "", (str, type(None)), "a URL")
        for key in ("errors", "exceptions", "thresholds", "workers"):
            _kind(doc, key, "", (list, type(None)), "a list")
        for key in ("load", "schedule", "mqtt", "connect", "limit", "distributed", "generator", "monitor"):
            _kind(doc, key, "", (dict, type(None)), "an object")
    except InputError as e:
        raise InputError(f"{name} is not a squall result: {e}") from None
