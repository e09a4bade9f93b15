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
    flags = ["-t", "0", "--max-tokens", "24", "--save", "--db", str(db), *budget]
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
