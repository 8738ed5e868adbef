"""A string that matches a regular expression: what a schema's `pattern` asks of a value.

The policy, and why:

- The expression is parsed by the standard library's own parser (`re._parser`, `sre_parse` before
  Python 3.11), so that every construct Python's `re` reads is read the same way here, and the string
  is built from its tree: literals, classes (ranges, `\\d`, `\\w`, `\\s` and their negations), `.`,
  alternatives, groups and back-references, and repeats (an unbounded one repeats a few times more than
  its minimum). No library of the kind is in squall's dependencies, and these few lines cover what
  real documents write: fixed shapes (`^[A-Z]{2}-\\d{4}$`), enumerations by alternative, identifiers,
  dates spelled out as patterns.
- A candidate is kept only if `re.search` finds the whole pattern in it and its length is within the
  schema's bounds; otherwise another is drawn (up to `TRIES`, with repeats stretched toward the
  bounds). What a tree walk cannot honour, lookarounds and word boundaries, is honoured by this check:
  the walk skips them and the check refuses what they would refuse. A pattern that yields nothing in
  `TRIES` draws is reported as such (`NoMatch`), never returned wrong.
- OpenAPI's patterns are ECMA-262's: `(?<name>...)` and `\\k<name>` are read as Python's `(?P<name>...)`
  and `(?P=name)`; what Python
  cannot read at all (`\\p{L}`, `\\u{...}`) is `NoMatch` with Python's reason.
- Characters are drawn from printable ASCII where the class allows (letters and digits first for a
  negated class), so that a value can go in a path, a query or a header as it is.
"""

from __future__ import annotations

import functools
import importlib
import random
import re
import string
import sys
from typing import Any

# The standard library's regex parser: `re._parser` since 3.11 (`sre_parse`, which still exists, warns).
_parser: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")

TRIES = 60  # candidates drawn for one pattern before giving up
# How far past its minimum an unbounded repeat (`*`, `+`, `{n,}`) goes, per try: small first, then longer.
STRETCH = (3, 1, 6, 0, 12, 24, 48)
_SAFE = string.ascii_letters + string.digits
_PRINTABLE = _SAFE + "-_.~!*'()@:$,;=+/?#[]&% "
_CATEGORIES = {
    "CATEGORY_DIGIT": string.digits,
    "CATEGORY_WORD": _SAFE + "_",
    "CATEGORY_SPACE": " ",
}
_NEGATED = {
    "CATEGORY_NOT_DIGIT": "CATEGORY_DIGIT",
    "CATEGORY_NOT_WORD": "CATEGORY_WORD",
    "CATEGORY_NOT_SPACE": "CATEGORY_SPACE",
}
_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")  # ECMA's (?<name>, not a lookbehind (?<= or (?<!
_NAMED_BACKREF = re.compile(r"\\k<(\w+)>")  # ECMA's \k<name>


class NoMatch(ValueError):
    """No string for this pattern: Python cannot read it, or no draw matched it within the bounds."""


def python_pattern(pattern: str) -> str:
    """An ECMA-262 pattern in Python's spelling (named groups); raises NoMatch if Python cannot read it."""
    spelled = _NAMED_BACKREF.sub(r"(?P=\1)", _NAMED_GROUP.sub("(?P<", pattern))
    try:
        re.compile(spelled)
    except (re.error, OverflowError, RecursionError) as e:
        raise NoMatch(f"the pattern {pattern!r} is not one Python reads ({e})") from None
    return spelled


def matches(pattern: str, text: str) -> bool | None:
    """Whether `text` matches `pattern` as JSON Schema means it (found anywhere, ECMA-262 syntax); None
    when Python cannot read the pattern (unknown)."""
    compiled = _compiled(pattern)
    return None if compiled is None else compiled.search(text) is not None


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(python_pattern(pattern))
    except NoMatch:
        return None


def matching(pattern: str, rnd: random.Random, min_length: int = 0, max_length: int | None = None) -> str:
    """A string that `re.search(pattern)` finds a match in, with a length in [min_length, max_length]."""
    spelled = python_pattern(pattern)
    compiled = re.compile(spelled)
    try:
        tree = _parser.parse(spelled)
    except Exception as e:  # compiled above, so only its own limits (deep nesting) reach here
        raise NoMatch(f"the pattern {pattern!r} is too complex ({e})") from None
    shortest, longest = tree.getwidth()  # of a match: a string outside both bounds has none to draw
    if shortest > (max_length if max_length is not None else shortest) or (longest < min_length and _anchored(tree)):
        raise NoMatch(
            f"a string matching {pattern!r} has {shortest}..{longest} characters, not {min_length}..{max_length}"
        )
    for attempt in range(TRIES):
        stretch = STRETCH[attempt % len(STRETCH)]
        if attempt >= len(STRETCH) and min_length:
            stretch = max(stretch, min_length)  # long enough for the bound, trimmed by the check below
        try:
            text = _Walk(rnd, stretch).sequence(tree)
        except (_Impossible, RecursionError):
            continue
        candidates = [text]
        if len(text) < min_length:
            # An unanchored pattern is found in a longer text too: padded after the match, or before it.
            pad = "".join(rnd.choice(_SAFE) for _ in range(min_length - len(text)))
            candidates = [text + pad, pad + text]
        for candidate in candidates:
            fits = min_length <= len(candidate) <= (len(candidate) if max_length is None else max_length)
            if fits and compiled.search(candidate) is not None:
                return candidate
    raise NoMatch(f"no string matching {pattern!r} of length {min_length}..{max_length} in {TRIES} draws")


def _anchored(tree: Any) -> bool:
    """Whether the pattern is anchored at both ends (then no padding makes a match longer)."""
    items = list(tree)
    if len(items) < 2 or items[0][0].name != "AT" or items[-1][0].name != "AT":
        return False
    return bool(items[0][1].name.startswith("AT_BEGINNING") and items[-1][1].name.startswith("AT_END"))


class _Impossible(Exception):
    """This draw cannot go on (a back-reference to a group not matched, an empty class)."""


class _Walk:
    """One draw: the parse tree walked with one random generator and one stretch for unbounded repeats."""

    def __init__(self, rnd: random.Random, stretch: int) -> None:
        self.rnd = rnd
        self.stretch = stretch
        self.groups: dict[int, str] = {}

    def sequence(self, items: Any) -> str:
        return "".join(self.item(op.name, av) for op, av in items)

    def item(self, op: str, av: Any) -> str:
        if op == "LITERAL":
            return chr(av)
        if op == "NOT_LITERAL":
            return self.rnd.choice([c for c in _SAFE if ord(c) != av])
        if op == "ANY":
            return self.rnd.choice(_SAFE)
        if op == "IN":
            return self.one_of(av)
        if op == "BRANCH":
            return self.sequence(self.rnd.choice(av[1]))
        if op == "SUBPATTERN":
            group, _add, _del, items = av
            text = self.sequence(items)
            if group is not None:
                self.groups[group] = text
            return text
        if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, items = av
            if high == _parser.MAXREPEAT:
                high = low + self.stretch
            count = self.rnd.randint(low, max(low, high))
            return "".join(self.sequence(items) for _ in range(count))
        if op == "ATOMIC_GROUP":
            return self.sequence(av)
        if op == "GROUPREF":
            if av not in self.groups:
                raise _Impossible
            return self.groups[av]
        if op == "GROUPREF_EXISTS":
            group, yes, no = av
            return self.sequence(yes if group in self.groups else (no or []))
        # AT (anchors, boundaries), ASSERT and ASSERT_NOT (lookarounds): nothing to write; the final
        # re.search decides whether the draw honours them.
        return ""

    def one_of(self, items: Any) -> str:
        """A character of a class `[...]` (or `\\d`, `\\w`, `\\s` outside one)."""
        negate = bool(items) and items[0][0].name == "NEGATE"
        if negate:
            allowed = [c for c in _PRINTABLE if not self._in_class(c, items[1:])]
            safe = [c for c in allowed if c in _SAFE]
            if not allowed:
                raise _Impossible
            return self.rnd.choice(safe or allowed)
        op, av = self.rnd.choice(items)
        name = op.name
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            low, high = av
            printable = [c for c in _PRINTABLE if low <= ord(c) <= high]
            return self.rnd.choice(printable) if printable else chr(self.rnd.randint(low, min(high, low + 255)))
        if name == "CATEGORY":
            category = av.name
            if category in _CATEGORIES:
                return self.rnd.choice(_CATEGORIES[category])
            plain = _NEGATED.get(category)
            if plain is not None:
                return self.rnd.choice([c for c in _SAFE + "-." if c not in _CATEGORIES[plain]])
        raise _Impossible  # a class item this walk does not know: another draw may pick another

    def _in_class(self, c: str, items: Any) -> bool:
        for op, av in items:
            name = op.name
            if (name == "LITERAL" and ord(c) == av) or (name == "RANGE" and av[0] <= ord(c) <= av[1]):
                return True
            if name == "CATEGORY":
                category = av.name
                if category in _CATEGORIES and c in _CATEGORIES[category]:
                    return True
                plain = _NEGATED.get(category)
                if plain is not None and c not in _CATEGORIES[plain]:
                    return True
        return False
