"""A value valid against a JSON Schema (OpenAPI's dialects: Swagger 2.0's, OpenAPI 3.0's and 3.1's), for
the requests an importer writes.

The policy, and why:

- The document's own values come first: a schema's `const`, then its examples (`example`, `x-example`,
  `examples`) and its `default`, then a pick from its `enum`, each only if it is valid against the
  whole schema (`conforms`): real documents hold examples of the wrong type (Swagger's own Petstore
  gives the string `password` the example 12345), and a request built from one would be refused.
- Otherwise a value is made from the types and constraints: bounds (`minimum`, `maximum`, both
  exclusive forms: 3.0's booleans, 3.1's numbers; `multipleOf`, checked as jsonschema and pydantic
  check it), lengths, `pattern` (squall.importers.patterns), the formats servers check (date,
  date-time, time, uuid, email, uri, hostname, ipv4, ipv6, byte, int32, int64), `enum`, required and
  optional properties, nested objects and arrays (`minItems`, `maxItems`, `uniqueItems`), `allOf`
  (merged), `oneOf` (a branch that exactly one branch accepts; the discriminator set), `anyOf`,
  `nullable` and `type` lists. Every made value is checked by `conforms` before it is returned.
- What cannot be made raises `Unproducible` with the reason (a pattern Python cannot read, bounds that
  leave nothing, a schema that requires itself). An optional property, or an array that may be empty,
  is then left out; a required one fails the whole value, and the importer leaves its operation out
  and says why.
- Bounded: `$ref` is followed through the `resolve` the document gives (local and other files); a
  schema met again inside itself is made only if required, and never more than `MAX_REPEATS` deep, so
  recursive schemas end; past `OPTIONAL_DEPTH` levels only required properties are made; arrays make
  `minItems` items, or one or two; strings and arrays past `MAX_SIZE` are refused rather than written.
- Requests: `readOnly` properties are left out (OpenAPI: sent only by the server, their `required`
  applies to responses), also from examples.
- Deterministic: every draw comes from the `random.Random` given, so one seed gives one file.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import json
import math
import random
import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from squall.importers import patterns
from squall.importers.sources import dict_at, list_at

Schema = dict[str, Any]
# (a schema holding "$ref", the location it is read from) -> (the schema it points to, that one's location)
Resolve = Callable[[Schema, str], "tuple[Schema, str]"]

MAX_REPEATS = 2  # times one $ref may be open inside itself (a tree of a tree of a tree)
OPTIONAL_DEPTH = 6  # nesting past which optional properties are left out
MAX_DEPTH = 40  # nesting past which nothing is made (a value this deep is not a request anyone sends)
MAX_SIZE = 4096  # characters of a string, items of an array: past this a literal is not worth writing
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
BASE = "x-squall-base"  # a merged subschema's own location, when it differs from its parent's

_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)  # RFC 3339, as jsonschema and OpenAPI mean it
_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,15}$")
_PASSWORD = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/l/I


class Unproducible(ValueError):
    """No valid value can be made for this schema; the message says why."""


class Values:
    """Makes and checks values for the schemas of one document.

    `resolve` follows a `$ref`; `writing` leaves `readOnly` properties out (a request's values);
    `optional` makes optional properties too (else only required ones)."""

    def __init__(self, resolve: Resolve, rnd: random.Random, writing: bool = True, optional: bool = True) -> None:
        self.resolve = resolve
        self.rnd = rnd
        self.writing = writing
        self.optional = optional

    # -- following $ref ----------------------------------------------------------------------------

    def flat(self, schema: Any, base: str) -> tuple[Schema, str, str | None]:
        """The schema itself, $ref followed (a chain too), and the key of the last $ref (for recursion)."""
        key = None
        for _ in range(64):
            if not isinstance(schema, dict):
                # `true` and `false` as schemas (3.1): anything, nothing
                return ({} if schema is not False else {"not": {}}), base, key
            if BASE in schema:
                base = schema[BASE]
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return schema, base, key
            key = f"{base}#{ref}" if ref.startswith("#") else ref
            siblings = {k: v for k, v in schema.items() if k not in ("$ref", BASE, "description", "summary")}
            target, target_base = self.resolve(schema, base)
            if siblings and _is_31_sibling(siblings):
                # 3.1 applies a $ref's siblings too (3.0 ignores them): both, as allOf
                return {"allOf": [{**target, BASE: target_base}, siblings]}, base, key
            schema, base = target, target_base
        raise Unproducible("a chain of more than 64 $refs")

    # -- making --------------------------------------------------------------------------------------

    def make(self, schema: Any, base: str, hint: str = "") -> Any:
        """A value valid against `schema` (read at `base`); Unproducible says why there is none."""
        return self._make(schema, base, hint, 0, ())

    def _make(self, schema: Any, base: str, hint: str, depth: int, stack: tuple[str, ...]) -> Any:
        if depth > MAX_DEPTH:
            raise Unproducible(f"nested more than {MAX_DEPTH} levels")
        s, base, key = self.flat(schema, base)
        if key is not None:
            if stack.count(key) >= MAX_REPEATS:
                raise Unproducible(f"{key.rpartition('/')[2]} requires itself")
            stack = (*stack, key)
        for candidate in self._documented(s):
            candidate = self._without_read_only(s, base, candidate)
            if self.conforms(s, base, candidate):
                return candidate
        if "allOf" in s:
            merged, merged_base = self.merge(s, base)
            value = self._make(merged, merged_base, hint, depth, stack)
            if self.conforms(s, base, value):
                return value
            raise Unproducible("no value satisfies every part of its allOf")
        choices = s.get("oneOf") if isinstance(s.get("oneOf"), list) else s.get("anyOf")
        if isinstance(choices, list) and choices:
            return self._choose(s, base, choices, hint, depth, stack)
        if isinstance(s.get("enum"), list):
            valid = [v for v in s["enum"] if self.conforms(s, base, v)]
            if not valid:
                raise Unproducible("no value of its enum is valid against its own schema")
            return copy.deepcopy(self.rnd.choice(valid))
        problems = []
        for kind in self._types(s):
            try:
                value = self._of_type(kind, s, base, hint, depth, stack)
            except Unproducible as e:
                problems.append(str(e))
                continue
            if self.conforms(s, base, value):
                return value
            problems.append(f"a made {kind} did not pass its own checks")
        raise Unproducible(problems[0] if problems else "no type it allows can be made")

    def _documented(self, s: Schema) -> list[Any]:
        """The values the schema itself offers, in order: const, examples, default."""
        found = []
        if "const" in s:
            found.append(s["const"])
        for key in ("example", "x-example"):
            if key in s:
                found.append(s[key])
        if isinstance(s.get("examples"), list):
            found += s["examples"]
        if "default" in s:
            found.append(s["default"])
        # null last of all, and only if nothing else can be made: a request that sends a value says more
        return [copy.deepcopy(v) for v in found if v is not None]

    def _choose(self, s: Schema, base: str, choices: list[Any], hint: str, depth: int, stack: tuple[str, ...]) -> Any:
        """A value from one branch of oneOf/anyOf (with the schema's other keywords), valid against the
        whole: for oneOf, exactly one branch must take it."""
        rest = {k: v for k, v in s.items() if k not in ("oneOf", "anyOf", "discriminator", "example", "default")}
        order = list(range(len(choices)))
        self.rnd.shuffle(order)
        # The null branch last: a request sends the value itself (FastAPI's Optional is anyOf [T, null]).
        order.sort(key=lambda i: _is_null_schema(choices[i]))
        discriminator = s.get("discriminator") if isinstance(s.get("discriminator"), dict) else None
        problems = []
        for i in order:
            branch = choices[i]
            part = {"allOf": [{**rest, BASE: base}, branch]} if _constrains(rest) else branch
            try:
                value = self._make(part, base, hint, depth + 1, stack)
            except Unproducible as e:
                problems.append(str(e))
                continue
            if discriminator is not None and isinstance(value, dict):
                value = self._discriminated(discriminator, branch, value)
            if self.conforms(s, base, value):
                return value
            problems.append("its value was taken by more than one branch of its oneOf")
        raise Unproducible(problems[0] if problems else "no branch of its oneOf/anyOf can be made")

    def _discriminated(self, discriminator: dict[str, Any], branch: Any, value: dict[str, Any]) -> dict[str, Any]:
        name = discriminator.get("propertyName")
        ref = branch.get("$ref") if isinstance(branch, dict) else None
        if not isinstance(name, str) or not isinstance(ref, str):
            return value
        mapping = dict_at(discriminator, "mapping")
        tag = next((k for k, v in mapping.items() if v == ref), None)
        if tag is None:
            tag = ref.rpartition("/")[2]  # OpenAPI: the schema's name when no mapping says otherwise
        return {**value, name: tag} if name not in value or value[name] != tag else value

    def _types(self, s: Schema) -> list[str]:
        """The types to try, in the document's order, null last (a value says more than null)."""
        declared = s.get("type")
        if isinstance(declared, str):
            kinds = [declared]
        elif isinstance(declared, list):
            kinds = [t for t in declared if isinstance(t, str)]
        else:
            kinds = [_inferred(s)]
        if s.get("nullable") is True or s.get("x-nullable") is True:
            kinds.append("null")
        kinds = [k if k != "file" else "string" for k in kinds]  # Swagger 2.0's file: its contents
        return sorted([k for k in kinds if k in _TYPES], key=lambda k: k == "null")

    def _of_type(self, kind: str, s: Schema, base: str, hint: str, depth: int, stack: tuple[str, ...]) -> Any:
        if kind == "object":
            return self._object(s, base, depth, stack)
        if kind == "array":
            return self._array(s, base, hint, depth, stack)
        if kind == "string":
            return self._string(s, hint)
        if kind in ("integer", "number"):
            return self._number(s, kind == "integer" or s.get("format") in ("int32", "int64"))
        if kind == "boolean":
            return self.rnd.random() < 0.5
        return None

    def _object(self, s: Schema, base: str, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        properties = dict_at(s, "properties")
        listed = list_at(s, "required")
        required = [r for r in listed if isinstance(r, str)]
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            needed = name in required
            if not needed and (not self.optional or depth >= OPTIONAL_DEPTH):
                continue
            if self.writing and self._read_only(sub, base):
                continue
            try:
                out[name] = self._make(sub, base, name, depth + 1, stack)
            except Unproducible as e:
                if needed:
                    raise Unproducible(f"{name}: {e}") from None
        extra = s.get("additionalProperties")
        for name in required:  # required but not described: anything its additionalProperties allow
            if name not in out and name not in properties:
                if extra is False:
                    raise Unproducible(f"{name} is required but additionalProperties is false")
                out[name] = self._make(extra if isinstance(extra, dict) else {}, base, name, depth + 1, stack)
        wanted = _int(s.get("minProperties"), 0)
        if not properties and isinstance(extra, dict) and self.optional:
            wanted = max(wanted, 1)  # a map: one entry shows its shape
        index = 1
        while len(out) < wanted:
            if extra is False or index > MAX_SIZE:
                raise Unproducible(f"minProperties {wanted} but only {len(out)} properties allowed")
            out[f"key{index}"] = self._make(extra if isinstance(extra, dict) else {}, base, "", depth + 1, stack)
            index += 1
        return out

    def _array(self, s: Schema, base: str, hint: str, depth: int, stack: tuple[str, ...]) -> list[Any]:
        low = _int(s.get("minItems"), 0)
        high = _int(s.get("maxItems"), MAX_SIZE)
        if low > min(high, MAX_SIZE):
            raise Unproducible(f"minItems {low} is more than maxItems {high} or {MAX_SIZE}")
        prefix = list_at(s, "prefixItems")
        items = s.get("items", {})
        if isinstance(items, list):  # draft 4's tuple form
            prefix, items = items, s.get("additionalItems", {})
        count = max(low, min(high, self.rnd.randint(1, 2)))
        if depth >= OPTIONAL_DEPTH:
            count = low
        out: list[Any] = []
        seen: set[str] = set()
        for i in range(count * 4 + 4):
            if len(out) >= count:
                break
            sub = prefix[len(out)] if len(out) < len(prefix) else items
            if sub is False:
                break
            try:
                value = self._make(sub, base, hint, depth + 1, stack)
            except Unproducible as e:
                if len(out) >= low:
                    break
                raise Unproducible(f"its items: {e}") from None
            if s.get("uniqueItems") is True:
                mark = _canonical(value)
                if mark in seen:
                    continue
                seen.add(mark)
            out.append(value)
            if i > count * 4:
                break
        if len(out) < low:
            raise Unproducible(f"fewer than minItems {low} distinct items")
        return out

    def _string(self, s: Schema, hint: str) -> str:
        low = _int(s.get("minLength"), 0)
        high = _int(s.get("maxLength"), MAX_SIZE)
        if low > min(high, MAX_SIZE):
            raise Unproducible(f"minLength {low} is more than maxLength {high} or {MAX_SIZE}")
        pattern = s.get("pattern")
        fmt = s.get("format")
        if isinstance(pattern, str):
            try:
                return patterns.matching(pattern, self.rnd, low, high)
            except patterns.NoMatch as e:
                raise Unproducible(str(e)) from None
        if isinstance(fmt, str):
            made = self._formatted(fmt, low, high)
            if made is not None:
                return made
        word = hint if _WORD.match(hint or "") else "text"
        text = f"{word}{self.rnd.randint(1, 999)}"
        if len(text) > high:
            text = text[len(text) - high :] if high else ""
        while len(text) < max(low, 1 if high else 0):
            text += self.rnd.choice("abcdefghijklmnopqrstuvwxyz")
        return text

    def _formatted(self, fmt: str, low: int, high: int) -> str | None:
        r = self.rnd
        day = datetime.date(2024, 1, 1) + datetime.timedelta(days=r.randint(0, 730))
        clock = f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"
        word = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
        made = {
            "date": day.isoformat(),
            "date-time": f"{day.isoformat()}T{clock}Z",
            "time": f"{clock}Z",
            "duration": f"PT{r.randint(1, 59)}M",
            "uuid": str(uuid.UUID(int=r.getrandbits(128), version=4)),
            "email": f"{word}@example.com",
            "idn-email": f"{word}@example.com",
            "uri": f"https://example.com/{word}",
            "url": f"https://example.com/{word}",
            "iri": f"https://example.com/{word}",
            "uri-reference": f"/{word}",
            "iri-reference": f"/{word}",
            "uri-template": f"https://example.com/{word}/{{id}}",
            "hostname": f"{word}.example.com",
            "idn-hostname": f"{word}.example.com",
            "ipv4": f"192.0.2.{r.randint(1, 254)}",
            "ipv6": f"2001:db8::{r.randint(1, 0xFFFF):x}",
            "byte": base64.b64encode(word.encode()).decode(),
            "binary": word,
            "password": "".join(r.choice(_PASSWORD) for _ in range(12)),
            "int32": str(r.randint(1, 1000)),
            "int64": str(r.randint(1, 1000)),
            "regex": "^[a-z]+$",
            "json-pointer": f"/{word}",
        }.get(fmt)
        if made is not None and low <= len(made) <= high:
            return made
        return None

    def _number(self, s: Schema, integral: bool) -> int | float:
        low, low_open, high, high_open = _bounds(s)
        fmt = s.get("format")
        lo: float
        hi: float
        if integral or fmt in ("int32", "int64"):
            limits = INT32 if fmt == "int32" else INT64
            lo = _int_above(low, low_open, limits[0])
            hi = _int_below(high, high_open, limits[1])
        else:
            lo = -1e15 if low is None else low
            hi = 1e15 if high is None else high
        if lo > hi:
            raise Unproducible(f"no number between {low} and {high}")
        # A natural value: 1..100 where the bounds allow it, near a bound otherwise.
        start = max(lo, 1) if hi >= 1 else lo
        stop = min(hi, max(start, 100))
        if hi < 1 and low is None:
            start = max(lo, hi - 99)
            stop = hi
        step = s.get("multipleOf")
        if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
            inside = lambda v: _inside(v, low, low_open, high, high_open)  # noqa: E731
            return self._multiple(step, lo, hi, start, stop, integral, inside)
        if integral:
            return self.rnd.randint(int(start), int(stop))
        for _ in range(20):
            value = round(self.rnd.uniform(start, stop), 2)
            if _inside(value, low, low_open, high, high_open):
                return value
        middle = (lo + hi) / 2
        if _inside(middle, low, low_open, high, high_open):
            return middle
        raise Unproducible(f"no number strictly between {low} and {high}")

    def _multiple(
        self,
        step: float,
        lo: float,
        hi: float,
        start: float,
        stop: float,
        integral: bool,
        inside: Callable[[float], bool],
    ) -> int | float:
        first = math.ceil(lo / step)
        last = math.floor(hi / step)
        if first > last:
            raise Unproducible(f"no multiple of {step} between {lo} and {hi}")
        pick_from = max(first, math.ceil(start / step))
        pick_to = min(last, max(pick_from, math.floor(stop / step)))
        for _ in range(40):
            k = self.rnd.randint(pick_from, pick_to) if pick_to >= pick_from else first
            value = _times(k, step)
            if integral and value != int(value):
                continue
            value = int(value) if integral or (value == int(value) and isinstance(step, int)) else value
            if lo <= value <= hi and inside(value) and _is_multiple(value, step):
                return value
        raise Unproducible(f"no multiple of {step} between {lo} and {hi} that checks exactly")

    # -- merging allOf ------------------------------------------------------------------------------

    def merge(self, schema: Schema, base: str) -> tuple[Schema, str]:
        """allOf's parts (and the schema's own keywords) as one schema to make a value from. The result is
        checked against the original by the caller: a merge only has to be a good first guess."""
        parts: list[tuple[Schema, str]] = []
        todo: list[tuple[Any, str, int]] = [(schema, base, 0)]
        while todo:
            node, at, level = todo.pop(0)
            s, at, _ = self.flat(node, at)
            if level > 16:
                raise Unproducible("allOf nested more than 16 levels")
            own = {k: v for k, v in s.items() if k not in ("allOf", BASE)}
            parts.append((own, at))
            if isinstance(s.get("allOf"), list):
                todo[0:0] = [(p, at, level + 1) for p in s["allOf"]]
        out: Schema = {}
        for part, at in parts:
            for k, v in _exclusive_as_numbers(part).items():
                _merge_keyword(out, k, v if at == base else _based(v, at, k))
        return out, base

    # -- checking ------------------------------------------------------------------------------------

    def conforms(self, schema: Any, base: str, value: Any, depth: int = 0) -> bool:
        """Whether `value` is valid against `schema`, for the keywords that decide what a server accepts
        (a subset of JSON Schema's, and OpenAPI's nullable; a pattern Python cannot read passes)."""
        if depth > MAX_DEPTH * 2:
            return False
        try:
            s, base, _ = self.flat(schema, base)
        except Unproducible:
            return False
        if "not" in s and self.conforms(s["not"], base, value, depth + 1):
            return False
        if isinstance(s.get("allOf"), list) and not all(self.conforms(p, base, value, depth + 1) for p in s["allOf"]):
            return False
        if isinstance(s.get("anyOf"), list) and not any(self.conforms(p, base, value, depth + 1) for p in s["anyOf"]):
            return False
        if isinstance(s.get("oneOf"), list) and not self._one_of_ok(s, base, value, depth):
            return False
        if "const" in s and not _same(s["const"], value):
            return False
        if isinstance(s.get("enum"), list) and not any(_same(e, value) for e in s["enum"]):
            return False
        if value is None:
            return self._may_be_null(s)
        if not self._type_ok(s, value):
            return False
        if isinstance(value, bool):
            return True
        if isinstance(value, (int, float)):
            return _number_ok(s, value)
        if isinstance(value, str):
            return _string_ok(s, value)
        if isinstance(value, list):
            return self._array_ok(s, base, value, depth)
        if isinstance(value, dict):
            return self._object_ok(s, base, value, depth)
        return False

    def _one_of_ok(self, s: Schema, base: str, value: Any, depth: int) -> bool:
        """Exactly one branch takes the value; with a discriminator (OpenAPI), the branch it names does."""
        branches = s["oneOf"]
        discriminator = s.get("discriminator")
        if isinstance(discriminator, dict) and isinstance(value, dict):
            tag = value.get(str(discriminator.get("propertyName")))
            mapping = dict_at(discriminator, "mapping")
            for branch in branches:
                ref = branch.get("$ref") if isinstance(branch, dict) else None
                if not isinstance(tag, str) or not isinstance(ref, str):
                    continue
                if mapping.get(tag) == ref or ref.rpartition("/")[2] == tag:
                    return self.conforms(branch, base, value, depth + 1)
        return sum(self.conforms(p, base, value, depth + 1) for p in branches) == 1

    def _may_be_null(self, s: Schema) -> bool:
        declared = s.get("type")
        if s.get("nullable") is True or s.get("x-nullable") is True:
            return True
        if isinstance(declared, list):
            return "null" in declared
        if isinstance(declared, str):
            return declared == "null"
        # No type: JSON Schema takes null; OpenAPI 3.0 means "not null" unless nullable. A made value
        # is never null here, so only a documented null meets this: refused, to be safe.
        return bool(s.get("enum")) or "const" in s

    def _type_ok(self, s: Schema, value: Any) -> bool:
        declared = s.get("type")
        kinds = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else None
        if kinds is None:
            return True
        return any(_is_type(k, value) for k in kinds)

    def _array_ok(self, s: Schema, base: str, value: list[Any], depth: int) -> bool:
        if len(value) < _int(s.get("minItems"), 0) or len(value) > _int(s.get("maxItems"), len(value)):
            return False
        if s.get("uniqueItems") is True and len({_canonical(v) for v in value}) != len(value):
            return False
        prefix = list_at(s, "prefixItems")
        items = s.get("items")
        if isinstance(items, list):
            prefix, items = items, s.get("additionalItems")
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            if sub is not None and not self.conforms(sub, base, item, depth + 1):
                return False
        return True

    def _object_ok(self, s: Schema, base: str, value: dict[str, Any], depth: int) -> bool:
        properties = dict_at(s, "properties")
        required = [r for r in list_at(s, "required") if isinstance(r, str)]
        for name in required:
            if name in value or (self.writing and name in properties and self._read_only(properties[name], base)):
                continue
            return False
        if len(value) < _int(s.get("minProperties"), 0) or len(value) > _int(s.get("maxProperties"), len(value)):
            return False
        pattern_props = dict_at(s, "patternProperties")
        extra = s.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                if not self.conforms(properties[name], base, item, depth + 1):
                    return False
                continue
            matched = [sub for p, sub in pattern_props.items() if patterns.matches(p, name)]
            if matched:
                if not all(self.conforms(sub, base, item, depth + 1) for sub in matched):
                    return False
                continue
            if extra is False:
                return False
            if isinstance(extra, dict) and not self.conforms(extra, base, item, depth + 1):
                return False
        return True

    def _read_only(self, schema: Any, base: str) -> bool:
        try:
            s, _, _ = self.flat(schema, base)
        except Unproducible:
            return False
        return s.get("readOnly") is True

    def as_sent(self, schema: Any, base: str, value: Any) -> Any:
        """A value documented outside the schema (a media type's example) as a request sends it: as a
        schema's own (`_without_read_only`)."""
        return self._without_read_only(schema, base, value)

    def _without_read_only(self, schema: Any, base: str, value: Any, depth: int = 0) -> Any:
        """A documented value as a request sends it: its readOnly properties left out (objects, at any
        depth the schema describes), and without `optional` (--required-only) its optional ones."""
        if not self.writing or depth > MAX_DEPTH:
            return value
        try:
            s, base, _ = self.flat(schema, base)
        except Unproducible:
            return value
        if isinstance(value, dict):
            properties = dict_at(s, "properties")
            listed = s.get("required")
            required: list[Any] = listed if isinstance(listed, list) else []
            return {
                k: self._without_read_only(properties[k], base, v, depth + 1) if k in properties else v
                for k, v in value.items()
                if not (k in properties and self._read_only(properties[k], base))
                # (`optional` off, --required-only: an example's optional properties go too)
                and (self.optional or k in required or (k not in properties and not properties))
            }
        if isinstance(value, list) and isinstance(s.get("items"), dict):
            return [self._without_read_only(s["items"], base, v, depth + 1) for v in value]
        return value


# -- helpers ----------------------------------------------------------------------------------------------


def _is_31_sibling(siblings: dict[str, Any]) -> bool:
    """Whether a $ref's siblings constrain the value (3.1 applies them; annotations alone change nothing)."""
    annotations = {"title", "example", "examples", "default", "deprecated", "readOnly", "writeOnly", "xml"}
    return any(k not in annotations and not k.startswith("x-") for k in siblings)


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "null" or schema.get("type") == ["null"])


def _constrains(rest: dict[str, Any]) -> bool:
    return any(k not in ("title", "description", BASE, "nullable") and not k.startswith("x-") for k in rest)


def _inferred(s: Schema) -> str:
    """The type a schema without `type` most likely means, from its other keywords."""
    if any(k in s for k in ("properties", "required", "additionalProperties", "minProperties", "patternProperties")):
        return "object"
    if any(k in s for k in ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")):
        return "array"
    if s.get("format") in ("int32", "int64"):
        return "integer"
    if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return max(0, int(value))


def _bounds(s: Schema) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is exclusive, high, high is exclusive), from either dialect of the exclusive keywords."""
    low, high = _num(s.get("minimum")), _num(s.get("maximum"))
    low_open = s.get("exclusiveMinimum") is True
    high_open = s.get("exclusiveMaximum") is True
    ex_low, ex_high = _num(s.get("exclusiveMinimum")), _num(s.get("exclusiveMaximum"))
    if ex_low is not None and (low is None or ex_low >= low):
        low, low_open = ex_low, True
    if ex_high is not None and (high is None or ex_high <= high):
        high, high_open = ex_high, True
    return low, low_open, high, high_open


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _int_above(low: float | None, open_: bool, floor: int) -> int:
    if low is None:
        return floor
    value = math.ceil(low)
    if open_ and value == low:
        value += 1
    return max(int(value), floor)


def _int_below(high: float | None, open_: bool, ceiling: int) -> int:
    if high is None:
        return ceiling
    value = math.floor(high)
    if open_ and value == high:
        value -= 1
    return min(int(value), ceiling)


def _inside(value: float, low: float | None, low_open: bool, high: float | None, high_open: bool) -> bool:
    if low is not None and (value < low or (low_open and value == low)):
        return False
    return not (high is not None and (value > high or (high_open and value == high)))


def _times(k: int, step: float) -> float:
    """k * step, exact in decimal where the step is (0.1 * 3 is 0.3, not 0.30000000000000004)."""
    try:
        return float(Decimal(k) * Decimal(repr(step)))
    except InvalidOperation:
        return k * step


def _is_multiple(value: float, step: float) -> bool:
    """As jsonschema checks it (the quotient a whole float, or an integer remainder 0) and, for floats,
    exactly in decimal too (as pydantic's tolerance accepts)."""
    if isinstance(step, float) or isinstance(value, float):
        quotient = value / step
        try:
            if int(quotient) != quotient:
                return False
        except (OverflowError, ValueError):
            return False
        try:
            return Decimal(repr(value)) % Decimal(repr(step)) == 0
        except InvalidOperation:
            return False
    return value % step == 0


def _number_ok(s: Schema, value: float) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    low, low_open, high, high_open = _bounds(s)
    if not _inside(value, low, low_open, high, high_open):
        return False
    step = _num(s.get("multipleOf"))
    if step is not None and step > 0 and not _is_multiple(value, step):
        return False
    fmt = s.get("format")
    if fmt in ("int32", "int64"):
        limits = INT32 if fmt == "int32" else INT64
        return value == int(value) and limits[0] <= value <= limits[1]
    return True


def _string_ok(s: Schema, value: str) -> bool:
    if len(value) < _int(s.get("minLength"), 0) or len(value) > _int(s.get("maxLength"), len(value)):
        return False
    pattern = s.get("pattern")
    if isinstance(pattern, str) and patterns.matches(pattern, value) is False:
        return False
    fmt = s.get("format")
    return _format_ok(fmt, value) if isinstance(fmt, str) else True


def _format_ok(fmt: str, value: str) -> bool:
    """The formats a server checks, as jsonschema's format checker does; others pass."""
    try:
        if fmt == "date":
            datetime.date.fromisoformat(value)
            return len(value) == 10
        if fmt == "date-time":
            if not _DATE_TIME.match(value):
                return False
            datetime.datetime.fromisoformat(value[:19].replace("t", "T").replace(" ", "T"))
            return True
        if fmt == "time":
            return bool(_TIME.match(value))
        if fmt == "uuid":
            return str(uuid.UUID(value)) == value.lower() and len(value) == 36
        if fmt in ("email", "idn-email"):
            return bool(_EMAIL.match(value))
        if fmt in ("uri", "url", "iri"):
            return bool(_URI.match(value))
        if fmt == "ipv4":
            ipaddress.IPv4Address(value)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(value)
            return True
        if fmt == "byte":
            base64.b64decode(value, validate=True)
            return True
        if fmt in ("int32", "int64"):  # an integer written as a string (Google's APIs)
            return bool(re.fullmatch(r"-?\d+", value))
    except ValueError:
        return False
    return True


def _is_type(kind: Any, value: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        whole = isinstance(value, float) and value.is_integer()
        return (isinstance(value, int) and not isinstance(value, bool)) or whole
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind in ("string", "file"):
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True  # a type this checker does not know: not its place to refuse


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1.0 is 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return _canonical(a) == _canonical(b)
    return bool(a == b)


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _exclusive_as_numbers(part: Schema) -> Schema:
    """3.0's boolean exclusiveMinimum/Maximum as 3.1's numbers, so that merged bounds compare."""
    out = dict(part)
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if out.get(flag) is True and _num(out.get(bound)) is not None:
            out[flag] = out.pop(bound)
        elif isinstance(out.get(flag), bool):
            del out[flag]
    return out


def _based(value: Any, base: str, key: str) -> Any:
    """A merged part's subschemas, marked with the location their $refs are read from."""
    if key == "properties" and isinstance(value, dict):
        return {k: {BASE: base, "allOf": [v]} for k, v in value.items()}
    if key in ("items", "additionalProperties", "not") and isinstance(value, dict):
        return {BASE: base, "allOf": [value]}
    if key in ("oneOf", "anyOf", "prefixItems") and isinstance(value, list):
        return [{BASE: base, "allOf": [v]} for v in value]
    return value


_LOWER = {"minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"}
_UPPER = {"maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"}


def _merge_keyword(out: Schema, key: str, value: Any) -> None:
    if key not in out:
        out[key] = copy.copy(value)
        return
    have = out[key]
    if key == "properties" and isinstance(have, dict) and isinstance(value, dict):
        for name, sub in value.items():
            have[name] = {"allOf": [have[name], sub]} if name in have else sub
    elif key == "required" and isinstance(have, list) and isinstance(value, list):
        have.extend(v for v in value if v not in have)
    elif key in _LOWER and _num(have) is not None and _num(value) is not None:
        out[key] = max(have, value)
    elif key in _UPPER and _num(have) is not None and _num(value) is not None:
        out[key] = min(have, value)
    elif key == "type":
        mine = set(have) if isinstance(have, list) else {have}
        theirs = set(value) if isinstance(value, list) else {value}
        if "number" in mine and "integer" in theirs:
            mine.add("integer")
        if "number" in theirs and "integer" in mine:
            theirs.add("integer")
        both = [t for t in _TYPES if t in mine and t in theirs]
        out[key] = both[0] if len(both) == 1 else both
    elif key == "enum" and isinstance(have, list) and isinstance(value, list):
        out[key] = [v for v in have if any(_same(v, w) for w in value)]
    elif key in ("items", "additionalProperties", "not"):
        if value is False or have is False:
            out[key] = False
        else:
            out[key] = {"allOf": [have, value]}
    elif key in ("nullable", "x-nullable"):
        out[key] = have is True and value is True
    # anything else: the first part's (format, examples, descriptions, a second oneOf): the check of
    # the made value against the original schema refuses what this leaves out
