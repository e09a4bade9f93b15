"""A constrained reply in the app, on the fake backend: the probability panel names the
grammar's cuts and the mass it removed, the timeline marks forced tokens, and a
dead end ends the reply with the chat kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from backend.config.setting_input import read_setting_text
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.errors import SettingsError
from tests.fake_backend import EOS_ID, FAKE_VOCAB
from tests.grammar_fakes import give_word_grammar
from tests.helpers import chat_of, wait_until
from tests.tui.test_tui_snapshots import fake_backend, make_app, send
from tui.app import SamplescopeApp
from tui.chat.timeline import FORCED_MARK, ReplyTimeline
from tui.panel.setting_controls import setting_text
from tui.widgets.prob_panel import ProbPanel

SIZE = (120, 36)
GRAMMAR = 'root ::= " the" (" cat" | " dog" | " bird") " sat" (" yes" | " ok")'


def _constrained_reply(grammar: str, **changes: object) -> SamplescopeApp:
    backend = fake_backend()
    give_word_grammar(backend.fake, FAKE_VOCAB, EOS_ID)
    settings = DEFAULT_CHAT_SETTINGS.with_changes(grammar=grammar, **changes)
    return make_app(backend, settings=settings)


@pytest.mark.anyio
async def test_the_panel_and_timeline_show_the_grammar() -> None:
    app = _constrained_reply(GRAMMAR)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")  # the timeline
        await send(pilot, app, "hello cat")
        await wait_until(
            pilot,
            lambda: (
                bool(chat_of(app).conversation.replies)
                and bool(chat_of(app).conversation.replies[-1].finished)
            ),
        )
        chat_of(app).flush_now()
        await pilot.pause()
        reply = chat_of(app).conversation.replies[-1]
        assert reply.finished == "eos"
        steps = [token.step for token in reply.tokens]
        words = [FAKE_VOCAB[step.token_id] for step in steps]
        assert words[0] == " the" and words[2] == " sat" and words[-1] == FAKE_VOCAB[EOS_ID]
        assert [step.forced for step in steps] == [True, False, True, False, True]
        assert all(step.figure("grammar", "removed") is not None for step in steps)
        panel = app.query_one(ProbPanel)
        text = "\n".join("".join(part for part, _ in line) for line in panel._lines())
        assert "grammar (gbnf) removed" in text and "forced" in text
        timeline = app.query_one(ReplyTimeline)
        marks = str(timeline.query_one("#timeline-marks").render())
        assert marks.count(FORCED_MARK) >= 2  # the cursor covers the last one


@pytest.mark.anyio
async def test_a_dead_end_ends_the_reply_and_the_chat_goes_on() -> None:
    # min_tokens bans the end the finished grammar asks for: nothing is left.
    app = _constrained_reply('root ::= " the" " cat"', min_tokens=5)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hello cat")
        await wait_until(
            pilot,
            lambda: (
                bool(chat_of(app).conversation.replies)
                and bool(chat_of(app).conversation.replies[-1].finished)
            ),
        )
        first = chat_of(app).conversation.replies[-1]
        assert first.finished == "grammar"
        assert [FAKE_VOCAB[token.step.token_id] for token in first.tokens] == [" the", " cat"]
        app.live.current = app.live.current.with_changes(min_tokens=0)
        await send(pilot, app, "again")
        await wait_until(
            pilot,
            lambda: (
                len(chat_of(app).conversation.replies) == 2
                and bool(chat_of(app).conversation.replies[-1].finished)
            ),
        )
        assert chat_of(app).conversation.replies[-1].finished == "eos"


@pytest.mark.sampling_groups("core", "grammar")
def test_snapshot_a_forced_token_and_the_grammars_cuts(snap_compare: object) -> None:
    app = _constrained_reply(GRAMMAR)

    async def select(pilot: Pilot[object]) -> None:
        await pilot.press("f4")
        await send(pilot, app, "hello cat")
        await wait_until(
            pilot, lambda: not chat_of(app).generating and bool(chat_of(app).conversation.finished)
        )
        await pilot.press("ctrl+t", "left", "left", "left")
        await wait_until(pilot, lambda: chat_of(app).cursor == (0, 1))

    assert snap_compare(app, terminal_size=SIZE, run_before=select)  # type: ignore[operator]


def test_a_grammar_is_typed_on_one_line_or_loaded_from_a_file(tmp_path: Path) -> None:
    spec = BUILT_IN_REGISTRY.settings_by_name["grammar"]
    grammar = 'root ::= answer\nanswer ::= "yes" | "no"'
    shown = setting_text(spec, grammar)
    assert shown == 'root ::= answer⏎answer ::= "yes" | "no"'
    assert read_setting_text(spec, shown, None) == grammar
    path = tmp_path / "answer.gbnf"
    path.write_text(grammar + "\n", encoding="utf-8")
    assert read_setting_text(spec, f"@{path}", None) == grammar
    with pytest.raises(SettingsError, match="a readable UTF-8 file"):
        read_setting_text(spec, f"@{tmp_path / 'missing.gbnf'}", None)


def test_compare_takes_a_schema_from_a_file(tmp_path: Path) -> None:
    from tui.cli.options.setting_sets import parse_set

    path = tmp_path / "person.json"
    schema = '{"type": "object", "properties": {"ok": {"type": "boolean"}}}'
    path.write_text(schema, encoding="utf-8")
    settings = parse_set(f"t=0.7,json_schema=@{path}")
    assert (settings.temperature, settings.json_schema) == (0.7, schema)
    assert parse_set('grammar=root ::= "yes" | "no"').grammar == 'root ::= "yes" | "no"'


def test_the_grammar_group_names_the_grammar() -> None:
    from tui.panel.setting_controls import group_is_on, group_title

    lazy = DEFAULT_CHAT_SETTINGS.with_changes(grammar=GRAMMAR, grammar_triggers=("the",))
    schema = DEFAULT_CHAT_SETTINGS.with_changes(json_schema='{"type": "boolean"}')
    titles = [
        group_title("grammar", group_is_on("grammar", settings), settings)
        for settings in (DEFAULT_CHAT_SETTINGS, lazy, schema)
    ]
    assert titles == [
        "grammar (runs first)",
        "grammar (runs first)  ● lazy gbnf",
        "grammar (runs first)  ● json schema",
    ]
    assert group_title("dry", True, schema) == "DRY: repeated sequences  ● on"
