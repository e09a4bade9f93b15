"""Compare: columns under several settings, presets, first divergence."""

from __future__ import annotations

from backend.chat.compare import ColumnEvent, first_divergence
from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.session.compare import compare
from backend.session.llama_backend import LlamaBackend
from sampling.settings import SamplerSettings
from tests.helpers import last_chunk

QUESTION = [ChatMessage("user", "Write one sentence about cats.")]


def test_compare_generates_each_column_like_generate_would(llama_backend: LlamaBackend) -> None:
    llama_backend.reset()
    settings = [
        SamplerSettings(temperature=0.0),
        SamplerSettings(temperature=1.5, seed=5),
        SamplerSettings(temperature=0.8, top_k=40, seed=5),
    ]
    events = list(compare(llama_backend, QUESTION, settings, max_tokens=10))
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


def test_cancel_stops_the_comparison(llama_backend: LlamaBackend) -> None:
    import threading

    cancel = threading.Event()
    seen = []
    for event in compare(
        llama_backend,
        QUESTION,
        [SamplerSettings(temperature=0.0)] * 3,
        max_tokens=10,
        cancel=cancel,
    ):
        seen.append(event)
        if isinstance(event.event, TokenEvent):
            cancel.set()
    finished = [e for e in seen if isinstance(e.event, FinishedEvent)]
    assert len(finished) == 1 and finished[0].column == 0
    assert isinstance(finished[0].event, FinishedEvent) and finished[0].event.reason == "cancelled"
