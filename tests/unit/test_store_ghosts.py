"""Ghost branches in the store: each attempt a phrase ban rejected, kept where the
reply went back (on the fake backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, GenerationEvent, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.phrase_bans import PhraseBans
from backend.session.replay import replay
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.records import ReplyRecord
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.records import Step
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend

QUESTION = [ChatMessage("user", "tell me about the cat")]


def generate_saved(
    store: ChatStore, model: Path, settings: SamplerSettings, bans: PhraseBans
) -> tuple[list[GenerationEvent], ChatRecorder]:
    recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
    assert recorder.begin_reply(QUESTION, settings, 40)
    backend = FakeBackend(min_reply_tokens=40)
    events = backend.generate(QUESTION, LiveSettings(settings), max_tokens=40, bans=bans)
    seen = list(recorded(events, recorder))
    assert recorder.error is None
    return seen, recorder


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF fake")
    return path


@pytest.mark.parametrize("seed", [1, 5, 7])
def test_every_rejected_attempt_is_a_ghost_branch_where_the_reply_went_back(
    tmp_path: Path, model: Path, seed: int
) -> None:
    settings = DEFAULT_CHAT_SETTINGS.with_changes(seed=seed)
    # Phrases of one to three tokens: a later rewind can go back past an earlier one.
    bans = PhraseBans((r" \w+ \w+ \w+s\b", "  ", r" (cat|dog) \w+"), regex=True)
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        events, recorder = generate_saved(store, model, settings, bans)
        rewinds = [e for e in events if isinstance(e, RewindEvent)]
        assert len(rewinds) >= 2  # the test means something
        finished = events[-1]
        assert isinstance(finished, FinishedEvent)
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        reply = chat.replies[0]
        branches = {b.id: b for b in chat.messages[-1].branches}
        ghosts = [branches[i] for i in recorder.ghost_ids]
        assert not reply.is_ghost and all(g.is_ghost for g in ghosts)
        assert len(branches) == 1 + len(rewinds)
        assert reply.token_ids == finished.token_ids and reply.text == finished.text
        assert reply.stats is not None
        assert reply.stats.discarded_tokens == sum(len(r.token_ids) for r in rewinds)
        for ghost, rewind in zip(ghosts, rewinds, strict=True):
            assert ghost.fork_at == rewind.index
            assert ghost.token_ids[rewind.index :] == rewind.token_ids
            assert rewind.matched in ghost.text
            parent = branches[ghost.parent_id or 0]
            assert ghost.token_ids[: rewind.index] == parent.token_ids[: rewind.index]
            assert ghost.text.startswith(parent.text[: len(ghost.text) - len(rewind.text)])
        on_ghosts = [g for g in ghosts if g.parent_id in recorder.ghost_ids]
        if seed == 5:  # it went back to 8 after a ghost at 10: that ghost is the new one's
            assert [(g.fork_at, branches[g.parent_id or 0].fork_at) for g in on_ghosts] == [(10, 8)]
        # Each token's record and settings come back along its branch.
        steps_of = _steps_by_attempt(events)
        for branch in (reply, *ghosts):
            stored = store.load_steps(chat, branch)
            assert sorted(stored) == list(range(len(branch.token_ids)))
            for index, step in stored.items():
                assert step.token_id == branch.token_ids[index]
                if index >= (branch.fork_at or 0):  # before, the parent's
                    assert branch.settings_at(index) == step.settings
                assert step in steps_of[index]
        # The reply replays from its record alone: the bans are its steps' settings.
        assert replay(FakeBackend(min_reply_tokens=40), chat, reply).identical


def _steps_by_attempt(events: list[GenerationEvent]) -> dict[int, list[Step]]:
    steps: dict[int, list[Step]] = {}
    for event in events:
        if isinstance(event, TokenEvent):
            steps.setdefault(event.index, []).append(event.step)
    return steps


def test_a_ghost_at_the_first_token_keeps_the_replys_start_settings(
    tmp_path: Path, model: Path
) -> None:
    greedy = SamplerSettings(temperature=0.0)
    first = FakeBackend(min_reply_tokens=40).generate(QUESTION, LiveSettings(greedy), max_tokens=3)
    text = next(e for e in first if isinstance(e, FinishedEvent)).text
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        events, recorder = generate_saved(store, model, greedy, PhraseBans((text[:3],)))
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        reply: ReplyRecord = chat.replies[0]
        assert next(e.index for e in events if isinstance(e, RewindEvent)) == 0
        assert reply.settings_changes[0].from_index == 0
        assert reply.settings_at(0).logit_bias  # its token 0 was sampled with the ban
        assert reply.settings_at(1) == greedy
        assert replay(FakeBackend(min_reply_tokens=40), chat, reply).identical


def test_a_reopened_chat_shows_each_ghost_where_it_was_rejected(
    tmp_path: Path, model: Path
) -> None:
    from tui.chat.branches import divergence, ghost_forks
    from tui.chat.stored import stored_replies
    from tui.widgets.token_text import TokenPieces

    settings = DEFAULT_CHAT_SETTINGS.with_changes(seed=5)
    bans = PhraseBans((r" \w+ \w+ \w+s\b", "  ", r" (cat|dog) \w+"), regex=True)
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        events, recorder = generate_saved(store, model, settings, bans)
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        backend = FakeBackend()
        pieces = TokenPieces(backend.model.shown_piece)
        pieces.token_bytes = backend.model.token_bytes
        reply = stored_replies(chat, store, pieces)[chat.messages[-1].id]
        ghosts = [b for b in reply.tree if b.is_ghost]
        rewinds = [e for e in events if isinstance(e, RewindEvent)]
        assert len(ghosts) == len(rewinds)
        # Every ghost hangs off the branch whose tokens it shares: the reply, or the
        # later ghost that took its tokens along (the one at 10 went with the one at 8).
        for ghost in ghosts:
            assert ghost.parent is not None
            assert divergence(ghost, ghost.parent) == ghost.fork_at
        assert any(g.parent is not None and g.parent.is_ghost for g in ghosts)
        # The reply went back where its own ghosts fork, not where theirs do.
        assert ghost_forks(reply) == sorted({r.index for r in rewinds} - {10})
