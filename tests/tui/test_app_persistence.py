"""The app saves its chats: recorded as they happen, reopened from the history screen
and continued; the config file applied at startup (a broken one reported)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static

from backend.chat.events import Decoding, FinishedEvent, TokenEvent
from backend.chat.protocol import LiveSettings
from backend.config.config import Config
from backend.config.paths import CONFIG_DIR_ENV, CONFIG_FILENAME, DATA_DIR_ENV
from backend.store.store import ChatStore
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, send_message, wait_until
from tui.app import SamplescopeApp
from tui.app_config import resolve_app_config
from tui.chat.reply_view import ReplyView
from tui.cli.commands.app import build_app, build_app_parser
from tui.compare.result import CompareResult
from tui.history.screen import HistoryScreen
from tui.widgets.prob_panel import ProbPanel

pytestmark = pytest.mark.anyio

SIZE = (120, 36)


def _fake(tmp_path: Path) -> FakeBackend:
    """A fake backend whose model "file" exists (the store hashes the model file)."""
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF not really a model")
    fake = FakeBackend()
    fake._info = replace(fake.info, path=str(model))
    return fake


def _roles_and_texts(store: ChatStore, chat_id: int) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in store.load_chat(chat_id).messages]


def _shown(app: SamplescopeApp, selector: str) -> list[str]:
    return [str(widget.content) for widget in app.query(f"#transcript {selector}").results(Static)]


def _configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, toml: str) -> Path:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / CONFIG_FILENAME).write_text(toml, encoding="utf-8")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(config_dir))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    monkeypatch.delenv("SAMPLESCOPE_MODEL", raising=False)
    return config_dir / CONFIG_FILENAME


async def test_chats_are_saved_reopened_and_continued(tmp_path: Path, store: ChatStore) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=8, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "hello there")
        [chat] = store.list_chats()
        assert chat.title == "hello there"
        assert _roles_and_texts(store, chat.id) == [
            ("user", "hello there"),
            ("assistant", first.text),
        ]
        [reply] = store.load_chat(chat.id).replies
        assert reply.token_ids == first.token_ids != ()
        assert reply.token_ids == tuple(
            t.step.token_id for t in chat_of(app).conversation.replies[0].tokens
        )

        # ctrl+r regenerates: a second branch of the turn, which the turn follows.
        await pilot.press("ctrl+r")
        again = await nth_reply_finished(pilot, app, 2)
        assert _roles_and_texts(store, chat.id) == [
            ("user", "hello there"),
            ("assistant", again.text),
        ]
        [turn] = [m for m in store.load_chat(chat.id).messages if m.reply is not None]
        assert [b.token_ids for b in turn.branches] == [first.token_ids, again.token_ids]
        assert turn.reply is not None and turn.reply.id == turn.branches[1].id

        # ctrl+n: the next message starts a second chat.
        await pilot.press("ctrl+n")
        await pilot.pause()
        second = await send_message(pilot, app, "second chat")
        chats = store.list_chats()
        assert [c.title for c in chats] == ["second chat", "hello there"]  # newest first
        assert _roles_and_texts(store, chats[0].id) == [
            ("user", "second chat"),
            ("assistant", second.text),
        ]

        # ctrl+o lists the chats; open the older one.
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)
        assert _shown(app, ".user") == ["hello there"]
        # The reply is back token by token, with its records and both branches.
        assert _shown(app, ".stored") == []
        assert [
            (m.role, m.content) for m in chat_of(app).conversation.messages
        ] == _roles_and_texts(store, chat.id)
        [reopened] = chat_of(app).conversation.replies
        assert reopened.text == again.text
        assert [t.step.token_id for t in reopened.tokens] == list(again.token_ids)
        assert [len(b.tokens) for b in reopened.tree] == [len(first.token_ids)] * 2
        drawn = app.query_one("#transcript ReplyView", ReplyView).plain_text()
        assert "⋔2" in drawn and drawn.replace("⋔2", "").startswith(again.text)
        probs = app.query_one("#probs", ProbPanel)
        assert probs.step is not None and probs.step.token_id == again.token_ids[-1]

        # Continue it: the new turn and reply go into the same chat.
        third = await send_message(pilot, app, "and then?")
        assert len(store.list_chats()) == 2
        assert _roles_and_texts(store, chat.id) == [
            ("user", "hello there"),
            ("assistant", again.text),
            ("user", "and then?"),
            ("assistant", third.text),
        ]
        assert store.load_chat(chat.id).replies[-1].token_ids == third.token_ids
        assert _shown(app, ".user") == ["hello there", "and then?"]


async def test_an_empty_reply_is_kept_stored_and_shown_as_empty(
    tmp_path: Path, store: ChatStore
) -> None:
    fake = _fake(tmp_path)
    fake.fake.min_reply_tokens = 0
    settings = DEFAULT_CHAT_SETTINGS.with_changes(logit_bias=((0, 100.0),))  # id 0 ends it
    app = SamplescopeApp(fake, settings=settings, max_tokens=4, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        empty = await send_message(pilot, app, "say nothing")
        assert empty.text == "" and empty.reason == "eos"
        [chat] = store.list_chats()
        expected = [("user", "say nothing"), ("assistant", "")]
        assert _roles_and_texts(store, chat.id) == expected
        assert [(m.role, m.content) for m in chat_of(app).conversation.messages] == expected
        [reply] = chat_of(app).conversation.replies
        assert reply.text == ""
        assert len(app.query("#transcript ReplyView")) == 1
        await send_message(pilot, app, "and now?")
        assert _roles_and_texts(store, chat.id)[:3] == [*expected, ("user", "and now?")]


async def test_without_a_store_nothing_is_saved_and_history_says_so(tmp_path: Path) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=4, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await send_message(pilot, app, "hi")
        assert chat_of(app).conversation.recorder is None
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)
        assert any("not being saved" in n.message for n in app._notifications)
        commands = [command.title for command in app.get_system_commands(app.screen)]
        assert "Saved chats" in commands


async def test_a_store_error_is_shown_once_and_the_reply_still_runs(
    tmp_path: Path, store: ChatStore
) -> None:
    fake = FakeBackend()  # its model path "<fake>" is no file: the store cannot hash it
    app = SamplescopeApp(fake, max_tokens=4, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "hi")
        await send_message(pilot, app, "again")
        assert first.text
        notes = [text for text in _shown(app, ".note") if "not being saved" in text]
        assert len(notes) == 1 and "<fake>" in notes[0]
        assert store.list_chats() == []


async def test_a_broken_config_still_starts_and_says_where(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _configure(monkeypatch, tmp_path, "[settings]\ntemperature = 0.5\ntop_k = = 3\n")
    app = build_app(build_app_parser().parse_args(["--threads", "1", "--seed", "5"]))
    assert app.live.current == DEFAULT_CHAT_SETTINGS.with_changes(seed=5)
    assert app.store is not None and app.store.path.parent == tmp_path / "data"
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: chat_of(app).ready, 60)
            messages = [n.message for n in app._notifications]
            assert any(str(path) in m and "line 3" in m for m in messages), messages
    finally:
        app.close_backend()
        app.store.close()


def _corrupt_database(path: Path) -> bytes:
    """A chat database with garbage over one page in its middle; its bytes."""
    with ChatStore(path) as store:
        for number in range(30):
            chat = store.new_chat(f"chat {number}")
            for turn in range(10):
                store.add_message(chat, "user", f"words {turn} " * 200)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096  # a page boundary
    data[middle : middle + 4096] = b"garbage!" * 512
    path.write_bytes(bytes(data))
    return bytes(data)


async def test_a_corrupt_database_is_never_written_and_the_app_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _configure(monkeypatch, tmp_path, "")
    path = tmp_path / "data" / "chats.sqlite3"
    path.parent.mkdir()
    corrupt = _corrupt_database(path)
    app = build_app(build_app_parser().parse_args(["--threads", "1", "--max-tokens", "4"]))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: chat_of(app).ready, 60)
            finished = await send_message(pilot, app, "hi")
            assert finished.reason != "error", finished.error
            messages = [n.message for n in app._notifications]
            assert any(
                "will not be saved" in m and str(path) in m and "corrupt" in m for m in messages
            ), messages
    finally:
        app.close_backend()
        if app.store is not None:
            app.store.close()
    assert app.store is None
    assert path.read_bytes() == corrupt
    assert sorted(p.name for p in path.parent.iterdir()) == ["chats.sqlite3"]


async def test_the_config_sets_theme_settings_and_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _configure(
        monkeypatch,
        tmp_path,
        'theme = "gruvbox"\n[settings]\ntemperature = 0.3\ntop_k = 5\n'
        '[keys]\nhistory = "f5"\nno_such_action = "f6"\nnew_seed = "ctrl + what?"\n',
    )
    app = build_app(build_app_parser().parse_args(["--threads", "1", "-k", "7", "--no-save"]))
    assert app.store is None
    assert (app.live.current.temperature, app.live.current.top_k) == (0.3, 7)  # flag wins
    app.store = ChatStore(tmp_path / "chats.sqlite3")  # for the history screen
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: chat_of(app).ready, 60)
            assert app.theme == "gruvbox"
            messages = " ".join(n.message for n in app._notifications)
            assert "no_such_action" in messages and "new_seed" in messages
            await pilot.press("f5")
            await pilot.pause()
            assert isinstance(app.screen, HistoryScreen)
    finally:
        app.close_backend()
        app.store.close()


def test_config_keys_and_theme_are_checked() -> None:
    config = Config(
        theme="nope",
        keys=(("history", "F5, ctrl+o"), ("quit", "ctrl+x"), ("fly", "f9"), ("help", "a b?")),
    )
    resolved = resolve_app_config(config, {"gruvbox"}, {"history", "quit", "help"})
    assert resolved.theme is None
    assert resolved.keymap == {"history": "f5,ctrl+o", "quit": "ctrl+x"}
    assert len(resolved.problems) == 3
    assert "'nope'" in resolved.problems[0] and "gruvbox" in resolved.problems[0]
    assert "'fly'" in resolved.problems[1] and "help" in resolved.problems[2]


async def test_a_compare_column_used_as_reply_is_a_new_branch(
    tmp_path: Path, store: ChatStore
) -> None:
    app = SamplescopeApp(_fake(tmp_path), max_tokens=8, cursor_blink=False, store=store)
    async with app.run_test(size=SIZE) as pilot:
        first = await send_message(pilot, app, "hello there")
        # What the compare view hands back for a column (another seed, the same turn),
        # generated in lockstep beside the current settings' column.
        settings = app.live.current.with_changes(seed=5)
        lives = [LiveSettings(app.live.current), LiveSettings(settings)]
        generation = FakeBackend().generate_many(
            chat_of(app).conversation.messages[:-1], lives, max_tokens=8
        )
        events = [event for column, event in generation if column == 1]
        finished = events[-1]
        assert isinstance(finished, FinishedEvent) and finished.token_ids != first.token_ids
        assert finished.decoding == Decoding(1, (app.live.current, settings))
        tokens = tuple(e for e in events if isinstance(e, TokenEvent))
        app.adopt_compare_result(CompareResult(1, "seed 5", settings, finished, tokens))
        await pilot.pause()
        [chat] = store.list_chats()
        turn = store.load_chat(chat.id).messages[-1]
        old, new = turn.branches
        assert (old.token_ids, new.token_ids) == (first.token_ids, finished.token_ids)
        assert (new.parent_id, new.fork_at) == (old.id, 0)
        # How it was decoded is stored, so a replay rebuilds it beside its sibling.
        assert old.decoding is None and new.decoding == finished.decoding.to_json()
        assert turn.reply is not None and turn.reply.id == new.id
        assert turn.content == finished.text == chat_of(app).conversation.messages[-1].content
        assert (
            len(chat_of(app).conversation.replies) == 1
            and len(chat_of(app).conversation.replies[-1].tree) == 2
        )

        # The reply it replaced on screen is a key away, and the store follows it.
        app.query_one("#transcript").focus()
        await pilot.press("less_than_sign")
        assert chat_of(app).conversation.replies[-1].text == first.text
        assert _roles_and_texts(store, chat.id)[-1] == ("assistant", first.text)
