"""The importers' value generator (squall.importers.values) and its regex generator (patterns), against
jsonschema, the reference: every value made for a schema, over many seeds, validates with jsonschema's
own validator and format checker (Draft 2020-12 for OpenAPI 3.1's schemas, Draft 4 for 3.0's boolean
exclusiveMinimum/Maximum). Pure code and fast: 1.3 s for all of it on the development host."""

import ast
import random
import re

import jsonschema
import pytest

from squall.importers import patterns, pysource
from squall.importers.values import Unproducible, Values

SEEDS = range(120)


def resolver(defs):
    def resolve(schema, base):
        name = schema["$ref"].rpartition("/")[2]
        return defs[name], base

    return resolve


# OpenAPI 3.1 / JSON Schema 2020-12 schemas, as FastAPI and hand-written documents give them.
DEFS = {
    "Pet": {
        "type": "object",
        "required": ["name", "kind"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
            "kind": {"enum": ["cat", "dog"]},
            "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 30},
            "weight": {"type": "number", "multipleOf": 0.25, "minimum": 0.5, "maximum": 80},
            "ratio": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {
                "type": "array",
                "items": {"type": "string", "format": "uuid"},
                "minItems": 2,
                "maxItems": 4,
                "uniqueItems": True,
            },
            "born": {"type": "string", "format": "date"},
            "seen": {"type": "string", "format": "date-time"},
            "owner": {"$ref": "#/$defs/Person"},
            "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{4}$"},
            "note": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}], "default": None},
        },
    },
    "Person": {
        "type": "object",
        "required": ["email"],
        "properties": {
            "email": {"type": "string", "format": "email"},
            "friend": {"$ref": "#/$defs/Person"},
            "site": {"type": "string", "format": "uri"},
            "ip": {"type": "string", "format": "ipv4"},
            "ip6": {"type": "string", "format": "ipv6"},
        },
    },
    "Shape": {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "circle"},
                    "r": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                },
                "required": ["kind", "r"],
            },
            {
                "type": "object",
                "properties": {
                    "kind": {"const": "square"},
                    "side": {"type": "integer", "multipleOf": 3, "minimum": 10},
                },
                "required": ["kind", "side"],
            },
        ]
    },
    "Both": {
        "allOf": [
            {"$ref": "#/$defs/Person"},
            {
                "type": "object",
                "properties": {"level": {"type": "integer", "minimum": 5, "maximum": 5}},
                "required": ["level"],
            },
        ]
    },
    "Map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": -5, "maximum": -1}},
    "Tree": {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}, "v": {"type": "integer"}},
        "required": ["v"],
    },
    "Nullable": {"type": ["string", "null"], "minLength": 2, "maxLength": 2},
    "Numbers": {
        "type": "array",
        "minItems": 3,
        "items": {"type": "integer", "minimum": -1000, "maximum": -900, "multipleOf": 7},
    },
    "Tuple": {
        "type": "array",
        "prefixItems": [{"type": "boolean"}, {"type": "string", "format": "date"}],
        "items": False,
    },
    "Big": {"type": "integer", "minimum": 10**12, "format": "int64"},
    "Words": {"type": "string", "enum": ["a b", 'quote"d', "back\\slash", "\u00e9t\u00e9"]},
}

# OpenAPI 3.0 / Swagger 2.0: boolean exclusive bounds (Draft 4's).
DEFS_30 = {
    "Price": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 10, "exclusiveMaximum": True},
    "Count": {"type": "integer", "minimum": 1, "maximum": 3, "exclusiveMaximum": True, "format": "int32"},
    "Order": {
        "type": "object",
        "required": ["qty", "price"],
        "properties": {"qty": {"$ref": "#/definitions/Count"}, "price": {"$ref": "#/definitions/Price"}},
    },
}


@pytest.mark.parametrize("name", sorted(DEFS))
def test_made_values_validate_with_jsonschema(name):
    schema = {"$ref": f"#/$defs/{name}", "$defs": DEFS}
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    kinds = set()
    for seed in SEEDS:
        value = Values(resolver(DEFS), random.Random(seed), writing=False).make({"$ref": f"#/$defs/{name}"}, "")
        errors = [e.message for e in validator.iter_errors(value)]
        assert not errors, (name, seed, value, errors)
        kinds.add(type(value).__name__ + (str(sorted(value)) if isinstance(value, dict) else ""))
    if name == "Shape":
        assert len(kinds) == 2, kinds  # both branches of the oneOf are drawn


@pytest.mark.parametrize("name", sorted(DEFS_30))
def test_openapi_30_bounds_validate_with_draft_4(name):
    schema = {"$ref": f"#/definitions/{name}", "definitions": DEFS_30}
    validator = jsonschema.Draft4Validator(schema)
    for seed in SEEDS:
        value = Values(resolver(DEFS_30), random.Random(seed), writing=False).make({"$ref": f"#/x/{name}"}, "")
        assert not list(validator.iter_errors(value)), (name, seed, value)


def test_one_seed_one_value():
    make = lambda seed: Values(resolver(DEFS), random.Random(seed)).make({"$ref": "#/$defs/Pet"}, "")
    assert make(7) == make(7)
    assert len({repr(make(seed)) for seed in range(10)}) > 5


def test_documented_values_come_first_when_valid():
    values = Values(resolver({}), random.Random(0))
    assert values.make({"type": "integer", "example": 42}, "") == 42
    assert values.make({"type": "integer", "examples": [7, 8]}, "") == 7
    assert values.make({"type": "string", "default": "x", "enum": ["x", "y"]}, "") == "x"
    # Swagger's Petstore gives the string `password` the example 12345: not a string, not sent
    made = values.make({"type": "string", "example": 12345}, "", "password")
    assert isinstance(made, str) and made.startswith("password")
    # an example out of the schema's bounds is not sent either
    assert values.make({"type": "integer", "maximum": 5, "example": 10}, "") <= 5


def test_read_only_properties_stay_out_of_requests():
    schema = {
        "type": "object",
        "required": ["id", "name"],
        "properties": {"id": {"type": "integer", "readOnly": True}, "name": {"type": "string"}},
        "example": {"id": 3, "name": "rex"},
    }
    assert Values(resolver({}), random.Random(0)).make(schema, "") == {"name": "rex"}
    assert Values(resolver({}), random.Random(0), writing=False).make(schema, "") == {"id": 3, "name": "rex"}


def test_required_only_leaves_optional_properties_out():
    value = Values(resolver(DEFS), random.Random(0), optional=False).make({"$ref": "#/$defs/Pet"}, "")
    assert set(value) == {"name", "kind"}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "string", "pattern": "^\\p{L}+$"}, "not one Python reads"),
        ({"type": "integer", "minimum": 5, "maximum": 4}, "no number between"),
        ({"type": "integer", "minimum": 1, "maximum": 2, "multipleOf": 5}, "no multiple of 5"),
        ({"type": "string", "minLength": 9, "maxLength": 3}, "minLength 9"),
        ({"type": "array", "minItems": 3, "uniqueItems": True, "items": {"enum": [1, 2]}}, "fewer than minItems"),
        ({"$ref": "#/$defs/Loop"}, "requires itself"),
        ({"type": "object", "required": ["a"], "properties": {"a": {"enum": []}}}, "a:"),
    ],
)
def test_what_cannot_be_made_says_why(schema, why):
    defs = {"Loop": {"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#/$defs/Loop"}}}}
    with pytest.raises(Unproducible, match=re.escape(why)):
        Values(resolver(defs), random.Random(0)).make(schema, "")


PATTERNS = [
    r"^[A-Z]{2,3}-\d+(?:\.[a-z]+)?$",
    r"^\d{4}-\d{2}-\d{2}$",
    r"^(red|green|blue)$",
    r"^[^\s@]+@[^\s@]+\.[^\s@]+$",
    r"^(?<year>\d{4})-\k<year>$",  # ECMA-262's named group and back-reference
    r"^(?=.*[A-Z])(?=.*\d)[A-Za-z\d]{8,}$",  # lookaheads: honoured by the check
    r"^[a-zA-Z0-9_-]{3,16}$",
    r"^(\w+)\s\1$",
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
    r"^\+?[1-9]\d{1,14}$",
    r"^[^/]+$",
    r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$",
    r"[a-z]",  # unanchored: found in a longer string too
    r"^\S+$",
    r"^v\d+(\.\d+){0,2}$",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterns_are_matched_within_length_bounds(pattern):
    spelled = patterns.python_pattern(pattern)
    for seed in range(60):
        low, high = (0, None) if seed % 2 else (10, 24)
        try:
            text = patterns.matching(pattern, random.Random(seed), low, high)
        except patterns.NoMatch:
            assert low == 10, (pattern, seed)  # a fixed-length shape cannot reach 10-24 characters
            continue
        assert re.search(spelled, text), (pattern, seed, text)
        assert low <= len(text) <= (high or len(text)), (pattern, seed, text)
        assert text.isprintable() and text.isascii()


def test_literals_read_back_as_the_values():
    for value in [
        "plain",
        'say "hi"',
        "it's",
        "both ' and \"",
        "back\\slash\nnew\tline\x00\u2028\ud800",
        "caf\u00e9 \U0001f600",
        b'\x00bytes\n"',
        {"a": [1, 2.5, None, True, {"b": ()}]},
        ("one",),
    ]:
        assert ast.literal_eval(pysource.literal(value)) == value, value
    assert pysource.string('say "hi"') == "'say \"hi\"'"  # ruff's preference: fewer escapes
