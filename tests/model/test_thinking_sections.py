"""A thinking model's reply on the real default model: its sections recorded, stored
and read back, replayed token-identical; the thinking's own settings.

The thinking SmolLM2 copy (tests/thinking_models.py) opens `<think>` in the generation
prompt; SmolLM2 writes `</think>` only when told, so a reasoning budget closes the
thinking where a test needs an answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.store.store import ChatStore
from sampling.sections import Section
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "1024"]
QUESTION = "What is 7 times 8?"


def generate_json(
    model: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> dict[str, object]:
    """`generate QUESTION --json` on `model` with `flags`: its JSON object."""
    argv = ["generate", QUESTION, "--json", "--model", str(model), *MODEL_FLAGS, *flags]
    assert main(argv) == 0, capsys.readouterr().err
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_sections_are_recorded_stored_and_read_back_and_the_reply_replays(
    thinking_model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "chats.sqlite3"
    budget = ["--reasoning-budget", "6", "--reasoning-budget-message", " Done."]
    thinking = ["--think-set", "t=0.9,top_k=20", "-s", "3"]  # sampled thinking, greedy answer
    flags = ["-t", "0", "--max-tokens", "24", "--save", "--db", str(db), *budget, *thinking]
    result = generate_json(thinking_model_path, capsys, *flags)
    with ChatStore(db) as store:
        chat = store.load_chat(int(result["chat_id"]))  # type: ignore[call-overload]
        (reply,) = chat.replies
        steps = store.load_steps(chat, reply)
        pieces = store.load_pieces(chat, reply)
    kinds = [steps[index].section for index in sorted(steps)]
    assert all(isinstance(kind, Section) for kind in kinds)
    # The generation prompt opened the thinking: the reply starts in it; the forced
    # end tag closes it, and the answer follows.
    closing = kinds.index(Section.ANSWER)
    assert closing > 6 and set(kinds[:closing]) == {Section.THINKING}
    assert set(kinds[closing:]) == {Section.ANSWER}
    thought = "".join(pieces[index] for index in range(closing))
    assert thought.endswith("</think>")
    # Each step read back with the record it ran with (the prompt opened the thinking).
    temperatures = [steps[index].settings.value("temperature") for index in sorted(steps)]
    assert set(temperatures[:closing]) == {0.9} and set(temperatures[closing:]) == {0.0}
    assert reply.settings_at(0).value("think_set") == ("t=0.9", "top_k=20")
    # The stored settings hold the template's tags, so the replay tracks the same.
    assert reply.settings_at(0).value("thinking_tags") == ("<think>", "</think>")
    argv = ["replay", str(chat.id), "--db", str(db), "--model", str(thinking_model_path)]
    assert main([*argv, "--threads", "1"]) == 0, capsys.readouterr()
    assert "token-identical" in capsys.readouterr().out


def test_a_model_without_thinking_records_the_answer_only(
    default_model_path: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "chats.sqlite3"
    flags = ["-t", "0", "--max-tokens", "8", "--save", "--db", str(db)]
    result = generate_json(default_model_path, capsys, *flags)
    with ChatStore(db) as store:
        chat = store.load_chat(int(result["chat_id"]))  # type: ignore[call-overload]
        (reply,) = chat.replies
        steps = store.load_steps(chat, reply)
    assert {step.section for step in steps.values()} == {Section.ANSWER}
    assert reply.settings_at(0).value("thinking_tags") == ()


def test_think_set_changes_only_the_thinking(
    thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = ["--reasoning-budget", "8", "--reasoning-budget-message", " Done."]
    common = ["--max-tokens", "28", *budget]
    greedy = generate_json(thinking_model_path, capsys, "-t", "0", *common)
    seeded = ["-t", "1.2", "-s", "5", "--top-k", "0", "--top-p", "1", "--min-p", "0"]
    mixed = generate_json(thinking_model_path, capsys, *seeded, "--think-set", "t=0", *common)
    sampled = generate_json(thinking_model_path, capsys, *seeded, *common)
    ids, greedy_ids = mixed["token_ids"], greedy["token_ids"]
    assert isinstance(ids, list) and isinstance(greedy_ids, list)
    # The thinking (its tokens, then " Done." and "</think>" forced) is greedy in both.
    thought = [s for s in mixed["sections"] if s["kind"] == "thinking"]  # type: ignore[union-attr]
    (span,) = thought
    assert span["first"] == 0 and str(mixed["thinking"]).endswith(" Done.</think>")
    assert ids[: span["last"] + 1] == greedy_ids[: span["last"] + 1]
    assert mixed["thinking"] == greedy["thinking"] and mixed["thinking_closed"]
    # The answer is sampled at t 1.2 as without --think-set (the thinking drew nothing).
    assert ids[span["last"] + 1 :] != greedy_ids[span["last"] + 1 :]
    assert mixed["settings"]["think_set"] == ["t=0"]  # type: ignore[index]
    assert sampled["token_ids"] != ids


def test_a_bad_think_set_is_one_line_before_the_model_loads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-model.gguf"  # never loaded: the flag is refused first
    for bad, words in (("seed=3", "whole reply"), ("t=hot", "temperature"), ("zz=1", "zz")):
        argv = ["generate", QUESTION, "--think-set", bad, "--model", str(missing)]
        assert main(argv) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "think_set" in err and words in err, err


SCHEMA = '{"type":"object","properties":{"product":{"type":"integer"}},"required":["product"]}'


def test_a_json_schema_applies_to_the_answer_only(
    thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = ["--reasoning-budget", "8", "--reasoning-budget-message", " Done."]
    flags = ["-t", "0", "--max-tokens", "48", "--json-schema", SCHEMA, *budget]
    result = generate_json(thinking_model_path, capsys, *flags)
    kinds = [span["kind"] for span in result["sections"]]  # type: ignore[attr-defined]
    assert kinds == ["thinking", "answer"] and result["finish_reason"] == "eos"
    thinking = str(result["thinking"])
    # The thinking was free: it is no JSON object of the schema (greedy SmolLM2 starts
    # one, cut by the budget), and the budget's message and end tag came through.
    assert thinking.endswith(" Done.</think>")
    with pytest.raises(ValueError):
        json.loads(thinking.removesuffix(" Done.</think>"))
    answer = json.loads(str(result["text"]))
    assert isinstance(answer, dict) and isinstance(answer["product"], int)


def test_generate_prints_the_thinking_apart(
    thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = ["--reasoning-budget", "8", "--reasoning-budget-message", " Done."]
    flags = ["-t", "1.2", "-s", "5", "--think-set", "t=0", "--max-tokens", "28", *budget]
    result = generate_json(thinking_model_path, capsys, *flags)
    assert str(result["text"]).strip()  # an answer after the thinking
    argv = ["generate", QUESTION, *flags, "--model", str(thinking_model_path), *MODEL_FLAGS]
    assert main(argv) == 0
    together = capsys.readouterr().out
    # Not a terminal: not dimmed, the reply as the model wrote it.
    assert together.rstrip("\n") == f"{result['thinking']}{result['text']}".rstrip("\n")
    assert main([*argv, "--hide-thinking"]) == 0
    apart = capsys.readouterr()
    assert apart.out.rstrip("\n") == str(result["text"]).rstrip("\n")
    assert str(result["thinking"]) in apart.err and "</think>" not in apart.out


def test_a_thinking_that_never_closes_is_said_and_kept(
    thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = generate_json(thinking_model_path, capsys, "-t", "0", "--max-tokens", "6")
    assert result["text"] == "" and result["thinking"] and not result["thinking_closed"]
    assert result["sections"] == [{"kind": "thinking", "first": 0, "last": 5}]
    argv = ["generate", QUESTION, "-t", "0", "--max-tokens", "6"]
    assert main([*argv, "--model", str(thinking_model_path), *MODEL_FLAGS]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(result["thinking"]).strip()
    assert "ended inside its thinking" in out.err


def test_compare_json_gives_each_columns_thinking_and_answer_apart(
    thinking_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = "reasoning_budget=4,reasoning_budget_message=Done."
    argv = ["compare", QUESTION, "--json", "--model", str(thinking_model_path), *MODEL_FLAGS]
    argv += ["--set", f"t=0,{budget}", "--set", f"t=0,think.t=0.9,{budget}"]
    argv += ["--max-tokens", "16"]
    assert main(argv) == 0, capsys.readouterr().err
    columns = json.loads(capsys.readouterr().out)
    assert len(columns) == 2
    for column in columns:
        sections = column["sections"]
        assert [part["kind"] for part in sections] == ["thinking", "answer"]
        assert column["thinking"].endswith("Done.</think>") and column["thinking_closed"]
        # the answer's text is the reply's after the thinking, token for token
        assert sections[1]["first"] == sections[0]["last"] + 1
        assert "</think>" not in column["text"]


def test_the_thinking_bench_runs_on_a_tiny_budget(default_model_path: Path) -> None:
    from backend.bench.thinking import format_result, run_thinking_bench

    result = run_thinking_bench(default_model_path, n_threads=1, max_tokens=6, repeats=1)
    assert result.tokens == 6 and result.plain_tps > 0 and result.thinking_tps > 0
    assert "the thinking's watch costs" in format_result(result)
