"""The one loop on llama.cpp: rewind, sequences in lockstep, and their exact replay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import Decoding, FinishedEvent, GenerationEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.context import Layout
from backend.session.compare import compare
from backend.session.llama_backend import LlamaBackend
from backend.session.model import BatchEntry
from backend.session.replay import replay
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings
from tests.tiny_models import spm_vocab, write_tiny_llama

QUESTION = [ChatMessage("user", "Write a short story about a lighthouse keeper.")]
SEEDED = DEFAULT_CHAT_SETTINGS.with_changes(seed=5, repeat_penalty=1.15, repeat_last_n=32)
MIROSTAT = SamplerSettings(mirostat=2, mirostat_tau=4.0, seed=3)
COLUMNS = [
    SamplerSettings(temperature=0.0),
    SEEDED,
    SEEDED.with_changes(temperature=1.3, seed=9),
    MIROSTAT,
]


@pytest.fixture
def backend(llama_backend: LlamaBackend) -> Iterator[LlamaBackend]:
    llama_backend.reset()
    yield llama_backend
    llama_backend.reset()


@pytest.mark.parametrize("settings", [SEEDED, MIROSTAT], ids=["penalties", "mirostat"])
def test_rewind_then_decode_again_gives_the_same_logits_and_tokens(
    backend: LlamaBackend, settings: SamplerSettings
) -> None:
    straight: dict[int, np.ndarray] = {}
    live = LiveSettings(settings)
    live.step_sink = lambda i, logits, _: straight.setdefault(i, np.array(logits))
    first = list(backend.generate(QUESTION, live, max_tokens=24))[-1]
    assert isinstance(first, FinishedEvent) and first.reason == "max_tokens"

    backend.reset()
    seen: list[tuple[int, np.ndarray]] = []
    live = LiveSettings(settings)
    live.step_sink = lambda i, logits, _: seen.append((i, np.array(logits)))
    generation = backend.generate_many(QUESTION, [live], max_tokens=24, rewindable=True)
    finished: FinishedEvent | None = None
    rewound = False
    for _, event in generation:
        if isinstance(event, TokenEvent) and event.index == 16 and not rewound:
            generation.rewind(0, 7)  # 17 tokens less 7: token 10 is sampled again
            rewound = True
        elif isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None and finished.token_ids == first.token_ids
    assert finished.text == first.text
    assert [i for i, _ in seen] == [*range(17), *range(10, 24)]
    for index, logits in seen:
        np.testing.assert_array_equal(logits, straight[index])
    # The memory holds what a straight run leaves: prompt and every token but the last.
    prompt = backend.tokenize_messages(QUESTION)
    assert backend.session.memory.tokens() == prompt + list(first.token_ids[:-1])


def test_rewinding_to_the_prompt_computes_its_last_chunk_again(backend: LlamaBackend) -> None:
    straight = list(backend.generate(QUESTION, LiveSettings(SEEDED), max_tokens=6))[-1]
    backend.reset()
    generation = backend.generate_many(
        QUESTION, [LiveSettings(SEEDED)], max_tokens=6, rewindable=True
    )
    events: list[GenerationEvent] = []
    for _, event in generation:
        events.append(event)
        if isinstance(event, TokenEvent) and event.index == 2 and len(events) < 9:
            generation.rewind(0, 3)  # every sampled token: the prompt's last chunk again
    assert sum(isinstance(e, TokenEvent) for e in events) == 3 + 6
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and isinstance(straight, FinishedEvent)
    assert finished.token_ids == straight.token_ids


def lockstep_and_alone(
    runtime: object, tokens: list[int], steps: int, layout: Layout | None = None
) -> np.ndarray:
    """Four sequences from one prompt, greedy, decoded in one batch a step in a lockstep
    context laid out as `layout` (row 0 of the result), then each sequence decoded
    alone in the chat's context, taking the same tokens (row 1)."""
    from backend.llama.runtime import LlamaRuntime

    assert isinstance(runtime, LlamaRuntime)
    runtime.clear()
    runtime.reserve(4, len(tokens) + steps, layout)
    runtime.decode([BatchEntry(t, i, 0) for i, t in enumerate(tokens)])
    for seq in range(1, 4):
        runtime.seq_cp(0, seq, 0, -1)
    first = runtime.logits(-1)
    current = [int(t) for t in np.argsort(-first, kind="stable")[:4]]
    fed: list[list[int]] = []
    together = []
    for step in range(steps):
        pos = len(tokens) + step
        fed.append(current)
        runtime.decode([BatchEntry(current[s], pos, s) for s in range(4)])
        logits = [runtime.logits(s).copy() for s in range(4)]
        together.append(logits)
        current = [int(np.argmax(row)) for row in logits]
    runtime.clear()
    runtime.reserve(1, 0)
    alone: list[list[np.ndarray]] = [[] for _ in range(steps)]
    for s in range(4):
        runtime.clear()
        runtime.decode([BatchEntry(t, i, 0) for i, t in enumerate(tokens)])
        for step in range(steps):
            runtime.decode([BatchEntry(fed[step][s], len(tokens) + step, 0)])
            alone[step].append(runtime.logits(-1).copy())
    runtime.clear()
    return np.array([together, alone])


def test_a_sequence_beside_others_gets_its_logits_alone_with_its_own_kv_stream(
    backend: LlamaBackend, tmp_path: Path
) -> None:
    """Why lockstep contexts give each sequence its own KV stream: on SmolLM2 Q4_1 the
    logits of four sequences in one batch a step equal, bit for bit, each decoded
    alone, where one unified stream for all (how lockstep decoded before) moves them by
    tenths of a logit after a few steps. A tiny F32 model differs in the last bits
    either way (llama.cpp's F32 matmul sums a batch in another order than one row):
    its load's self-check says so, and its lockstep replies replay in lockstep."""
    prompt = backend.runtime.tokenize("The quick brown fox jumps over the lazy dog.", special=False)
    unified = Layout(streams=False)
    smol = lockstep_and_alone(backend.runtime, prompt, 6)
    smol_unified = lockstep_and_alone(backend.runtime, prompt, 6, unified)
    backend.reset()
    tiny_path = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(4096))
    tiny = LlamaBackend.load(tiny_path, n_ctx=256, n_batch=64, n_threads=1)
    try:
        words = tiny.runtime.tokenize("hello world this is a test", special=False)
        small = lockstep_and_alone(tiny.runtime, words, 6)
        small_unified = lockstep_and_alone(tiny.runtime, words, 6, unified)
        tiny_invariant = tiny.runtime.batch_invariant
    finally:
        tiny.close()
    found = (("SmolLM2", smol_unified), ("tiny", small_unified), ("tiny, streams", small))
    for name, rows in found:
        differences = [float(np.abs(rows[0, i] - rows[1, i]).max()) for i in range(6)]
        print(name, "lockstep vs alone, max logit difference per step:", differences)
    assert np.array_equal(smol[0], smol[1])
    assert np.abs(smol_unified[0] - smol_unified[1]).max() > 0
    assert backend.runtime.batch_invariant is True
    assert np.abs(small[0] - small[1]).max() > 0
    assert tiny_invariant is False


def columns_replayed(
    backend: LlamaBackend, store: ChatStore, model_path: Path, raw: bool, alone: bool
) -> list[tuple[bool, bool | None]]:
    """Compare's four columns in lockstep, each stored as a reply with its decoding
    record, then replayed: as recorded (in lockstep again) and, with `alone`, as if
    decoded alone (shown, not asserted: whether the lockstep record mattered).
    Returns (identical?, identical alone? or None) per column."""
    backend.reset()
    messages = [ChatMessage("user", "Once upon a time, in a small village,")] if raw else QUESTION
    ends: dict[int, FinishedEvent] = {}
    tokens: dict[int, list[TokenEvent]] = {c: [] for c in range(len(COLUMNS))}
    for item in compare(backend, messages, COLUMNS, max_tokens=40, raw=raw):
        if isinstance(item.event, TokenEvent):
            tokens[item.column].append(item.event)
        elif isinstance(item.event, FinishedEvent):
            ends[item.column] = item.event
    model = store.model_ref(model_path)
    results = []
    for column, settings in enumerate(COLUMNS):
        finished = ends[column]
        assert finished.decoding == Decoding(column, tuple(COLUMNS))
        assert Decoding.from_json(finished.decoding.to_json()) == finished.decoding
        chat = store.new_chat(f"column {column}", model)
        store.add_message(chat, "user", messages[0].content)
        writer = store.begin_reply(
            chat,
            model,
            settings,
            max_tokens=40,
            n_ctx=backend.info.n_ctx,
            n_batch=backend.info.n_batch,
            mode="completion" if raw else "chat",
            decoding=finished.decoding.to_json(),
        )
        for event in tokens[column]:
            writer.append(event)
        writer.finish_event(finished)
        record = store.load_chat(chat)
        reply = record.replies[-1]
        assert reply.decoding is not None
        again = replay(backend, record, reply)
        single = replay(backend, record, replace(reply, decoding=None)) if alone else None
        results.append((again.identical, None if single is None else single.identical))
    return results


def test_every_compare_column_replays_token_identical_in_lockstep(
    backend: LlamaBackend, store: ChatStore, default_model_path: Path
) -> None:
    results = columns_replayed(backend, store, default_model_path, raw=False, alone=False)
    print("SmolLM2 (identical in lockstep, not replayed alone):", results)
    assert all(identical for identical, _ in results)


def test_lockstep_columns_replay_on_a_model_whose_batched_logits_differ(
    store: ChatStore, tmp_path: Path
) -> None:
    path = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(4096), seed=3)
    tiny = LlamaBackend.load(path, n_ctx=512, n_batch=64, n_threads=1)
    try:
        results = columns_replayed(tiny, store, path, raw=True, alone=True)
    finally:
        tiny.close()
    print("tiny (identical in lockstep, identical alone):", results)
    assert all(identical for identical, _ in results)


def test_a_lockstep_step_is_rebuilt_in_lockstep_for_what_if(backend: LlamaBackend) -> None:
    """What-if on a compare column: rebuilt beside its siblings, the step under its own
    settings and its own uniform draws the stored token at the stored probability."""
    tokens: list[TokenEvent] = []
    decoding: Decoding | None = None
    for item in compare(backend, QUESTION, COLUMNS, max_tokens=30):
        if item.column == 2 and isinstance(item.event, TokenEvent):
            tokens.append(item.event)
        elif item.column == 2 and isinstance(item.event, FinishedEvent):
            decoding = item.event.decoding
    assert decoding is not None
    ids = [t.step.token_id for t in tokens]
    for index in (5, 17, 29):
        backend.reset()
        given = backend.step_input(QUESTION, ids[:index], max_tokens=30, decoding=decoding)
        stored = tokens[index].step
        again = Sampler(COLUMNS[2], vocab_size=backend.info.n_vocab).sample(
            given.logits, given.history, uniform=stored.draw
        )
        assert (again.token_id, again.prob) == (stored.token_id, stored.prob)
