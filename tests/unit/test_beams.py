"""Beam search on the fake model: greedy at width 1, exact log-probabilities, the
beams stored as branches, the memory left usable."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.beam_result import Beam, BeamSearchError, beam_record, token_texts
from backend.session.beams import beam_search
from backend.session.phrase_bans import PhraseBans
from backend.session.recorded_beams import BeamRecorder, save_beams
from backend.session.replay import ReplayError, decoding_of, replay
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import probabilities
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend

QUESTION = [ChatMessage("user", "tell me about the cat")]
CHAIN = DEFAULT_CHAT_SETTINGS.with_changes(repeat_penalty=1.3, repeat_last_n=8)


def greedy_reply(backend: FakeBackend, settings: SamplerSettings, max_tokens: int) -> FinishedEvent:
    events = backend.generate(QUESTION, LiveSettings(settings), max_tokens=max_tokens)
    return next(e for e in events if isinstance(e, FinishedEvent))


@pytest.mark.parametrize("min_reply_tokens", [0, 40])
def test_width_one_is_greedy(min_reply_tokens: int) -> None:
    greedy = greedy_reply(
        FakeBackend(min_reply_tokens=min_reply_tokens), CHAIN.with_changes(temperature=0.0), 30
    )
    search = beam_search(
        FakeBackend(min_reply_tokens=min_reply_tokens), QUESTION, CHAIN, width=1, max_tokens=30
    )
    assert search.beams[0].token_ids == greedy.token_ids
    assert search.beams[0].finish_reason == greedy.reason


@pytest.mark.parametrize("width", [2, 3, 4])
def test_each_beams_logprob_is_its_tokens_probabilities_recomputed_alone(width: int) -> None:
    backend = FakeBackend(min_reply_tokens=0)
    search = beam_search(backend, QUESTION, CHAIN, width=width, max_tokens=16)
    assert len(search.beams) == width
    assert len({b.token_ids for b in search.beams}) == width
    scores = [b.score for b in search.beams]
    assert scores == sorted(scores, reverse=True)
    for beam in search.beams:
        assert beam.logprob == sum(math.log(step.prob) for step in beam.steps)
        again = 0.0
        for index, token in enumerate(beam.token_ids):
            given = FakeBackend().step_input(QUESTION, beam.token_ids[:index], max_tokens=16)
            probs = probabilities(
                given.logits,
                CHAIN,
                given.history,
                vocabulary=backend.model,
                generated=index,
                end_of_generation=backend.model.eog_ids,
            )
            assert float(probs[token]) == beam.steps[index].prob
            again += math.log(float(probs[token]))
        assert again == pytest.approx(beam.logprob, abs=1e-12)
    eog = backend.model.eog_ids
    for pruned in search.pruned:
        assert pruned.reason == "pruned" and pruned.pruned_at == len(pruned.token_ids)
        length = len(pruned.token_ids)
        if pruned.token_ids and pruned.token_ids[-1] in eog:
            continue  # a finished hypothesis ranked out at the end
        # Its best next token made a beam worse than every one kept going then.
        given = FakeBackend().step_input(QUESTION, pruned.token_ids, max_tokens=16)
        probs = probabilities(
            given.logits,
            CHAIN,
            given.history,
            vocabulary=backend.model,
            generated=length,
            end_of_generation=eog,
        )
        probs[list(eog)] = 0.0
        best_next = pruned.logprob + math.log(float(probs.max()))
        for kept in search.beams:
            if len(kept.token_ids) > length and kept.token_ids[length] not in eog:
                prefix = sum(math.log(step.prob) for step in kept.steps[: length + 1])
                assert best_next <= prefix


def test_each_step_record_counts_its_own_beams_length() -> None:
    # min_tokens bans the end (made the likeliest token by a bias) until the beam has 6
    # tokens: each stored table must say so for its own beam, whatever the other beams
    # sampled before it in the step.
    settings = CHAIN.with_changes(min_tokens=6, logit_bias=((0, 8.0),))
    backend = FakeBackend(min_reply_tokens=0)
    search = beam_search(backend, QUESTION, settings, width=3, max_tokens=12)
    eog = set(backend.model.eog_ids)
    for beam in search.beams:
        for index, (token, step) in enumerate(zip(beam.token_ids, beam.steps, strict=True)):
            rows = [int(t) for t in step.table.token_ids]
            assert step.table.prob_after[rows.index(token)] == pytest.approx(step.prob, rel=1e-5)
            if index < 6:
                after = dict(zip(rows, step.table.prob_after, strict=True))
                assert eog <= after.keys() and all(after[t] == 0.0 for t in eog)


def test_the_length_penalty_ranks_finished_beams_by_logprob_over_length() -> None:
    search = beam_search(
        FakeBackend(min_reply_tokens=2), QUESTION, CHAIN, width=3, max_tokens=12, length_penalty=1.5
    )
    for beam in (*search.beams, *search.pruned):
        assert beam.score == pytest.approx(beam.logprob / len(beam.token_ids) ** 1.5)


def test_after_a_search_the_chat_generates_as_on_a_fresh_model() -> None:
    backend = FakeBackend(min_reply_tokens=0)
    search = beam_search(backend, QUESTION, CHAIN, width=3, max_tokens=10)
    assert backend.session.memory.tokens() == backend.fit_prompt(QUESTION, 10, False)[0]
    after = greedy_reply(backend, CHAIN.with_changes(seed=4), 20)
    fresh = greedy_reply(FakeBackend(min_reply_tokens=0), CHAIN.with_changes(seed=4), 20)
    assert after.token_ids == fresh.token_ids
    assert search.stats.discarded_tokens > 0


@pytest.mark.parametrize(
    ("width", "settings", "message"),
    [
        (5, CHAIN, "holds 1 to 4 sequences"),
        (0, CHAIN, "invalid width"),
        (2, SamplerSettings(temperature=0.0), "temperature 0"),
        (2, SamplerSettings(mirostat=2), "mirostat"),
    ],
)
def test_searches_that_cannot_run_are_refused(
    width: int, settings: SamplerSettings, message: str
) -> None:
    with pytest.raises(BeamSearchError, match=message):
        beam_search(FakeBackend(), QUESTION, settings, width=width, max_tokens=8)


def test_the_beams_are_stored_as_branches_of_the_best(tmp_path: Path) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF fake")
    backend = FakeBackend(min_reply_tokens=0)
    search = beam_search(backend, QUESTION, CHAIN, width=3, max_tokens=14)
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        ids = save_beams(recorder, backend.model, QUESTION, CHAIN, 14, "chat", search)
        assert recorder.error is None and recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        turn = chat.messages[-1]
        assert turn.reply is not None and turn.reply.id == ids[0]
        branches = {b.id: b for b in turn.branches}
        assert set(branches) == set(ids)
        for beam, reply_id in zip(search.beams, ids, strict=True):
            assert reply_id is not None
            stored = branches[reply_id]
            assert stored.token_ids == beam.token_ids
            steps = store.load_steps(chat, stored)
            logprob = sum(math.log(steps[i].prob) for i in range(len(stored.token_ids)))
            assert logprob == beam.logprob  # recomputed from the stored steps
            if reply_id != ids[0]:
                assert stored.parent_id == ids[0]
                at = stored.fork_at or 0
                assert stored.token_ids[:at] == search.beams[0].token_ids[:at]
                assert stored.token_ids[at] != search.beams[0].token_ids[at]
        assert chat.messages[-1].content == branches[ids[0]].text
        # Its tokens were ranked, not drawn: replay says so; a step is rebuilt alone.
        best = branches[ids[0]]
        assert beam_record(best.decoding) == {"beams": 3, "length_penalty": 0.0, "rank": 1}
        assert decoding_of(best) is None
        with pytest.raises(ReplayError, match="beam 1 of a beam search of 3"):
            replay(FakeBackend(min_reply_tokens=0), chat, best)


@pytest.mark.parametrize("width", [1, 3])
def test_no_beam_holds_a_banned_phrase(width: int) -> None:
    backend = FakeBackend(min_reply_tokens=0)
    plain = beam_search(backend, QUESTION, CHAIN, width=width, max_tokens=24)
    texts = ["".join(token_texts(backend.model, b.token_ids)) for b in plain.beams]
    phrase = texts[0][texts[0].index(" ", 3) : texts[0].index(" ", 3) + 6]  # liked by the search
    bans = PhraseBans((phrase, " the"))
    search = beam_search(
        FakeBackend(min_reply_tokens=0), QUESTION, CHAIN, width=width, max_tokens=24, bans=bans
    )
    assert search.banned > 0 and plain.banned == 0
    if width == 1:  # its one beam ran into a dead end (every kept token banned)
        assert search.reason == "banned" and search.beams[0].finish_reason == "banned"
    for beam in (*search.beams, *search.pruned):
        text = "".join(token_texts(backend.model, beam.token_ids))
        assert phrase not in text and " the" not in text
        assert beam.logprob == sum(math.log(step.prob) for step in beam.steps)


def test_a_search_is_saved_as_it_runs_the_reply_following_the_best_live_beam(
    tmp_path: Path,
) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF fake")
    path = tmp_path / "chats.sqlite3"
    backend = FakeBackend(min_reply_tokens=0)
    seen: list[tuple[tuple[int, ...], tuple[int, ...], bool]] = []
    with ChatStore(path) as store:
        recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        saver = BeamRecorder(recorder, backend.model)
        assert saver.begin(QUESTION, CHAIN, 14, "chat", 3, 0.0)
        chat_id = recorder.chat_id
        assert chat_id is not None

        def step(number: int, live: Sequence[Beam]) -> None:
            saver.step(number, live)
            if not live:
                return
            with ChatStore(path) as other:  # committed: another connection reads it
                reply = other.load_chat(chat_id).replies[-1]
                seen.append((reply.token_ids, live[0].token_ids, reply.interrupted))

        search = beam_search(backend, QUESTION, CHAIN, width=3, max_tokens=14, on_step=step)
        at_end_recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        expected = save_beams(
            at_end_recorder,
            backend.model,
            QUESTION,
            CHAIN,
            14,
            "chat",
            search,
        )
        ids = saver.finish(search)
        assert all(stored == best and interrupted for stored, best, interrupted in seen)
        # The best beam parted from the one before at least once: its tokens were taken back.
        assert any(now[1][: len(then[1])] != then[1] for then, now in itertools.pairwise(seen))
        saved = store.load_chat(chat_id)
        assert at_end_recorder.chat_id is not None
        at_once = store.load_chat(at_end_recorder.chat_id)
        assert [m.content for m in saved.messages] == [m.content for m in at_once.messages]
        as_run = {b.id: b for b in saved.messages[-1].branches}
        at_end = {b.id: b for b in at_once.messages[-1].branches}
        for run_id, end_id in zip(ids, expected, strict=True):
            assert run_id is not None and end_id is not None
            mine, theirs = as_run[run_id], at_end[end_id]
            assert (mine.token_ids, mine.text, mine.fork_at) == (
                theirs.token_ids,
                theirs.text,
                theirs.fork_at,
            )
            assert store.load_steps(saved, mine).keys() == store.load_steps(at_once, theirs).keys()
