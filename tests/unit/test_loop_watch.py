"""Loops watched for while a reply runs (fake model): marked, stopped, rewound, stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    GenerationStats,
    LoopEvent,
    RewindEvent,
    TokenEvent,
)
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.config.config import ConfigError, load_config
from backend.session.loop import Generation
from backend.session.loop_watch import LoopGuard, watching
from backend.session.phrase_bans import PhraseBans
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.schema import migrate
from backend.store.store import ChatStore
from sampling.analysis.loops import Loop, LoopRule, find_loop
from sampling.sections import Section
from sampling.settings.record import SamplerSettings
from tests.fake_backend import FakeBackend
from tests.section_steps import A, T, step_of
from tui.cli.main import main

QUESTION = [ChatMessage("user", "tell me about the cat")]
# A repeat penalty below 1 rewards what was just said: the greedy reply soon loops
# (" some sat sat in" from token 17 on).
GREEDY = SamplerSettings(temperature=0.0, repeat_penalty=0.5, repeat_last_n=8)
RULE = LoopRule(2, 32, 3)


def run(guard: LoopGuard | None, bans: PhraseBans | None = None) -> list[GenerationEvent]:
    """A greedy reply of the fake model that loops."""
    backend = FakeBackend(min_reply_tokens=1000)
    live = LiveSettings(GREEDY)
    return list(backend.generate(QUESTION, live, max_tokens=60, loops=guard, bans=bans))


def tokens_of(events: list[GenerationEvent]) -> list[int]:
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    return list(finished.token_ids)


def first_found(tokens: list[int], rule: LoopRule) -> int:
    """How many tokens make the first prefix with a loop."""
    return next(
        n for n in range(1, len(tokens) + 1) if find_loop(tokens[:n], *astuple(rule)) is not None
    )


def astuple(rule: LoopRule) -> tuple[int, int, int]:
    return rule.min_period, rule.max_period, rule.min_count


def test_a_loop_is_marked_as_it_forms_and_grows() -> None:
    events = run(LoopGuard("mark", RULE))
    tokens = tokens_of(events)
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "max_tokens"
    assert finished.loop == find_loop(tokens, *astuple(RULE)) is not None
    loops = [e.loop for e in events if isinstance(e, LoopEvent)]
    assert loops[-1] == finished.loop
    # Each LoopEvent comes right after the token that made the loop what it says.
    seen = 0
    for event in events:
        if isinstance(event, TokenEvent):
            seen = event.index + 1
        elif isinstance(event, LoopEvent):
            assert event.loop == find_loop(tokens[:seen], *astuple(RULE))
    assert [loop.count for loop in loops] == list(range(3, 3 + len(loops)))


def test_unwatched_replies_have_no_loop() -> None:
    events = run(None)
    assert not any(isinstance(e, LoopEvent) for e in events)
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.loop is None
    assert tokens_of(events) == tokens_of(run(LoopGuard("mark", RULE)))


def test_stop_ends_the_reply_on_the_token_that_completes_the_loop() -> None:
    marked = tokens_of(run(LoopGuard("mark", RULE)))
    events = run(LoopGuard("stop", RULE))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reason == "loop"
    end = first_found(marked, RULE)
    assert tokens_of(events) == marked[:end]
    assert finished.loop == find_loop(marked[:end], *astuple(RULE))
    assert finished.loop is not None and finished.loop.count == RULE.min_count


def test_a_phrase_ban_going_back_over_the_loop_keeps_the_reply_going() -> None:
    marked = run(LoopGuard("mark", RULE))
    texts = [e.text for e in marked if isinstance(e, TokenEvent)]
    first = first_found(tokens_of(marked), RULE)
    loop = find_loop(tokens_of(marked)[:first], *astuple(RULE))
    assert loop is not None
    # Ban the text of the loop's copies: it is found on the token that completes the
    # loop, after the stop was asked for; going back cancels the stop.
    phrase = "".join(texts[loop.start : first])
    events = run(LoopGuard("stop", RULE), PhraseBans((phrase,)))
    rewinds = [e for e in events if isinstance(e, RewindEvent)]
    assert rewinds and rewinds[0].index == loop.start
    assert isinstance(events[events.index(rewinds[0]) + 1], LoopEvent)  # the loop is gone
    end = events[-1]
    assert isinstance(end, FinishedEvent) and phrase not in end.text
    assert len(end.token_ids) > first
    if end.reason == "loop":
        assert end.loop == find_loop(list(end.token_ids), *astuple(RULE))


def test_the_loop_is_stored_with_the_reply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = FakeBackend(min_reply_tokens=1000)
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"GGUF")
        recorder = ChatRecorder(store, model)
        recorder.begin_reply(QUESTION, GREEDY, 150)
        events = backend.generate(
            QUESTION, LiveSettings(GREEDY), max_tokens=60, loops=LoopGuard("stop", RULE)
        )
        finished = list(recorded(events, recorder))[-1]
        assert isinstance(finished, FinishedEvent) and finished.loop is not None
        assert recorder.chat_id is not None
        reply = store.load_chat(recorder.chat_id).replies[0]
        assert (reply.finish_reason, reply.loop) == ("loop", finished.loop)
        chat_id = recorder.chat_id
    assert main(["export", str(chat_id), "--format", "json", "--db", str(path)]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["messages"][-1]["reply"]["loop"] == finished.loop.to_dict()


def test_a_version_5_store_opens_with_no_loops(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=5)
    conn.close()
    with ChatStore(path) as store:
        model = tmp_path / "m.gguf"
        model.write_bytes(b"GGUF")
        ref = store.model_ref(model)
        chat = store.new_chat("old", ref)
        store.add_message(chat, "user", "hi")
        writer = store.begin_reply(chat, ref, GREEDY)
        writer.append_token(0, 5, GREEDY, " sat")
        writer.finish("eos", None, " sat")
        assert store.load_chat(chat).replies[0].loop is None


def test_the_config_s_loops_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[loops]\nmode = "stop"\nmax_period = 40\nmin_count = 3\n')
    assert load_config(path).loops == LoopGuard("stop", LoopRule(1, 40, 3))
    path.write_text('[loops]\nmode = "sometimes"\n')
    with pytest.raises(ConfigError, match="mode"):
        load_config(path)
    path.write_text("[loops]\nmin_count = 1\n")
    with pytest.raises(ConfigError, match="min_count"):
        load_config(path)
    path.write_text("[loops]\nmin_period = 4\nmax_period = 2\n")
    with pytest.raises(ConfigError, match=r"line 3.*max_period"):
        load_config(path)
    assert load_config(tmp_path / "none.toml").loops == LoopGuard()


def test_a_loop_guard_names_a_bad_mode() -> None:
    with pytest.raises(ValueError, match="invalid loop mode 'loud'"):
        LoopGuard("loud")  # type: ignore[arg-type]
    assert not LoopGuard("off") and LoopGuard("mark")
    assert Loop(3, 1, 4).end == 13


def test_a_bad_stop_on_loop_rule_is_one_line_before_any_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["generate", "hi", "--stop-on-loop=1,2", "--model", "/nowhere/m.gguf"])
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("samplescope: --stop-on-loop: invalid loop rule '1,2'")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("1,1000000000,2", "invalid max_period=1000000000: expected at most 65,536 tokens"),
        ("1,20000000,2", "invalid max_period=20000000: expected at most 65,536 tokens"),
        ("1,1,100000000000000000000", "invalid min_count=100000000000000000000: expected 2"),
        ("1,5000,2", "a period of up to 5,000 tokens is longer than the context (--ctx 4,096)"),
    ],
)
def test_a_stop_on_loop_rule_beyond_the_context_is_one_line_before_any_model(
    capsys: pytest.CaptureFixture[str], rule: str, words: str
) -> None:
    code = main(["generate", "hi", f"--stop-on-loop={rule}", "--model", "/nowhere/m.gguf"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert err.startswith("samplescope: --stop-on-loop: ")
    assert words in err


@pytest.mark.parametrize("value", ["100000000000000000000", "70000"])
def test_a_config_max_period_beyond_the_bound_is_one_line_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    (tmp_path / "config.toml").write_text(f"[loops]\nmax_period = {value}\n")
    with pytest.raises(ConfigError, match=r"max_period"):
        load_config(tmp_path / "config.toml")
    # A broken config is named in one line and its defaults used: the command goes
    # on to its own error (here, the missing model), never an unforeseen one.
    code = main(["generate", "hi", "--model", "/nowhere/m.gguf"])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert "max_period" in lines[0] and "at most 65,536" in lines[0]
    assert lines[1:] == ["samplescope: /nowhere/m.gguf: model file not found"]


class _Sequence:
    def __init__(self) -> None:
        self.token_ids: list[int] = []


class _Generation:
    """What `watching` reads of a generation: each sequence's tokens, and the stop."""

    def __init__(self) -> None:
        self.sequences = [_Sequence()]
        self.ended: list[tuple[int, str]] = []

    def end_after(self, number: int, reason: str) -> None:
        self.ended.append((number, reason))


def watched_thinking(
    tokens: list[int], sections: list[Section], mode: str
) -> tuple[list[GenerationEvent], _Generation]:
    """The events `watching` yields over a reply of hand-built thinking steps."""
    generation = _Generation()

    def events() -> Iterator[tuple[int, GenerationEvent]]:
        for index, (token, section) in enumerate(zip(tokens, sections, strict=True)):
            generation.sequences[0].token_ids.append(token)
            yield 0, TokenEvent(index, step_of(token, 0.5, section), "x", "x")
        yield 0, FinishedEvent("max_tokens", GenerationStats(), "", tuple(tokens))

    guard = LoopGuard(mode, RULE)  # type: ignore[arg-type]
    shown = [event for _, event in watching(cast(Generation, generation), guard, events())]
    return shown, generation


def test_a_loop_in_the_thinking_is_not_one_in_the_answer() -> None:
    # " 3 4" twice in the thinking and twice in the answer: 4 copies in all, 2 a side.
    tokens = [1, 3, 4, 3, 4, 3, 4, 3, 4, 9]
    sections = [T] * 5 + [A] * 5
    shown, _ = watched_thinking(tokens, sections, "mark")
    assert not [e for e in shown if isinstance(e, LoopEvent)]
    finished = shown[-1]
    assert isinstance(finished, FinishedEvent) and finished.loop is None
    # All in the thinking: a loop there, said to be in the thinking.
    shown, generation = watched_thinking(tokens, [T] * 10, "stop")
    loops = [e.loop for e in shown if isinstance(e, LoopEvent)]
    assert loops[0] == Loop(2, 1, 3, T) and generation.ended[0] == (0, "loop")
    finished = shown[-1]
    assert isinstance(finished, FinishedEvent) and finished.loop == Loop(2, 1, 4, T)
    assert finished.loop.to_dict()["section"] == "thinking"
