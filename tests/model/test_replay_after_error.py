"""Replay of a reply that follows one which ended in an error, on the real model.

A reply that fails after sampling (the sampler rejects the next logits) leaves every
sampled token in the KV cache, while one that finishes normally never decodes its
last token; the next reply starts from that cache. Its replay must rebuild it so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.chat.events import FinishedEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.paths import DATA_DIR_ENV
from backend.session.llama_backend import LlamaBackend
from backend.session.replay import replay
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

GREEDY = SamplerSettings(temperature=0.0)
FAIL_AT = 7  # the failing reply's token index whose logits are bad (7 tokens stored)
MAX_TOKENS = 64  # the greedy replies end on end-of-generation well before it


def _turn(
    backend: LlamaBackend,
    recorder: ChatRecorder,
    messages: list[ChatMessage],
    text: str,
) -> FinishedEvent:
    """Ask `text` as the app does: record every event, keep the reply's text."""
    messages.append(ChatMessage("user", text))
    recorder.begin_reply(messages, GREEDY, MAX_TOKENS)
    finished = None
    for event in backend.generate(messages, LiveSettings(GREEDY), max_tokens=MAX_TOKENS):
        assert recorder.record(event), recorder.error
        if isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None
    if finished.text:
        messages.append(ChatMessage("assistant", finished.text))
    return finished


def test_a_reply_after_a_failed_one_replays_token_identical(
    llama_backend: LlamaBackend,
    default_model_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    backend = llama_backend
    backend.reset()
    runtime = backend.runtime
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    messages: list[ChatMessage] = []
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        info = backend.info
        recorder = ChatRecorder(store, default_model_path, n_ctx=info.n_ctx, n_batch=info.n_batch)
        assert _turn(backend, recorder, messages, "Name three fruits.").reason == "eos"

        real_logits = runtime.logits
        calls = {"n": 0}

        def bad_logits(row: int = -1) -> np.ndarray:
            calls["n"] += 1
            if calls["n"] == FAIL_AT + 1:
                return np.full(runtime.n_vocab, np.nan, dtype=np.float32)
            return real_logits(row)

        monkeypatch.setattr(runtime, "logits", bad_logits)
        failed = _turn(backend, recorder, messages, "And three vegetables?")
        monkeypatch.undo()
        monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
        assert failed.reason == "error" and "NaN" in (failed.error or "")
        assert len(failed.token_ids) == FAIL_AT and failed.text
        # Every sampled token was decoded before the failure.
        assert failed.stats.cached_tokens == failed.stats.prompt_tokens + FAIL_AT
        assert failed.stats.cached_tokens == len(backend.session.memory.tokens())

        last = _turn(backend, recorder, messages, "Now three colours.")
        assert last.reason == "eos"
        chat = store.load_chat(recorder.chat_id or 0)

    _, broken, later = chat.replies
    assert broken.finish_reason == "error" and broken.token_ids == failed.token_ids
    assert broken.stats is not None and broken.stats.cached_tokens == failed.stats.cached_tokens
    # The later reply continued the failed one's cache, its last token included.
    assert later.stats is not None
    assert later.stats.prompt_tokens - later.stats.prefilled_tokens == broken.stats.cached_tokens
    assert later.token_ids == last.token_ids

    result = replay(backend, chat, later)
    assert result.replayed == last.token_ids, result.first_difference
    assert not result.notices
    assert main(["replay", str(chat.id), "--reply", "3"]) == 0
    assert "token-identical" in capsys.readouterr().out
