"""`samplescope replay` on the real model: stored replies regenerate token for token."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.paths import DATA_DIR_ENV, default_store_path
from backend.session.replay import replay
from backend.store.store import ChatStore
from sampling.settings.record import SamplerSettings
from tui.cli.main import main

S0 = SamplerSettings(temperature=0.9, top_k=40, top_p=0.95, repeat_last_n=64, seed=123)
S1 = S0.with_changes(temperature=1.3, min_p=0.02, repeat_penalty=1.1)
S2 = S0.with_changes(temperature=0.0)
SCHEDULE = {6: S1, 13: S2}  # token index -> settings from then on


def record_reply(
    store: ChatStore,
    backend: object,
    chat: int,
    model: object,
    messages: list[ChatMessage],
    first: SamplerSettings,
    schedule: dict[int, SamplerSettings],
) -> tuple[str, int]:
    """Generate with the real backend, switching settings like a slider would."""
    live = LiveSettings(first)
    info = backend.info  # type: ignore[attr-defined]
    writer = store.begin_reply(
        chat,
        model,  # type: ignore[arg-type]
        first,
        max_tokens=40,
        n_ctx=info.n_ctx,
        n_batch=info.n_batch,
    )
    text = ""
    for event in backend.generate(messages, live, max_tokens=40):  # type: ignore[attr-defined]
        if isinstance(event, TokenEvent):
            writer.append(event)
            if event.index + 1 in schedule:
                live.current = schedule[event.index + 1]
        elif isinstance(event, FinishedEvent):
            assert event.reason != "error", event.error
            writer.finish_event(event)
            text = event.text
    return text, writer.message_id


@pytest.fixture(scope="module")
def recorded_db(
    tmp_path_factory: pytest.TempPathFactory, llama_backend: object, default_model_path: Path
) -> tuple[Path, int]:
    """A database with one three-turn chat generated on the real model (made once)."""
    path = tmp_path_factory.mktemp("replay") / "chats.sqlite3"
    llama_backend.reset()  # type: ignore[attr-defined]
    with ChatStore(path) as store:
        model = store.model_ref(default_model_path)
        chat = store.new_chat("sea poem", model)
        messages = [ChatMessage("user", "Write a long poem about the sea and the wind.")]
        store.add_message(chat, "user", messages[0].content)
        text, _ = record_reply(store, llama_backend, chat, model, messages, S0, SCHEDULE)
        # A second turn, generated on the warm KV cache (only the new tokens prefilled).
        follow_up = "Now write another one about mountains."
        messages += [ChatMessage("assistant", text), ChatMessage("user", follow_up)]
        store.add_message(chat, "user", follow_up)
        text, _ = record_reply(
            store, llama_backend, chat, model, messages, S0.with_changes(seed=7), {}
        )
        # A third turn, then a regenerate of it (as the app's ctrl+r does): the
        # discarded reply is deleted; the new one reuses its prompt but the last chunk.
        messages += [ChatMessage("assistant", text), ChatMessage("user", "Shorter.")]
        store.add_message(chat, "user", "Shorter.")
        _, discarded = record_reply(
            store, llama_backend, chat, model, messages, S0.with_changes(seed=8), {}
        )
        store.delete_message(discarded)
        record_reply(store, llama_backend, chat, model, messages, S0.with_changes(seed=9), {})
    return path, chat


@pytest.fixture
def saved_chat(
    recorded_db: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> int:
    """A private copy of the recorded database (tests may tamper with it)."""
    shutil.copyfile(recorded_db[0], tmp_path / "chats.sqlite3")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    return recorded_db[1]


def test_stored_replies_record_the_settings_schedule(saved_chat: int) -> None:
    with ChatStore(default_store_path()) as store:
        first, second, third = store.load_chat(saved_chat).replies
    assert len(first.token_ids) > 13, "the reply must outlast the settings changes"
    assert [(c.from_index, c.settings) for c in first.settings_changes] == [
        (0, S0),
        (6, S1),
        (13, S2),
    ]
    assert [c.from_index for c in second.settings_changes] == [0]
    assert second.seed == 7
    assert third.seed == 9 and third.stats is not None
    # The regenerate's warm cache: the last chunk of the prompt is run again.
    # (the discarded reply prefilled only its new tokens, in chunks of n_batch 64).
    assert 1 < third.stats.prefilled_tokens <= 64 < third.stats.prompt_tokens


def test_replay_is_token_identical(saved_chat: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(saved_chat), "--reply", "1"]) == 0
    assert "reply 1" in capsys.readouterr().out
    # The second reply was generated on a warm KV cache (reply 1's tokens decoded one
    # by one): the replay rebuilds that cache the same way before generating.
    assert main(["replay", str(saved_chat), "--reply", "2"]) == 0
    out = capsys.readouterr().out
    assert "reply 2" in out and "token-identical" in out
    # The regenerated third reply: the discarded generation's cache is rebuilt too.
    assert main(["replay", str(saved_chat)]) == 0
    captured = capsys.readouterr()
    assert "reply 3" in captured.out and "token-identical" in captured.out
    assert "could not rebuild" not in captured.err


def test_replay_without_the_schedule_differs(saved_chat: int, llama_backend: object) -> None:
    with ChatStore(default_store_path()) as store:
        chat = store.load_chat(saved_chat)
    reply = chat.replies[0]
    result = replay(llama_backend, chat, reply)  # type: ignore[arg-type]
    assert result.identical
    unscheduled = replace(reply, settings_changes=reply.settings_changes[:1])
    other = replay(llama_backend, chat, unscheduled)  # type: ignore[arg-type]
    assert not other.identical
    assert other.first_difference is not None and other.first_difference >= 6


def test_replay_of_an_interrupted_reply_compares_what_was_stored(
    saved_chat: int, llama_backend: object
) -> None:
    with ChatStore(default_store_path()) as store:
        chat = store.load_chat(saved_chat)
    reply = chat.replies[0]
    cut = replace(
        reply,
        token_ids=reply.token_ids[:10],
        finish_reason="interrupted",
        stats=None,
        finished=None,
    )
    result = replay(llama_backend, chat, cut)  # type: ignore[arg-type]
    assert result.identical and len(result.replayed) == 10


def test_warm_reply_replayed_on_a_cold_cache_differs(
    saved_chat: int, llama_backend: object
) -> None:
    """Why the cache is rebuilt: without it this reply does not reproduce."""
    with ChatStore(default_store_path()) as store:
        chat = store.load_chat(saved_chat)
    reply = chat.replies[1]
    assert reply.stats is not None and reply.stats.prefilled_tokens < reply.stats.prompt_tokens
    cold = replace(reply, stats=None)  # no stats: looks prefilled from an empty cache
    assert not replay(llama_backend, chat, cold).identical  # type: ignore[arg-type]


def test_replay_reports_the_first_difference(
    saved_chat: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = sqlite3.connect(tmp_path / "chats.sqlite3")
    conn.execute(
        "UPDATE reply_tokens SET token_id = token_id + 1 WHERE idx = 3 AND reply_id = "
        "(SELECT min(id) FROM replies)"
    )
    conn.commit()
    conn.close()
    assert main(["replay", str(saved_chat), "--reply", "1"]) == 1
    assert "DIFFERS at token 3" in capsys.readouterr().out


def test_replay_warns_when_the_model_file_differs(
    saved_chat: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = sqlite3.connect(tmp_path / "chats.sqlite3")
    conn.execute("UPDATE replies SET model_sha256 = ?", ("0" * 64,))
    conn.commit()
    conn.close()
    assert main(["replay", str(saved_chat), "--reply", "1"]) == 0
    captured = capsys.readouterr()
    assert "is not the file that generated this reply" in captured.err
    assert "token-identical" in captured.out


def test_replay_errors_are_clear(
    saved_chat: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(saved_chat), "--reply", "5"]) == 2
    assert "has no reply 5: it has replies 1 to 3" in capsys.readouterr().err
    assert main(["replay", str(saved_chat), "--model", str(tmp_path / "gone.gguf")]) == 2
    assert "is missing" in capsys.readouterr().err
