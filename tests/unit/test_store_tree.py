"""The store's reply tree: branches, the branch a turn follows, per-token records."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from backend.store.steps import StepLayout, layout_of, pack_step, unpack_step
from backend.store.store import ChatStore, Fork, ModelRef, StoreError
from sampling.records import Step
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.helpers import DateClock

MODEL = ModelRef(path="/models/m.gguf", size=1234, sha256="ab" * 32)
BASE = SamplerSettings(temperature=0.7, top_k=5, seed=7)


def sampled_steps(n: int, settings: SamplerSettings = BASE) -> list[Step]:
    rng = np.random.default_rng(0)
    sampler = Sampler(settings, n_candidates=8)
    return [sampler.sample(rng.normal(size=64) * 3) for _ in range(n)]


@pytest.fixture
def store(tmp_path: Path) -> ChatStore:
    with ChatStore(tmp_path / "chats.sqlite3", clock=DateClock()) as opened:
        yield opened


def record(store: ChatStore, chat: int, steps: list[Step], fork: Fork | None = None) -> int:
    start = 0 if fork is None else fork.at
    writer = store.begin_reply(chat, MODEL, steps[0].settings, max_tokens=9, fork=fork)
    for index, step in enumerate(steps, start=start):
        writer.append_token(index, step.token_id, step.settings, f"<{step.token_id}>", step)
    text = (fork.text if fork else "") + "".join(f"<{s.token_id}>" for s in steps)
    writer.finish("max_tokens", None, text)
    return writer.reply_id


def test_step_rows_round_trip_compactly() -> None:
    steps = sampled_steps(3)
    layout = layout_of(steps[0])
    assert StepLayout.from_json(layout.to_json()) == layout
    for step in steps:
        scalars, blob = pack_step(step, layout)
        # Four numeric columns of eight candidates, four bytes each, and the kept flags.
        assert len(blob) == 4 * 8 * 4 + 8
        assert len(scalars) < 180  # the chosen token's logit included
        again = unpack_step(scalars, blob, layout, step.settings)
        assert again == step  # every compared field: token, prob, draw, n_kept, cut_by ...
        assert isinstance(again.cut_by, str)
        np.testing.assert_array_equal(again.table.token_ids, step.table.token_ids)
        np.testing.assert_allclose(again.table.prob_after, step.table.prob_after, rtol=1e-6)
        np.testing.assert_allclose(again.table.logits, step.table.logits, rtol=1e-6)


def test_the_tail_plots_ranks_are_not_stored() -> None:
    sampler = Sampler(BASE, n_candidates=8)
    sampler.tail_ranks = 32
    step = sampler.sample(np.random.default_rng(1).normal(size=64) * 3)
    assert step.tail is not None
    layout = layout_of(step)
    assert "tail" not in layout.scalars
    scalars, blob = pack_step(step, layout)
    assert len(scalars) < 180
    assert unpack_step(scalars, blob, layout, step.settings).tail is None


def test_a_row_missing_a_field_gets_its_default() -> None:
    step = sampled_steps(1)[0]
    layout = layout_of(step)
    scalars, blob = pack_step(step, layout)
    # An older row: without "entropy" (a newer field would be missing the same way).
    position = layout.scalars.index("entropy")
    values = json.loads(scalars)
    del values[position]
    older = StepLayout(tuple(n for n in layout.scalars if n != "entropy"), layout.arrays)
    again = unpack_step(json.dumps(values), blob, older, step.settings)
    assert again.entropy is None and again.token_id == step.token_id


def test_branches_form_a_tree_and_the_turn_follows_the_newest(store: ChatStore) -> None:
    chat = store.new_chat("t", MODEL)
    store.add_message(chat, "user", "hi")
    steps = sampled_steps(5)
    root = record(store, chat, steps)
    first = store.load_chat(chat).replies[0]
    other = sampled_steps(3, BASE.with_changes(seed=9))
    fork = Fork(first, 2, "".join(f"<{s.token_id}>" for s in steps[:2]))
    child = record(store, chat, other, fork)

    loaded = store.load_chat(chat)
    turn = loaded.messages[-1]
    assert [b.id for b in turn.branches] == [root, child]
    assert [b.branch for b in turn.branches] == [1, 2]
    assert [b.number for b in turn.branches] == [1, 1]
    reply = loaded.replies[0]
    assert reply.id == child and reply.parent_id == root and reply.fork_at == 2
    expected = tuple(s.token_id for s in steps[:2] + other)
    assert reply.token_ids == expected
    assert turn.content == reply.text == "".join(f"<{t}>" for t in expected)
    assert turn.branches[0].text == "".join(f"<{s.token_id}>" for s in steps)

    # Records: the parent's before the fork, the branch's own from it.
    records = store.load_steps(loaded, reply)
    assert sorted(records) == [0, 1, 2, 3, 4]
    assert [records[i].token_id for i in range(5)] == list(expected)
    assert records[0].settings == BASE and records[2].settings == other[0].settings

    store.follow_branch(chat, root)
    again = store.load_chat(chat)
    assert again.replies[0].id == root
    assert again.messages[-1].content == turn.branches[0].text
    with pytest.raises(StoreError, match="no branch 999"):
        store.follow_branch(chat, 999)


def test_a_branch_of_a_branch_reads_records_up_the_tree(store: ChatStore) -> None:
    chat = store.new_chat("t", MODEL)
    store.add_message(chat, "user", "hi")
    steps = sampled_steps(6)
    record(store, chat, steps)
    root = store.load_chat(chat).replies[0]
    b1 = sampled_steps(4, BASE.with_changes(seed=1))
    record(store, chat, b1, Fork(root, 3, "x"))
    middle = store.load_chat(chat).replies[0]
    b2 = sampled_steps(2, BASE.with_changes(seed=2))
    record(store, chat, b2, Fork(middle, 5, "y", follow=False))
    loaded = store.load_chat(chat)
    assert loaded.replies[0].id == middle.id  # not followed
    leaf = loaded.messages[-1].branches[2]
    assert leaf.parent_id == middle.id and leaf.text == "y" + "".join(f"<{s.token_id}>" for s in b2)
    records = store.load_steps(loaded, leaf)
    wanted = [s.token_id for s in steps[:3] + b1[:2] + b2]
    assert [records[i].token_id for i in sorted(records)] == wanted == list(leaf.token_ids)


def test_deleting_the_turn_removes_every_branch(store: ChatStore, tmp_path: Path) -> None:
    chat = store.new_chat("t", MODEL)
    store.add_message(chat, "user", "hi")
    record(store, chat, sampled_steps(3))
    record(store, chat, sampled_steps(2), Fork(store.load_chat(chat).replies[0], 1, ""))
    store.delete_message(store.load_chat(chat).messages[-1].id)
    conn = sqlite3.connect(tmp_path / "chats.sqlite3")
    counts = [
        conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("replies", "reply_tokens", "reply_steps", "settings_changes")
    ]
    conn.close()
    assert counts == [0, 0, 0, 0]


def test_a_branch_of_an_earlier_turn_starts_a_new_continuation(store: ChatStore) -> None:
    chat = store.new_chat("t")
    store.add_message(chat, "user", "q1")
    first = record(store, chat, sampled_steps(4))
    store.add_message(chat, "user", "q2")
    second = record(store, chat, sampled_steps(3))
    loaded = store.load_chat(chat)
    parent = loaded.messages[1].reply
    assert parent is not None and parent.id == first
    # A branch of reply 1: the chat follows it, and the turns after reply 1 stay
    # stored under the old branch.
    branch = record(store, chat, sampled_steps(2), Fork(parent, 2, "<x><y>"))
    shown = store.load_chat(chat)
    assert [m.content for m in shown.messages] == ["q1", shown.messages[1].content]
    assert shown.messages[1].reply is not None and shown.messages[1].reply.id == branch
    assert [r.number for r in shown.replies] == [1]
    # The conversation goes on after the new branch ...
    store.add_message(chat, "user", "q2 again")
    third = record(store, chat, sampled_steps(2))
    again = store.load_chat(chat)
    assert [m.content for m in again.messages][::2] == ["q1", "q2 again"]
    assert [r.id for r in again.replies] == [branch, third]
    # ... and following the old branch shows the old turns again.
    store.follow_branch(chat, first)
    old = store.load_chat(chat)
    assert [m.content for m in old.messages][::2] == ["q1", "q2"]
    assert [r.id for r in old.replies] == [first, second]
    assert store.list_chats()[0].message_count == 6  # every turn is kept


def test_a_stored_replys_steps_keep_what_each_unit_reported(store: ChatStore) -> None:
    """Mirostat's mu comes back from the reply_steps row's reports column; a mid-reply
    switch to a chain without it stores NULL there."""
    steps = sampled_steps(4, SamplerSettings(mirostat=2, seed=3))
    steps += sampled_steps(2)
    chat = store.new_chat("t", MODEL)
    store.add_message(chat, "user", "hi")
    reply_id = record(store, chat, steps)
    loaded = store.load_chat(chat)
    reply = next(r for r in loaded.replies if r.id == reply_id)
    again = store.load_steps(loaded, reply)
    assert [again[i].reports for i in range(6)] == [step.reports for step in steps]
    assert again[0].figure("mirostat", "mu") == 10.0  # 2 * tau
    conn = sqlite3.connect(store.path)
    nulls = conn.execute(
        "SELECT count(*) FROM reply_steps WHERE reply_id = ? AND reports IS NULL", (reply_id,)
    ).fetchone()
    conn.close()
    assert nulls == (2,)


def test_the_chat_list_counts_turns_and_branches_apart(store: ChatStore) -> None:
    """A turn regenerated twice is one reply with two more branches, not three replies."""
    from tui.history.screen import replies_cell

    chat = store.new_chat("t", MODEL)
    store.add_message(chat, "user", "hi")
    record(store, chat, sampled_steps(4))
    root = store.load_chat(chat).replies[0]
    record(store, chat, sampled_steps(2, BASE.with_changes(seed=1)), Fork(root, 2, "x"))
    record(store, chat, sampled_steps(2, BASE.with_changes(seed=2)), Fork(root, 1, "y"))
    (summary,) = store.list_chats()
    assert (summary.reply_count, summary.branch_count) == (1, 3)
    assert replies_cell(summary.reply_count, summary.branch_count) == "1 +2 branches"
    assert replies_cell(2, 3) == "2 +1 branch" and replies_cell(2, 2) == "2"
