"""ChatRecorder mirrors an app's conversation into the store (on the fake backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chat.events import FinishedEvent, GenerationStats, RewindEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings, Role
from backend.session.replay import replay
from backend.store.recorder import ChatRecorder
from backend.store.store import ChatStore, StoreError
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend

SETTINGS = DEFAULT_CHAT_SETTINGS


class MiniApp:
    """What the app does with its messages, with the recorder calls where they go."""

    def __init__(self, store: ChatStore, model: Path) -> None:
        self.backend = FakeBackend()
        self.live = LiveSettings(SETTINGS)
        self.recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        self.messages = [ChatMessage("system", "You are terse.")]

    def send(self, text: str, max_tokens: int = 20) -> FinishedEvent:
        self.messages.append(ChatMessage("user", text))
        return self.reply(max_tokens)

    def reply(self, max_tokens: int = 20) -> FinishedEvent:
        # (worker thread)
        assert self.recorder.begin_reply(self.messages, self.live.current, max_tokens)
        finished = None
        for event in self.backend.generate(self.messages, self.live, max_tokens=max_tokens):
            assert self.recorder.record(event)
            if isinstance(event, FinishedEvent):
                finished = event
        assert finished is not None
        if finished.text:
            self.messages.append(ChatMessage("assistant", finished.text))
        return finished

    def regenerate(self) -> FinishedEvent:
        if self.messages[-1].role == "assistant":
            self.messages.pop()
        assert self.recorder.discard_last_reply()
        self.live.current = self.live.current.with_changes(seed=self.live.current.seed + 1)
        return self.reply()


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF fake")
    return path


def test_stored_chat_mirrors_the_app(tmp_path: Path, model: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        app = MiniApp(store, model)
        app.send("tell me about the cat")
        app.send("and the dog?")
        app.regenerate()
        chat_id = app.recorder.chat_id
        assert chat_id is not None
        record = store.load_chat(chat_id)
        assert record.conversation() == app.messages
        assert record.title == "tell me about the cat"
        assert [r.seed for r in record.replies] == [SETTINGS.seed, SETTINGS.seed + 1]
        assert record.replies[1].n_ctx == 2048 and record.replies[1].n_batch == 8
        assert record.model is not None and record.model.path == str(model.resolve())
        # Stored replies replay on the (deterministic) fake backend.
        for reply in record.replies:
            assert replay(FakeBackend(), record, reply).identical

        # A new chat, then back to the first one and on with it.
        app.recorder.new_chat()
        app.messages = app.messages[:1]
        app.send("a new topic")
        assert app.recorder.chat_id != chat_id
        assert len(store.list_chats()) == 2
        reopened = app.recorder.open_chat(chat_id)
        app.messages = reopened.conversation()
        app.send("one more")
        assert store.load_chat(chat_id).conversation() == app.messages


def test_a_reply_without_text_is_kept_as_an_empty_turn(tmp_path: Path, model: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        app = MiniApp(store, model)
        app.messages.append(ChatMessage("user", "hi"))
        recorder = app.recorder
        assert recorder.begin_reply(app.messages, SETTINGS, 5)
        # Stopped during the prefill: no token, no text.
        assert recorder.record(FinishedEvent("cancelled", GenerationStats(), "", ()))
        assert recorder.chat_id is not None
        expected = [*app.messages, ChatMessage("assistant", "")]
        assert store.load_chat(recorder.chat_id).conversation() == expected


def test_store_errors_are_reported_not_raised(tmp_path: Path, model: Path) -> None:
    store = ChatStore(tmp_path / "chats.sqlite3")
    recorder = ChatRecorder(store, model)
    store.close()
    messages = [ChatMessage("user", "hi")]
    assert recorder.begin_reply(messages, SETTINGS, 5) is False
    assert recorder.error is not None and "chats.sqlite3" in recorder.error
    error = recorder.error
    events = list(FakeBackend().generate(messages, LiveSettings(SETTINGS), max_tokens=3))
    assert any(isinstance(event, FinishedEvent) for event in events)
    # Each event reports the failure (False) instead of raising; the message stays.
    assert [recorder.record(event) for event in events] == [False] * len(events)
    assert recorder.error == error and recorder.chat_id is None
    with ChatStore(tmp_path / "chats.sqlite3") as reopened:
        assert reopened.list_chats() == []


class _FailsOnce(ChatStore):
    """A store whose first `add_message` fails, as a corrupt page would."""

    failed = False

    def add_message(self, chat_id: int, role: Role, content: str) -> int:
        if not self.failed:
            self.failed = True
            raise StoreError("chat database is corrupt")
        return super().add_message(chat_id, role, content)


def test_a_store_that_failed_is_not_written_to_again(tmp_path: Path, model: Path) -> None:
    with _FailsOnce(tmp_path / "chats.sqlite3") as store:
        recorder = ChatRecorder(store, model)
        messages = [ChatMessage("user", "hi")]
        assert recorder.begin_reply(messages, SETTINGS, 5) is False
        assert recorder.error is not None
        assert recorder.begin_reply(messages, SETTINGS, 5) is False
        assert recorder.begin_branch(1, 0, SETTINGS) is False
        assert [store.load_chat(c.id).messages for c in store.list_chats()] == [()]


def test_the_recorder_keeps_an_empty_reply_and_its_ghosts(tmp_path: Path, model: Path) -> None:
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        recorder = ChatRecorder(store, model, n_ctx=2048, n_batch=8)
        messages = [ChatMessage("user", "hi")]
        live = LiveSettings(SETTINGS)
        assert recorder.begin_reply(messages, SETTINGS, 5)
        events = list(FakeBackend().generate(messages, live, max_tokens=2))
        tokens = [e for e in events if isinstance(e, TokenEvent)]
        for event in tokens:
            assert recorder.record(event)
        # A phrase ban took every token back, and the reply ended with no text.
        text = "".join(e.text for e in tokens)
        ids = tuple(e.step.token_id for e in tokens)
        assert recorder.record(RewindEvent(0, ids, text, text, (ids[0],)))
        assert recorder.record(FinishedEvent("eos", GenerationStats(), "", ()))
        (ghost,) = recorder.ghost_ids
        assert recorder.chat_id is not None
        chat = store.load_chat(recorder.chat_id)
        assert [(m.role, m.content) for m in chat.messages] == [("user", "hi"), ("assistant", "")]
        turn = chat.messages[-1]
        assert turn.reply is not None and turn.reply.id == recorder.reply_id
        assert turn.reply.text == "" and turn.reply.finish_reason == "eos"
        assert ghost in {b.id for b in turn.branches}
