"""Python source as `ruff format` (and Black) lays it out, for the files the importers write.

A generated file should read as if a person had written and formatted it, and stay as it is when the
user runs their formatter on it. The layout here is the subset of Black's style these files need, the
rule stated once:

- A statement that fits in `WIDTH` columns (88, the formatters' default) is one line.
- Otherwise its call, dict, list or tuple is exploded: one item a line, indented four spaces, each
  followed by a comma, the closing bracket on a line of its own; each item laid out by the same rule.
  The trailing comma is Black's "magic trailing comma": the formatter keeps such a layout exploded, so
  the file is stable under `ruff format` whatever the formatter would have chosen for the same text
  without it. (Black would first try the items on one line inside the brackets; writing the exploded
  form is simpler and as stable.)
- Strings are double-quoted unless they hold more double quotes than single ones (ruff's preference),
  with escapes only where needed: backslash, the quote, and characters that do not print (`\\n`,
  `\\x00`, `\\u2028`), hex in lower case as ruff writes it.
- An item that cannot fit (a long string) is written on its line as it is: neither formatter splits it.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

WIDTH = 88
INDENT = "    "


class Code(str):
    """Source text to write as it is (a name, an f-string), not as a string literal."""


class Spread(str):
    """A key of a dict literal written `**name`: the items of the mapping `name` (its value unused)."""


def string(text: str) -> str:
    """`text` as a Python string literal."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    return quote + _escaped(text, quote) + quote


def _escaped(text: str, quote: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def data(value: bytes) -> str:
    """`value` as a bytes literal."""
    out = []
    for byte in value:
        ch = chr(byte)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return 'b"' + "".join(out) + '"'


def literal(value: Any) -> str:
    """`value` (JSON's kinds, tuples, bytes and Code) as one line of source."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, bytes):
        return data(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return f'float("{value}")'
        return repr(value)
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"**{k}" if isinstance(k, Spread) else f"{literal(k)}: {literal(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    raise TypeError(f"no literal for {type(value).__name__}")


def lines(value: Any, level: int, prefix: str = "", suffix: str = "") -> list[str]:
    """`prefix`, `value`, `suffix` at indentation `level`: one line if it fits, else `value` exploded."""
    indent = INDENT * level
    one = f"{indent}{prefix}{literal(value)}{suffix}"
    if len(one) <= WIDTH or not isinstance(value, (dict, list, tuple)) or not value or isinstance(value, Code):
        return [one]
    brackets = "{}" if isinstance(value, dict) else "()" if isinstance(value, tuple) else "[]"
    out = [f"{indent}{prefix}{brackets[0]}"]
    if isinstance(value, dict):
        for k, v in value.items():
            out += [f"{indent}{INDENT}**{k},"] if isinstance(k, Spread) else lines(v, level + 1, f"{literal(k)}: ", ",")
    else:
        for v in value:
            out += lines(v, level + 1, "", ",")
    out.append(f"{indent}{brackets[1]}{suffix}")
    return out


def call(
    function: str, arguments: list[tuple[str | None, Any]], level: int, prefix: str = "", suffix: str = ""
) -> list[str]:
    """`function(arguments)` (each a keyword or None, and a value) at indentation `level`."""
    indent = INDENT * level
    text = ", ".join(f"{k}={literal(v)}" if k else literal(v) for k, v in arguments)
    one = f"{indent}{prefix}{function}({text}){suffix}"
    if len(one) <= WIDTH or not arguments:
        return [one]
    out = [f"{indent}{prefix}{function}("]
    for k, v in arguments:
        out += lines(v, level + 1, f"{k}=" if k else "", ",")
    out.append(f"{indent}){suffix}")
    return out


def assignment(target: str, expression: str, level: int) -> list[str]:
    """`target` (ending in " = ") and an expression without brackets of its own: one line, or the
    expression alone inside parentheses when that fits (as the formatters split such a line)."""
    indent = INDENT * level
    one = f"{indent}{target}{expression}"
    if len(one) <= WIDTH or len(indent + INDENT + expression) > WIDTH:
        return [one]
    return [f"{indent}{target}(", f"{indent}{INDENT}{expression}", f"{indent})"]


def comment(text: str, level: int) -> list[str]:
    """`text` as comment lines at indentation `level`, wrapped at WIDTH on spaces; what does not print
    (a NUL, a tab, a line separator) is a space."""
    indent = INDENT * level + "# "
    out: list[str] = []
    for paragraph in text.split("\n") or [""]:
        paragraph = "".join(ch if ch.isprintable() else " " for ch in paragraph)
        line = ""
        for word in paragraph.split(" "):
            if line and len(indent) + len(line) + 1 + len(word) > WIDTH:
                out.append((indent + line).rstrip())
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append((indent + line).rstrip())
    return out


def docstring(paragraphs: list[str]) -> list[str]:
    """`paragraphs` as the lines of a module's docstring (without its quotes), wrapped at WIDTH on spaces
    (the first line 3 shorter, for the opening quotes), a blank line between paragraphs; what does not
    print is a space, and a backslash or triple quote is escaped, so the text reads as written."""
    out: list[str] = []
    for i, paragraph in enumerate(paragraphs):
        text = "".join(ch if ch.isprintable() else " " for ch in paragraph)
        text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        width = WIDTH - (3 if i == 0 else 0)
        out += textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]
        if i < len(paragraphs) - 1:
            out.append("")
    return out
