"""Compare: columns under several settings, presets, first divergence."""

from __future__ import annotations

import pytest

from backend.chat.compare import ColumnEvent, first_divergence
from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.compare import compare
from backend.session.llama_backend import LlamaBackend
from sampling.settings.record import SamplerSettings
from tests.helpers import last_chunk

QUESTION = [ChatMessage("user", "Write one sentence about cats.")]


SETTINGS = [
    SamplerSettings(temperature=0.0),
    SamplerSettings(temperature=1.5, seed=5),
    SamplerSettings(temperature=0.8, top_k=40, seed=5),
]


def test_compare_in_lockstep_streams_the_columns_at_once(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    events = list(compare(llama_backend, QUESTION, SETTINGS, max_tokens=10))
    tokens = [e for e in events if isinstance(e.event, TokenEvent)]
    # One step samples a token of every live column: the columns interleave.
    assert [e.column for e in tokens[:3]] == [0, 1, 2]
    finished = {e.column: e.event for e in events if isinstance(e.event, FinishedEvent)}
    assert sorted(finished) == [0, 1, 2]
    prompt = len(llama_backend.tokenize_messages(QUESTION))
    for column, final in finished.items():
        assert isinstance(final, FinishedEvent) and final.reason != "error"
        assert final.token_ids == tuple(e.event.step.token_id for e in tokens if e.column == column)
        # The prompt was prefilled once, for every column.
        assert final.stats.prompt_tokens == final.stats.prefilled_tokens == prompt
        assert final.decoding is not None and final.decoding.number == column
        assert final.decoding.settings == tuple(SETTINGS)
    # Greedy in lockstep is greedy: its first token is generate's.
    alone = list(llama_backend.generate(QUESTION, LiveSettings(SETTINGS[0]), max_tokens=1))[-1]
    assert isinstance(alone, FinishedEvent) and alone.decoding is None
    first = finished[0]
    assert isinstance(first, FinishedEvent) and first.token_ids[0] == alone.token_ids[0]


def test_compare_in_turn_generates_each_column_like_generate_would(
    llama_backend: LlamaBackend,
) -> None:
    llama_backend.reset()
    settings = SETTINGS
    events = list(compare(llama_backend, QUESTION, settings, max_tokens=10, sequential=True))
    assert all(isinstance(e, ColumnEvent) for e in events)
    assert [e.column for e in events] == sorted(e.column for e in events)
    finished = [e for e in events if isinstance(e.event, FinishedEvent)]
    assert [f.column for f in finished] == [0, 1, 2]
    for column in range(3):
        tokens = [
            e.event.step.token_id
            for e in events
            if e.column == column and isinstance(e.event, TokenEvent)
        ]
        final = finished[column].event
        assert isinstance(final, FinishedEvent)
        assert tuple(tokens) == final.token_ids
        # Later columns reuse the cached prompt and rerun its last chunk.
        if column > 0:
            first = finished[0].event
            assert isinstance(first, FinishedEvent)
            n_batch = llama_backend.info.n_batch
            assert final.stats.prefilled_tokens == last_chunk(first.stats.prefilled_tokens, n_batch)
        # The same settings through generate give the same reply.
        alone = list(
            llama_backend.generate(QUESTION, LiveSettings(settings[column]), max_tokens=10)
        )[-1]
        assert isinstance(alone, FinishedEvent)
        assert alone.token_ids == final.token_ids
    # A greedy column and a hot column of a 10-token reply diverge somewhere.
    a = finished[0].event
    b = finished[1].event
    assert isinstance(a, FinishedEvent) and isinstance(b, FinishedEvent)
    assert a.token_ids != b.token_ids
    pairs = enumerate(zip(a.token_ids, b.token_ids, strict=False))
    expected = next((i for i, (x, y) in pairs if x != y), min(len(a.token_ids), len(b.token_ids)))
    assert first_divergence(a.token_ids, b.token_ids) == expected


@pytest.mark.parametrize("sequential", [False, True], ids=["lockstep", "in-turn"])
def test_cancel_stops_the_comparison(llama_backend: LlamaBackend, sequential: bool) -> None:
    import threading

    cancel = threading.Event()
    seen = []
    for event in compare(
        llama_backend,
        QUESTION,
        [SamplerSettings(temperature=0.0)] * 3,
        max_tokens=10,
        cancel=cancel,
        sequential=sequential,
    ):
        seen.append(event)
        if isinstance(event.event, TokenEvent):
            cancel.set()
    finished = [e for e in seen if isinstance(e.event, FinishedEvent)]
    # In lockstep every column stops at the step; in turn, the later ones never start.
    assert [f.column for f in finished] == ([0] if sequential else [0, 1, 2])
    assert all(isinstance(f.event, FinishedEvent) for f in finished)
    assert all(f.event.reason == "cancelled" for f in finished)  # type: ignore[union-attr]
