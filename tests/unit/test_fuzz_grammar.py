"""Fuzzing grammars and JSON schemas: any schema (structured from the keywords the
converter reads), any text given as a schema, and hostile GBNF for llama.cpp's parser.

A schema converts to GBNF or is one `GrammarError` line, never the converter's own
exception; a GBNF text llama.cpp is asked about (in a child process) is taken or
refused with one line. Examples per run: two properties of 100 examples from the
hypothesis profile (tests/conftest.py), and one of 15 that runs llama.cpp's parser
in a child each time.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.llama.grammar import check_in_child, gbnf_of
from sampling.constraint import GrammarSpec
from sampling.errors import GrammarError

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array", "x", 3]
numbers = st.one_of(
    st.integers(-5, 5), st.sampled_from([2**70, -(2**70), 1e308, 0.5, -0.0, 10**30]), st.none()
)
texts = st.text(max_size=6)


def schema_node(children: st.SearchStrategy[object]) -> st.SearchStrategy[dict[str, object]]:
    """A schema object using the keywords the converter reads (and some it does not)."""
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), max_size=3)),
            "properties": st.dictionaries(texts, children, max_size=3),
            "required": st.lists(texts, max_size=3),
            "additionalProperties": st.one_of(st.booleans(), children),
            "items": st.one_of(children, st.lists(children, max_size=2)),
            "prefixItems": st.lists(children, max_size=2),
            "enum": st.lists(st.one_of(texts, numbers, st.booleans()), max_size=3),
            "const": st.one_of(texts, numbers, st.just("\x00"), st.just({"a": [1]})),
            "anyOf": st.lists(children, max_size=2),
            "oneOf": st.lists(children, max_size=2),
            "allOf": st.lists(children, max_size=2),
            "minLength": numbers, "maxLength": numbers,
            "minItems": numbers, "maxItems": numbers,
            "minimum": numbers, "maximum": numbers,
            "exclusiveMinimum": numbers, "exclusiveMaximum": numbers,
            "pattern": st.sampled_from(["^a+$", "[", "(a|b)*", "\\d{2,3}", "", "^$", "a{99999}",
                                        "(?P<x>a)", ".*", "[^\\x00]"]),
            "format": st.sampled_from(["date", "date-time", "uuid", "time", "email", "x"]),
            "$ref": st.sampled_from(["#", "#/definitions/a", "#/$defs/a", "http://x/y", "a", ""]),
            "$defs": st.dictionaries(st.just("a"), children, max_size=1),
            "definitions": st.dictionaries(st.just("a"), children, max_size=1),
        },
    )  # fmt: skip


schemas = st.recursive(
    st.one_of(st.booleans(), st.just({}), st.builds(dict, type=st.sampled_from(TYPES))),
    schema_node,
    max_leaves=8,
)


def converted_or_one_line(schema_text: str) -> str | None:
    try:
        gbnf = gbnf_of(GrammarSpec(json_schema=schema_text))
    except GrammarError as error:
        assert "\n" not in str(error), str(error)
        return None
    assert "root" in gbnf
    return gbnf


@HEALTH
@given(schemas)
def test_any_schema_converts_or_is_one_line(schema: object) -> None:
    converted_or_one_line(json.dumps(schema))


@HEALTH
@given(
    st.one_of(
        st.text(max_size=30),
        st.lists(st.sampled_from(['{', '}', '[', ']', '"type"', ':', ',', '"string"', '1e999',
                                  '"$ref"', '"#"', 'null', '-0', '"\\u0000"']), max_size=12)
        .map("".join),
    )
)  # fmt: skip
def test_any_text_as_a_schema_converts_or_is_one_line(text: str) -> None:
    if text.strip():
        converted_or_one_line(text)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"properties": ' * 5000 + "{}" + "}" * 5000,
        '{"type": "integer", "minimum": 1' + "0" * 5000 + "}",
        '{"type": "string", "maxLength": 1e999}',
        '{"type": "string", "minLength": 5, "maxLength": 2}',
        '{"$ref": "#"}',
        '{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}}',
        '{"type": "array", "minItems": 100000}',
        '{"type": "array", "items": {}, "minItems": 1180591620717411303424}',
        '{"enum": []}',
        '{"const": "\\u0000"}',
        '{"type": "string", "pattern": "("}',
        '{"type": "object", "properties": {"\\u0000": {}}, "required": ["\\u0000"]}',
    ],
    ids=["deep-array", "deep-properties", "huge-int", "inf-length", "contradiction", "self-ref",
         "ref-loop", "many-items", "huge-count", "empty-enum", "nul-const", "bad-pattern",
         "nul-property"],
)  # fmt: skip
def test_hostile_schemas_convert_or_are_one_line(text: str) -> None:
    converted_or_one_line(text)


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(schemas)
def test_llama_cpp_takes_a_converted_schema_or_says_why_in_one_line(schema: object) -> None:
    gbnf = converted_or_one_line(json.dumps(schema))
    if gbnf is not None:
        problem = check_in_child(gbnf, ())
        assert problem is None or "\n" not in problem, problem


@pytest.mark.parametrize(
    "gbnf",
    [
        "root ::= " + "(" * 100_000 + '"a"' + ")" * 100_000,
        'root ::= "a\x00b"',
        'root ::= "' + "a" * 1_000_000 + '"',
        "root ::= missing",
        "",
        "root ::= [",
        'root ::= "a"\nroot ::= "b"',
        "\udcff",
    ],
    ids=["deep", "nul", "huge-literal", "undefined", "empty", "open-class", "twice", "surrogate"],
)
def test_hostile_gbnf_is_taken_or_refused_in_one_line(gbnf: str) -> None:
    problem = check_in_child(gbnf, ())
    assert problem is None or "\n" not in problem, problem
