"""The llama.cpp chat backend on the real default model."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import backend.session.loop as loop_module
from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.protocol import ChatBackend, ChatMessage, LiveSettings
from backend.session.llama_backend import LlamaBackend
from backend.session.model import BatchEntry
from backend.session.run import Steer
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler
from sampling.samplers.penalties import penalty_window
from sampling.settings.record import SamplerSettings
from tests.helpers import last_chunk

GREEDY = SamplerSettings(temperature=0.0)
QUESTION = [ChatMessage("user", "Name three colours.")]


def run(
    backend: LlamaBackend,
    messages: Sequence[ChatMessage],
    settings: SamplerSettings | LiveSettings = GREEDY,
    **kwargs: Any,
) -> tuple[list[GenerationEvent], FinishedEvent]:
    live = settings if isinstance(settings, LiveSettings) else LiveSettings(settings)
    events = list(backend.generate(messages, live, **kwargs))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    assert sum(isinstance(e, FinishedEvent) for e in events) == 1
    return events, finished


@pytest.fixture
def backend(llama_backend: LlamaBackend) -> Iterator[LlamaBackend]:
    llama_backend.reset()
    yield llama_backend
    llama_backend.reset()


def test_it_implements_the_protocol_and_reports_the_model(backend: LlamaBackend) -> None:
    assert isinstance(backend, ChatBackend)  # the protocol is runtime-checkable
    protocol_backend: ChatBackend = backend
    info = protocol_backend.info
    assert info.n_vocab == 49152
    assert info.n_ctx == 2048
    assert info.n_batch == 64
    assert info.n_threads == 1
    assert Path(info.path).name.endswith(".gguf")


def test_event_order_and_stats(backend: LlamaBackend) -> None:
    events, finished = run(backend, QUESTION, max_tokens=6)
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "PhaseEvent" and events[0] == PhaseEvent("prefill")
    decode_at = events.index(PhaseEvent("decode"))
    assert all(isinstance(e, PrefillProgress) for e in events[1:decode_at])
    progress = [e for e in events if isinstance(e, PrefillProgress)]
    prompt_len = len(backend.tokenize_messages(QUESTION))
    # n_batch is 64: one progress event per chunk, the last one complete.
    assert len(progress) == -(-prompt_len // 64)
    assert progress[-1].done == progress[-1].total == prompt_len
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert [t.index for t in tokens] == list(range(len(tokens)))
    assert events[-2] == PhaseEvent("done")
    stats = finished.stats
    assert stats.prompt_tokens == prompt_len == stats.prefilled_tokens
    assert stats.decode_tokens == len(tokens) == len(finished.token_ids) <= 6
    assert stats.prefill_ms > 0 and stats.ttft_ms >= stats.prefill_ms
    assert stats.decode_ms > 0 and stats.decode_tps > 0 and stats.sampler_us > 0
    assert "".join(t.text for t in tokens) == finished.text
    assert tuple(t.step.token_id for t in tokens) == finished.token_ids
    assert backend.context_used == len(backend.session.memory.tokens())


def test_a_branch_counts_only_the_tokens_it_generated(backend: LlamaBackend) -> None:
    """A branch from token 20 of a reply: its stats count the tokens it sampled, not the
    parent's it was given (a decode rate over those read many times too fast)."""
    _, parent = run(backend, QUESTION, max_tokens=24)
    assert len(parent.token_ids) == 24
    steer = Steer(parent.token_ids[:20])
    events, branch = run(backend, QUESTION, max_tokens=24, steer=steer)
    sampled = [e for e in events if isinstance(e, TokenEvent)]
    assert [t.index for t in sampled] == [20, 21, 22, 23]
    assert branch.token_ids[:20] == parent.token_ids[:20] and len(branch.token_ids) == 24
    stats = branch.stats
    assert stats.decode_tokens == len(sampled) == 4
    assert stats.decode_tps == pytest.approx(4 / (stats.decode_ms / 1000))
    assert backend.context_used == len(backend.session.memory.tokens()) == stats.cached_tokens


def test_greedy_stops_on_end_of_generation(backend: LlamaBackend) -> None:
    _, finished = run(backend, QUESTION, max_tokens=200)
    assert finished.reason == "eos"
    assert backend.runtime.is_eog(finished.token_ids[-1])
    assert "<|im_end|>" not in finished.text
    assert finished.text.strip()


def test_max_tokens_stops_and_the_cache_holds_what_was_fed(backend: LlamaBackend) -> None:
    _, finished = run(backend, QUESTION, max_tokens=3)
    assert finished.reason == "max_tokens"
    assert len(finished.token_ids) == 3
    prompt = backend.tokenize_messages(QUESTION)
    # The last sampled token is not fed (nothing needs its logits).
    assert backend.session.memory.tokens() == prompt + list(finished.token_ids[:2])


def test_follow_up_turn_prefills_only_the_new_tokens(backend: LlamaBackend) -> None:
    _, first = run(backend, QUESTION, max_tokens=8)
    follow = [*QUESTION, ChatMessage("assistant", first.text), ChatMessage("user", "And two more?")]
    prompt = backend.tokenize_messages(follow)
    cached_before = list(backend.session.memory.tokens())
    common = next(
        (i for i, (a, b) in enumerate(zip(cached_before, prompt, strict=False)) if a != b),
        min(len(cached_before), len(prompt)),
    )
    _, second = run(backend, follow, max_tokens=4)
    assert second.stats.prompt_tokens == len(prompt)
    assert second.stats.prefilled_tokens == len(prompt) - common
    assert second.stats.prefilled_tokens < len(prompt) // 2
    # The same conversation again: only the chunk that computed the last prompt
    # token is run again, as it was.
    _, third = run(backend, follow, max_tokens=4)
    assert third.stats.prefilled_tokens == last_chunk(second.stats.prefilled_tokens, 64)
    assert third.token_ids == second.token_ids


def test_cached_and_fresh_prefill_give_the_same_greedy_reply(backend: LlamaBackend) -> None:
    _, first = run(backend, QUESTION, max_tokens=8)
    follow = [*QUESTION, ChatMessage("assistant", first.text), ChatMessage("user", "Why?")]
    _, cached = run(backend, follow, max_tokens=8)
    backend.reset()
    _, fresh = run(backend, follow, max_tokens=8)
    assert cached.stats.prefilled_tokens < fresh.stats.prefilled_tokens
    assert cached.token_ids == fresh.token_ids


def test_a_seed_reproduces_a_sampled_reply(backend: LlamaBackend) -> None:
    hot = DEFAULT_CHAT_SETTINGS.with_changes(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)
    _, a = run(backend, QUESTION, hot.with_changes(seed=7), max_tokens=12)
    _, b = run(backend, QUESTION, hot.with_changes(seed=7), max_tokens=12)
    assert a.token_ids == b.token_ids
    outcomes = {
        run(backend, QUESTION, hot.with_changes(seed=s), max_tokens=12)[1].token_ids
        for s in range(4)
    }
    assert len(outcomes) > 1


def test_cancel_before_the_first_chunk_and_mid_decode(backend: LlamaBackend) -> None:
    cancel = threading.Event()
    cancel.set()
    events, finished = run(backend, QUESTION, max_tokens=10, cancel=cancel)
    assert finished.reason == "cancelled"
    assert not any(isinstance(e, (TokenEvent, PrefillProgress)) for e in events)
    assert backend.context_used == 0

    cancel = threading.Event()
    events = []
    for event in backend.generate(QUESTION, LiveSettings(GREEDY), max_tokens=50, cancel=cancel):
        events.append(event)
        if isinstance(event, TokenEvent) and event.index == 2:
            cancel.set()
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "cancelled"
    assert len(finished.token_ids) == 3
    prompt = backend.tokenize_messages(QUESTION)
    assert backend.session.memory.tokens() == prompt + list(finished.token_ids)
    # The cache is consistent: generating again matches a fresh generation.
    _, again = run(backend, QUESTION, max_tokens=6)
    assert again.stats.prefilled_tokens == last_chunk(len(prompt), 64)
    backend.reset()
    _, fresh = run(backend, QUESTION, max_tokens=6)
    assert again.token_ids == fresh.token_ids


def test_cancel_between_prefill_chunks(backend: LlamaBackend) -> None:
    long_question = [ChatMessage("user", "Tell me about the sea. " * 30)]
    cancel = threading.Event()
    events: list[GenerationEvent] = []
    for event in backend.generate(long_question, LiveSettings(GREEDY), max_tokens=4, cancel=cancel):
        events.append(event)
        if isinstance(event, PrefillProgress):
            cancel.set()
    progress = [e for e in events if isinstance(e, PrefillProgress)]
    assert len(progress) == 1 and progress[0].done == 64 < progress[0].total
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "cancelled"
    assert backend.context_used == 64
    # The next run picks up where the cancelled prefill stopped.
    _, resumed = run(backend, long_question, max_tokens=2)
    assert resumed.stats.prefilled_tokens == resumed.stats.prompt_tokens - 64


def test_live_settings_apply_from_the_next_token(backend: LlamaBackend) -> None:
    live = LiveSettings(GREEDY)
    changed = DEFAULT_CHAT_SETTINGS.with_changes(seed=3)
    steps = []
    for event in backend.generate(QUESTION, live, max_tokens=6):
        if isinstance(event, TokenEvent):
            steps.append(event.step)
            if event.index == 1:
                live.current = changed
    assert [s.settings for s in steps[:2]] == [GREEDY, GREEDY]
    assert all(s.settings == changed for s in steps[2:])
    assert steps[0].draw is None and all(s.draw is not None for s in steps[2:])


def test_penalties_see_the_prompt(backend: LlamaBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[int]] = []

    class Recording(Sampler):
        def sample(self, logits: object, history: Any = (), **given: Any) -> Any:
            # The window the penalties see (the backend hands over the whole context).
            seen.append(penalty_window(history, self.settings).tolist())
            return super().sample(logits, history, **given)

    monkeypatch.setattr(loop_module, "Sampler", Recording)
    settings = GREEDY.with_changes(repeat_penalty=1.3, repeat_last_n=16)
    _, finished = run(backend, QUESTION, settings, max_tokens=3)
    prompt = backend.tokenize_messages(QUESTION)
    assert seen[0] == prompt[-16:]
    assert seen[2] == (prompt + list(finished.token_ids[:2]))[-16:]


def test_errors_end_in_a_finished_event(backend: LlamaBackend) -> None:
    _, finished = run(backend, [], max_tokens=4)
    assert finished.reason == "error" and finished.error and "empty" in finished.error
    _, finished = run(backend, QUESTION, max_tokens=0)
    assert finished.reason == "error" and finished.error and "max_tokens" in finished.error


def test_raw_mode_skips_the_template(backend: LlamaBackend) -> None:
    _, finished = run(
        backend, [ChatMessage("user", "The capital of France is")], max_tokens=4, raw=True
    )
    assert finished.stats.prompt_tokens == len(
        backend.runtime.tokenize("The capital of France is", special=False)
    )
    assert finished.reason in ("max_tokens", "eos")


@pytest.mark.parametrize(
    "prompt",
    [
        "🎉👨‍👩‍👧 漢字 🎉👨‍👩‍👧 漢字 🎉👨‍👩‍👧 漢字 🎉👨‍👩‍👧",
        "Translate to Chinese: I love my family.",
    ],
)
def test_emoji_and_cjk_reply_round_trips_through_the_decoder(
    backend: LlamaBackend, prompt: str
) -> None:
    # The greedy replies to these prompts are emoji / CJK made of byte-fragment tokens.
    events, finished = run(backend, [ChatMessage("user", prompt)], max_tokens=30)
    texts = [e.text for e in events if isinstance(e, TokenEvent)]
    assert "".join(texts) == finished.text
    assert "\ufffd" not in finished.text
    pieces = [backend.runtime.token_bytes(t) for t in finished.token_ids]
    data = b"".join(pieces)
    # Whole characters only: exactly the bytes' text, less a character cut off at the end.
    assert finished.text == data.decode("utf-8", errors="ignore")
    assert len(finished.text.encode()) >= len(data) - 3
    # Some character really was split across tokens, and its first token showed nothing.
    assert any(p and not _is_utf8(p) for p in pieces)
    assert "" in texts
    assert any(ord(c) > 0x2E80 for c in finished.text)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.slow
def test_a_hundred_and_twenty_turns_in_a_tiny_context_never_raise(
    default_model_path: Path, tmp_path: Path
) -> None:
    """The context fills after about fifteen turns; from then on every turn drops old
    ones (a notice) and shifts the cache rather than refilling it: over a hundred such
    turns, each checked."""
    small = LlamaBackend.load(
        default_model_path, n_ctx=256, n_batch=64, n_threads=1, log_path=tmp_path / "l.log"
    )
    try:
        messages = [ChatMessage("system", "Be brief.")]
        notices = 0
        shifted = 0
        for turn in range(120):
            messages.append(ChatMessage("user", f"Say {turn}."))
            events, finished = run(small, messages, max_tokens=2)
            assert finished.reason in ("eos", "max_tokens"), finished.error
            noticed = any(isinstance(e, NoticeEvent) for e in events)
            if notices:  # once full, every turn drops old ones
                assert noticed, turn
            notices += noticed
            assert finished.stats.prompt_tokens + 2 <= 256
            shift = finished.stats.prefilled_tokens < finished.stats.prompt_tokens // 2
            if turn:  # and the cache is shifted, not refilled
                assert shift, turn
            shifted += shift
            messages.append(ChatMessage("assistant", finished.text))
        assert notices > 100
        assert shifted > 100
        # The system prompt is always kept.
        assert small.session.memory.tokens()[
            : len(small.runtime.tokenize("<|im_start|>system\nBe brief.", special=True))
        ] == small.runtime.tokenize("<|im_start|>system\nBe brief.", special=True)
        # A last message longer than the context is cut, not fatal.
        huge = [ChatMessage("user", "word " * 600)]
        events, finished = run(small, huge, max_tokens=8)
        assert finished.reason in ("eos", "max_tokens"), finished.error
        assert any(isinstance(e, NoticeEvent) and "cut" in e.message for e in events)
    finally:
        small.close()


def test_decode_stops_with_a_notice_when_the_context_fills(
    default_model_path: Path, tmp_path: Path
) -> None:
    small = LlamaBackend.load(
        default_model_path, n_ctx=64, n_batch=64, n_threads=1, log_path=tmp_path / "l.log"
    )
    try:
        # A raw prompt the model continues at length; over several seeds at least one
        # reply must run into the full context rather than end on its own.
        full = 0
        for seed in range(6):
            hot = SamplerSettings(temperature=1.0, seed=seed)
            # max_tokens beyond the context: the headroom is capped at half of it.
            events, finished = run(
                small, [ChatMessage("user", "Once upon a time")], hot, max_tokens=500, raw=True
            )
            assert finished.reason in ("context_full", "eos"), finished.error
            if finished.reason == "context_full":
                full += 1
                assert any(isinstance(e, NoticeEvent) and "full" in e.message for e in events)
                n_ctx = small.info.n_ctx  # llama.cpp pads the context (to 256)
                assert small.context_used == n_ctx
                assert finished.stats.prompt_tokens + len(finished.token_ids) == n_ctx + 1
                break
        assert full >= 1
    finally:
        small.close()


def test_a_llama_failure_mid_decode_ends_in_error_with_a_consistent_cache(
    backend: LlamaBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.llama.runtime import LlamaError

    runtime = backend.runtime
    real = runtime.decode
    calls = {"n": 0}

    def failing(batch: Sequence[BatchEntry]) -> None:
        calls["n"] += len(batch) == 1
        if len(batch) == 1 and calls["n"] == 3:
            raise LlamaError("llama_decode failed with code 1 (simulated)")
        real(batch)

    monkeypatch.setattr(runtime, "decode", failing)
    events, finished = run(backend, QUESTION, max_tokens=10)
    assert finished.reason == "error" and finished.error and "simulated" in finished.error
    assert len(finished.token_ids) == 3 and events[-2] == PhaseEvent("done")
    prompt = backend.tokenize_messages(QUESTION)
    assert backend.session.memory.tokens() == prompt + list(finished.token_ids[:2])
    # The failed token never reached the cache, and the stats say so (replay reads it).
    assert finished.stats.cached_tokens == len(prompt) + 2
    monkeypatch.undo()
    _, again = run(backend, QUESTION, max_tokens=6)
    assert again.reason in ("eos", "max_tokens")
    assert again.stats.prefilled_tokens == last_chunk(len(prompt), 64)
    assert again.token_ids[:3] == finished.token_ids


def test_bad_logits_end_in_error_not_a_crash(
    backend: LlamaBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    monkeypatch.setattr(
        backend.runtime, "logits", lambda: np.full(backend.info.n_vocab, np.nan, dtype=np.float32)
    )
    _, finished = run(backend, QUESTION, max_tokens=4)
    assert finished.reason == "error" and finished.error and "logits" in finished.error.lower()


def test_an_abandoned_generation_leaves_the_cache_usable(backend: LlamaBackend) -> None:
    generation = backend.generate(QUESTION, LiveSettings(GREEDY), max_tokens=20)
    for event in generation:
        if isinstance(event, TokenEvent) and event.index == 1:
            break
    generation.close()
    prompt = backend.tokenize_messages(QUESTION)
    assert backend.session.memory.tokens()[: len(prompt)] == prompt
    _, again = run(backend, QUESTION, max_tokens=4)
    assert again.stats.prefilled_tokens == last_chunk(len(prompt), 64)
