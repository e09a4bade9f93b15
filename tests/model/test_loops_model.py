"""A real loop of the default model: greedy on a poem, SmolLM2 repeats a 35-token
block of lines. Found, stopped on (`generate --stop-on-loop`), marked in the app, its
why view, and escaped by going back to where it began."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import OptionList

from backend.bench.loops import format_result, run_loop_bench
from backend.config.config import Config
from backend.session.llama_backend import LlamaBackend
from backend.session.loop_watch import LoopGuard
from sampling.analysis.loops import LoopRule, find_loop, first_loop
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tests.helpers import chat_of, nth_reply_finished, send_message, wait_until
from tui.app import SamplescopeApp
from tui.chat.timeline import LOOP_MARK, ReplyTimeline
from tui.cli.main import main
from tui.loops.why_screen import LoopWhyScreen
from tui.widgets.alternatives import AlternativesScreen

PROMPT = "Write a poem about the sea."
MODEL_FLAGS = ["--threads", "1", "--ctx", "2048", "--batch", "64"]
GREEDY = DEFAULT_CHAT_SETTINGS.with_changes(temperature=0.0)
RULE = LoopRule()  # periods 1 to 128, 4 copies: vLLM's rule with our defaults


def generate(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, object]:
    argv = ["generate", PROMPT, "-t", "0", "--max-tokens", "200", "--json", *MODEL_FLAGS]
    assert main([*argv, *flags]) == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_generate_finds_and_stops_on_the_loop(capsys: pytest.CaptureFixture[str]) -> None:
    marked = generate(capsys)
    tokens = list(marked["token_ids"])  # type: ignore[call-overload]
    assert marked["finish_reason"] == "max_tokens"
    found = first_loop(tokens, RULE)
    assert found is not None and found.period > 20  # a block of lines, not a word
    assert "\n" in str(marked["text"])
    loop = find_loop(tokens)
    assert loop is not None and marked["loop"] == loop.to_dict()
    stopped = generate(capsys, "--stop-on-loop")
    assert stopped["finish_reason"] == "loop"
    assert stopped["loop"] == found.to_dict()
    assert stopped["token_ids"] == tokens[: found.end]  # stopped on its 4th copy's end
    # The rule on the command line: with 3 copies an earlier, shorter repeat counts.
    sooner = generate(capsys, "--stop-on-loop=1,128,3")
    earlier = first_loop(tokens, LoopRule(1, 128, 3))
    assert earlier is not None and earlier.end < found.end
    assert sooner["finish_reason"] == "loop" and sooner["loop"] == earlier.to_dict()
    assert sooner["token_ids"] == tokens[: earlier.end]


pytestmark = pytest.mark.anyio


async def test_the_app_marks_stops_explains_and_escapes_the_loop(
    llama_backend: LlamaBackend,
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend,
        settings=GREEDY,
        max_tokens=200,
        cursor_blink=False,
        config=Config(loops=LoopGuard("stop", RULE)),
    )
    async with app.run_test(size=(140, 44)) as pilot:
        first = await send_message(pilot, app, PROMPT)
        assert first.reason == "loop" and first.loop is not None
        loop = first.loop
        assert loop == find_loop(list(first.token_ids)) and loop.count == RULE.min_count
        assert "stopped on a loop" in str(app.query_one("#status").render())
        await pilot.press("f4")
        await pilot.pause()
        x = chat_of(app).panel(ReplyTimeline).x_of(loop.start)
        assert x is not None and str(app.query_one("#timeline-marks").render())[x] == LOOP_MARK

        await pilot.press("f9")
        await wait_until(pilot, lambda: isinstance(app.screen, LoopWhyScreen))
        screen = app.screen
        assert isinstance(screen, LoopWhyScreen)
        cells = [cell for row in screen.rows for cell in row]
        assert len(cells) == loop.period * loop.count
        assert all(cell.raw is not None for cell in cells)  # the reply's logits kept
        # The climb: the model is surer of the repeat in its last copy than its first.
        climbs = [
            (screen.rows[-1][k].raw or 0.0) - (screen.rows[0][k].raw or 0.0)
            for k in range(loop.period)
        ]
        assert sum(climbs) > 0

        # Out of it: back to the loop's first token, its best other candidate.
        step = chat_of(app).conversation.replies[-1].tokens[loop.start].step
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AlternativesScreen))
        await wait_until(pilot, lambda: isinstance(app.focused, OptionList))
        rank = next(r for r, t in enumerate(step.table.token_ids) if t != step.token_id)
        await pilot.press(*["down"] * rank, "enter")
        second = await nth_reply_finished(pilot, app, 2)
        assert second.token_ids[: loop.start] == first.token_ids[: loop.start]
        assert second.token_ids[loop.start] == int(step.table.token_ids[rank])
        assert second.loop != loop
        branch = chat_of(app).conversation.replies[-1]
        assert branch.fork_at == loop.start and branch.parent is not None


def test_the_loop_bench_times_the_watch_against_the_sampler(default_model_path: Path) -> None:
    result = run_loop_bench(default_model_path, n_threads=1, repeats=2)
    assert result.tokens == 200 and result.loop is not None and result.loop.period == 35
    assert result.watch_us > 0 and result.sampler_us > 0
    assert "watch/sampler" in format_result(result)


async def test_banning_the_loop_there_goes_on_and_keeps_the_attempt_as_a_ghost(
    llama_backend: LlamaBackend,
) -> None:
    llama_backend.reset()
    app = SamplescopeApp(
        llama_backend,
        settings=GREEDY,
        max_tokens=200,
        cursor_blink=False,
        config=Config(loops=LoopGuard("stop", RULE)),
    )
    async with app.run_test(size=(140, 44)) as pilot:
        first = await send_message(pilot, app, PROMPT)
        loop = first.loop
        assert first.reason == "loop" and loop is not None
        old = chat_of(app).conversation.replies[-1]
        await pilot.press("f9")
        await wait_until(pilot, lambda: isinstance(app.screen, LoopWhyScreen))
        await pilot.press("x")
        second = await nth_reply_finished(pilot, app, 2)
        assert second.token_ids[: loop.start] == first.token_ids[: loop.start]
        assert second.token_ids[loop.start] != first.token_ids[loop.start]
        assert second.stats.discarded_tokens == loop.period  # the copy sampled again
        branch = chat_of(app).conversation.replies[-1]
        assert branch.parent is old and branch.fork_at == loop.start
        [ghost] = branch.ghosts
        ghost_ids = [t.step.token_id for t in ghost.tokens]
        assert ghost_ids[loop.start : loop.start + loop.period] == list(
            first.token_ids[loop.start : loop.start + loop.period]
        )
        assert branch.tokens[loop.start].step.settings.logit_bias  # the ban, recorded
