"""`export` and `tree` on a chat whose earlier reply was branched: every stored turn,
the ones off screen too, and the links that rebuild the tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backend.store.store import ChatStore, Fork, ModelRef
from sampling.settings.record import SamplerSettings
from tests.helpers import DateClock
from tui.cli.main import main

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
BASE = SamplerSettings(temperature=0.7, top_k=5, seed=7)


def record(store: ChatStore, chat: int, tokens: list[int], fork: Fork | None = None) -> int:
    start = 0 if fork is None else fork.at
    writer = store.begin_reply(chat, MODEL, BASE, max_tokens=9, fork=fork)
    for index, token in enumerate(tokens, start=start):
        writer.append_token(index, token, BASE, f"<{token}>")
    text = (fork.text if fork else "") + "".join(f"<{t}>" for t in tokens)
    writer.finish("max_tokens", None, text)
    return writer.reply_id


@pytest.fixture
def branched(tmp_path: Path) -> tuple[Path, int, dict[str, int]]:
    """q1 → reply 1 (r1) → q2 → reply 2 (r2, with a branch r2b); then r1 is branched
    (r1b, followed), hiding q2 and reply 2, and the chat goes on: q3 → reply (r3)."""
    db = tmp_path / "chats.sqlite3"
    with ChatStore(db, clock=DateClock()) as store:
        chat = store.new_chat("t", MODEL)
        store.add_message(chat, "user", "q1")
        ids = {"r1": record(store, chat, [1, 2, 3, 4])}
        store.add_message(chat, "user", "q2 old")
        ids["r2"] = record(store, chat, [5, 6, 7])
        r2 = store.load_chat(chat).replies[1]
        ids["r2b"] = record(store, chat, [8, 9], Fork(r2, 1, "<5>", follow=False))
        r1 = store.load_chat(chat).replies[0]
        ids["r1b"] = record(store, chat, [10, 11], Fork(r1, 2, "<1><2>"))
        store.add_message(chat, "user", "q3 new")
        ids["r3"] = record(store, chat, [12])
    return db, chat, ids


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_export_json_holds_the_hidden_turns_and_rebuilds_the_tree(
    branched: tuple[Path, int, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, chat, ids = branched
    data = run_json(capsys, ["export", str(chat), "--format", "json", "--db", str(db)])
    assert data["samplescope_export"] == 3
    # On screen: q1, reply 1 on branch r1b, q3, reply r3.
    assert [m["content"] for m in data["messages"]] == ["q1", "<1><2><10><11>", "q3 new", "<12>"]
    assert [m["after_reply_id"] for m in data["messages"]] == [None, None, ids["r1b"], ids["r1b"]]
    # Off screen: q2 and reply 2 with both its branches, after the old branch r1.
    hidden = data["hidden_messages"]
    assert [m["content"] for m in hidden] == ["q2 old", "<5><6><7>"]
    assert [m["after_reply_id"] for m in hidden] == [ids["r1"], ids["r1"]]
    old = hidden[1]["branches"]
    assert [(b["branch_id"], b["parent"], b["at"]) for b in old] == [
        (ids["r2"], None, None),
        (ids["r2b"], ids["r2"], 2),
    ]
    assert old[1]["token_ids"] == [5, 8, 9] and old[1]["text"] == "<5><8><9>"
    assert old[0]["number"] == 2  # the second reply of its continuation
    assert hidden[1]["reply"]["branch_id"] == ids["r2"]

    # Rebuild: every branch under its turn, every turn under the branch it follows.
    turns = data["messages"] + data["hidden_messages"]
    branch_turn = {b["branch_id"]: m["id"] for m in turns for b in m["branches"]}
    assert set(branch_turn) == set(ids.values())
    assert {row["id"] for row in data["tree"]} == set(ids.values())
    first_turn = branch_turn[ids["r1"]]
    assert branch_turn[ids["r1b"]] == first_turn
    children = {
        after: sorted(m["content"] for m in turns if m["after_reply_id"] == after)
        for after in (ids["r1"], ids["r1b"])
    }
    assert children == {ids["r1"]: ["<5><6><7>", "q2 old"], ids["r1b"]: ["<12>", "q3 new"]}
    parents = {b["branch_id"]: b["parent"] for m in turns for b in m["branches"]}
    assert parents[ids["r1b"]] == ids["r1"] and parents[ids["r2b"]] == ids["r2"]


def test_markdown_export_shows_only_the_followed_path(
    branched: tuple[Path, int, dict[str, int]], tmp_path: Path
) -> None:
    db, chat, ids = branched
    out = tmp_path / "chat.md"
    assert main(["export", str(chat), "--db", str(db), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "q1" in text and "<1><2><10><11>" in text and "q3 new" in text
    assert "q2 old" not in text and "<5><6><7>" not in text
    # Following the old branch again brings its continuation back on screen.
    with ChatStore(db) as store:
        store.follow_branch(chat, ids["r1"])
    assert main(["export", str(chat), "--db", str(db), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "q2 old" in text and "<5><6><7>" in text and "q3 new" not in text
    saved = tmp_path / "chat.json"
    assert main(["export", str(chat), "--format", "json", "--db", str(db), "-o", str(saved)]) == 0
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert [m["content"] for m in data["hidden_messages"]] == ["q3 new", "<12>"]


def test_tree_lists_the_hidden_branches_and_marks_the_followed_ones(
    branched: tuple[Path, int, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, chat, ids = branched
    tree = run_json(capsys, ["tree", str(chat), "--json", "--db", str(db)])
    rows = {row["id"]: row for row in tree["branches"]}
    assert set(rows) == set(ids.values())
    assert [row["id"] for row in tree["branches"]] == [
        ids["r1"],
        ids["r1b"],
        ids["r2"],
        ids["r2b"],
        ids["r3"],
    ]
    shown = {key for key, rid in ids.items() if rows[rid]["shown"]}
    followed = {key for key, rid in ids.items() if rows[rid]["followed"]}
    off_screen = {key for key, rid in ids.items() if not rows[rid]["turn_shown"]}
    assert shown == {"r1b", "r3"}
    assert followed == {"r1b", "r2", "r3"}  # r2: what its (hidden) turn follows
    assert off_screen == {"r2", "r2b"}
    assert rows[ids["r2b"]]["parent"] == ids["r2"] and rows[ids["r2b"]]["at"] == 2
    assert rows[ids["r2b"]]["tokens"] == 3 and rows[ids["r2b"]]["finish_reason"] == "max_tokens"
    assert [rows[ids[k]]["after_reply_id"] for k in ("r1", "r2", "r2b", "r3")] == [
        None,
        ids["r1"],
        ids["r1"],
        ids["r1b"],
    ]
    assert [rows[ids[k]]["reply"] for k in ("r1", "r2", "r3")] == [1, 2, 2]

    capsys.readouterr()
    assert main(["tree", str(chat), "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines[0].startswith(f"  reply 1 branch {ids['r1']}: root")
    assert lines[1].startswith(f"* reply 1 branch {ids['r1b']}: from {ids['r1']} at token 3")
    assert lines[2] == (
        f"+ reply 2 branch {ids['r2']}: root, 3 tokens, max_tokens, "
        f"after branch {ids['r1']} (not on screen)"
    )
    assert lines[3].startswith(f"  reply 2 branch {ids['r2b']}: from {ids['r2']} at token 2")
    assert lines[3].endswith("(not on screen)")
    assert lines[4].startswith(f"* reply 2 branch {ids['r3']}: root") and "after branch" in lines[4]
