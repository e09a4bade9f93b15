"""The one generation loop on the fake model: lockstep, rewind, the end token."""

from __future__ import annotations

import numpy as np
import pytest

from backend.chat.events import FinishedEvent, GenerationEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.compare import compare
from backend.session.loop import Generation
from backend.session.run import RewindError
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tests.fake_backend import EOS_ID, FakeBackend

QUESTION = [ChatMessage("user", "tell me about the cat")]
SEEDED = DEFAULT_CHAT_SETTINGS.with_changes(seed=7, repeat_penalty=1.2, repeat_last_n=16)
MIROSTAT = SamplerSettings(mirostat=2, mirostat_tau=3.0, seed=11)
ADAPTIVE = SamplerSettings(
    min_p=0.05, adaptive_target=0.3, min_tokens=25, seed=4, samplers=("min_p", "adaptive_p")
)


def finished_of(events: list[tuple[int, GenerationEvent]], column: int) -> FinishedEvent:
    ends = [e for c, e in events if c == column and isinstance(e, FinishedEvent)]
    assert len(ends) == 1
    return ends[0]


def test_a_reply_ends_with_the_end_token_as_a_real_model_does() -> None:
    backend = FakeBackend(min_reply_tokens=2)
    events = list(backend.generate(QUESTION, LiveSettings(SEEDED), max_tokens=200))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "eos"
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert finished.token_ids[-1] == EOS_ID == tokens[-1].step.token_id
    assert tokens[-1].text == "" and "</s>" not in finished.text


@pytest.mark.parametrize(
    "settings", [SEEDED, MIROSTAT, ADAPTIVE], ids=["penalties", "mirostat", "adaptive-p"]
)
def test_rewind_then_decode_again_gives_what_never_going_there_gives(
    settings: SamplerSettings,
) -> None:
    straight_logits: dict[int, np.ndarray] = {}
    live = LiveSettings(settings)
    live.step_sink = lambda i, logits, _: straight_logits.setdefault(i, np.array(logits))
    straight = list(FakeBackend().generate(QUESTION, live, max_tokens=30))[-1]
    assert isinstance(straight, FinishedEvent)

    backend = FakeBackend()
    seen: list[tuple[int, np.ndarray]] = []
    live = LiveSettings(settings)
    live.step_sink = lambda i, logits, _: seen.append((i, np.array(logits)))
    generation = backend.generate_many(QUESTION, [live], max_tokens=30, rewindable=True)
    events: list[tuple[int, GenerationEvent]] = []
    rewound = False
    for column, event in generation:
        events.append((column, event))
        if isinstance(event, TokenEvent) and event.index == 20 and not rewound:
            generation.rewind(0, 6)
            rewound = True
    again = finished_of(events, 0)
    assert again.token_ids == straight.token_ids and again.text == straight.text
    indices = [i for i, _ in seen]
    assert indices == [*range(21), *range(15, 30)]
    for index, logits in seen:
        np.testing.assert_array_equal(logits, straight_logits[index])
    token_indices = [e.index for _, e in events if isinstance(e, TokenEvent)]
    assert token_indices == indices


def test_rewinding_to_the_prompt_prefills_its_last_chunk_again() -> None:
    backend = FakeBackend(prefill_chunk=4)
    straight = list(backend.generate(QUESTION, LiveSettings(SEEDED), max_tokens=8))[-1]
    backend.reset()
    generation = backend.generate_many(
        QUESTION, [LiveSettings(SEEDED)], max_tokens=8, rewindable=True
    )
    events = []
    for column, event in generation:
        events.append((column, event))
        if isinstance(event, TokenEvent) and event.index == 3 and len(events) < 40:
            generation.rewind(0, 4)
    assert finished_of(events, 0).token_ids == straight.token_ids


def test_a_rewind_past_what_was_sampled_is_refused() -> None:
    generation = FakeBackend().generate_many(
        QUESTION, [LiveSettings(SEEDED)], max_tokens=8, rewindable=True
    )
    for _, event in generation:
        if isinstance(event, TokenEvent) and event.index == 1:
            with pytest.raises(RewindError, match="sampled 2"):
                generation.rewind(0, 3)


def test_columns_in_lockstep_equal_columns_in_turn() -> None:
    settings = [
        SEEDED,
        SEEDED.with_changes(temperature=1.4),
        MIROSTAT,
        SamplerSettings(temperature=0),
    ]
    lockstep = list(compare(FakeBackend(), QUESTION, settings, max_tokens=40))
    in_turn = list(compare(FakeBackend(), QUESTION, settings, max_tokens=40, sequential=True))
    pairs = [(item.column, item.event) for item in lockstep]
    # Lockstep: the columns stream at once (column 1's first token before column 0's last).
    first_of_1 = next(i for i, (c, e) in enumerate(pairs) if c == 1 and isinstance(e, TokenEvent))
    last_of_0 = max(i for i, (c, e) in enumerate(pairs) if c == 0 and isinstance(e, TokenEvent))
    assert first_of_1 < last_of_0
    for column in range(4):
        a = finished_of(pairs, column)
        b = finished_of([(item.column, item.event) for item in in_turn], column)
        assert (a.token_ids, a.text, a.reason) == (b.token_ids, b.text, b.reason)


def test_a_lockstep_column_rewound_alone_ends_as_it_would_have() -> None:
    settings = [SEEDED, SEEDED.with_changes(seed=8)]
    straight = list(compare(FakeBackend(), QUESTION, settings, max_tokens=30))
    generation: Generation = FakeBackend().generate_many(
        QUESTION, [LiveSettings(s) for s in settings], max_tokens=30, rewindable=True
    )
    events = []
    done = False
    for column, event in generation:
        events.append((column, event))
        if column == 1 and isinstance(event, TokenEvent) and event.index == 10 and not done:
            generation.rewind(1, 7)
            done = True
    pairs = [(item.column, item.event) for item in straight]
    for column in range(2):
        assert finished_of(events, column).token_ids == finished_of(pairs, column).token_ids


def test_the_other_sequences_leave_the_memory_after_a_lockstep_run() -> None:
    backend = FakeBackend()
    settings = [SEEDED, SEEDED.with_changes(seed=9)]
    items = list(compare(backend, QUESTION, settings, max_tokens=6))
    first = finished_of([(i.column, i.event) for i in items], 0)
    assert backend.session.memory.tokens() == backend.tokenize_messages(QUESTION) + list(
        first.token_ids[:-1]
    )
    assert backend.session.memory.cells_used == backend.context_used


def test_a_generation_not_started_rewindable_refuses_to_rewind() -> None:
    generation = FakeBackend().generate_many(QUESTION, [LiveSettings(SEEDED)], max_tokens=4)
    for _, event in generation:
        if isinstance(event, TokenEvent) and event.index == 2:
            with pytest.raises(RewindError, match="rewindable"):
                generation.rewind(0, 1)


def test_a_lockstep_run_left_halfway_is_cleared_by_the_next_generation() -> None:
    backend = FakeBackend()
    lives = [LiveSettings(SEEDED), LiveSettings(SEEDED.with_changes(seed=2))]
    events = iter(backend.generate_many(QUESTION, lives, max_tokens=20))
    for _, event in events:
        if isinstance(event, TokenEvent) and event.index == 5:
            break  # the consumer walks away: sequence 1 is still held
    assert backend.session.memory.cells_used > backend.context_used
    finished = list(backend.generate(QUESTION, LiveSettings(SEEDED), max_tokens=3))[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "max_tokens"
    assert backend.session.memory.cells_used == backend.context_used
