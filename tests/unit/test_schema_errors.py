"""A JSON schema that cannot be met or converted is one line saying why: crossed bounds
refused (the converted grammar would accept text the schema forbids), a remote $ref
named as such (not the converter's own command-line flag), a bad $ref not an
AssertionError."""

from __future__ import annotations

import pytest

from backend.llama.grammar import gbnf_of, schema_contradiction
from sampling.constraint import GrammarSpec
from sampling.errors import GrammarError


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (
            '{"type": "string", "minLength": 5, "maxLength": 2}',
            "#: minLength 5 is above maxLength 2",
        ),
        (
            '{"type": "object", "properties":'
            ' {"a": {"type": "array", "minItems": 3, "maxItems": 1}}}',
            "#/properties/a: minItems 3 is above maxItems 1",
        ),
        ('{"type": "integer", "minimum": 5, "maximum": 1}', "minimum 5 is above maximum 1"),
        ('{"$ref": "https://example.com/x.json"}', "a $ref to another document"),
        ('{"$ref": "#/nope"}', "cannot convert the JSON schema to a grammar: Error resolving"),
        ("[" * 100_000 + "]" * 100_000, "nested too deep"),
    ],
)
def test_a_schema_that_cannot_be_met_or_converted_is_one_line(schema: str, words: str) -> None:
    with pytest.raises(GrammarError) as caught:
        gbnf_of(GrammarSpec(json_schema=schema))
    message = str(caught.value)
    assert words in message and "\n" not in message and "--allow-fetch" not in message


def test_bounds_that_hold_are_accepted() -> None:
    assert schema_contradiction({"minLength": 2, "maxLength": 2, "items": [{"minimum": 0}]}) is None
    assert gbnf_of(GrammarSpec(json_schema='{"type": "string", "maxLength": 3}'))


def test_a_grammar_and_a_json_schema_together_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli.main import main

    argv = ["generate", "hi", "--grammar", 'root ::= "a"', "--json-schema", '{"type": "string"}']
    assert main(argv) == 2
    assert "either a grammar or a JSON schema" in capsys.readouterr().err


def test_a_grammar_nested_too_deep_for_llama_cpp_is_named_as_such() -> None:
    from backend.llama.grammar import check_in_child

    deep = "root ::= " + "(" * 100_000 + '"a"' + ")" * 100_000
    said = check_in_child(deep, ())
    assert said is not None and "nested too deep" in said and "trigger" not in said


def test_a_grammar_llama_cpp_takes_too_long_to_read_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from backend.llama import grammar

    monkeypatch.setattr(grammar, "CHECK_SECONDS", 0.001)
    said = grammar.check_in_child('root ::= "slow"', ())
    assert said is not None and said.startswith("llama.cpp did not finish reading the grammar")
    assert "\n" not in said and "import" not in said


def test_ctrl_c_stops_a_grammar_check_at_once_and_its_child() -> None:
    import os
    import signal
    import threading
    import time

    from backend.llama.grammar import check_in_child

    # 200,000 alternatives: llama.cpp takes minutes to read them (the check's limit is
    # 60 s). Ctrl-C in the middle raises at once, and the child is killed on the way out.
    slow = "root ::= " + " | ".join(f'"a{n}"' for n in range(200_000))
    children_before = _children()
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        check_in_child(slow, ())
    # Killed on the way out; it may take the loaded machine a moment to go.
    for _ in range(200):
        if _children() == children_before:
            break
        time.sleep(0.05)
    assert _children() == children_before


def _children() -> set[int]:
    """The ids of this process's live child processes."""
    import os
    from pathlib import Path

    me = str(os.getpid())
    found = set()
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(status.parent.name))
    return found
