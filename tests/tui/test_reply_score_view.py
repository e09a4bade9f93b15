"""A finished reply shows its score after its last token: raw log-probability and
perplexity, the figures `generate --json` gives."""

from __future__ import annotations

import math

import pytest

from sampling.analysis.reply_score import ReplyScore, reply_score
from tests.fake_backend import FakeBackend
from tests.helpers import chat_of, nth_reply_finished, type_message
from tests.section_steps import A, T, steps_of
from tui.app import SamplescopeApp
from tui.chat.reply_view import ReplyView
from tui.score_label import score_label, section_score_line

pytestmark = pytest.mark.anyio


def score(logprob: float | None, n_tokens: int = 4) -> ReplyScore:
    perplexity = None if logprob is None else math.exp(-logprob / n_tokens)
    return ReplyScore(n_tokens, logprob, -1.0, perplexity, 1.0, 0, 0.01)


def test_the_label_is_short_and_says_what_is_unknown() -> None:
    assert score_label(score(-4.0)) == "logp −4.00 · ppl 2.72"
    assert score_label(score(-40.0)) == "logp −40.00 · ppl 22026"  # e^10: no decimals
    assert score_label(score(-20.0)) == "logp −20.00 · ppl 148.4"
    assert score_label(score(-math.inf)) == "logp −∞"
    assert score_label(score(None)) == "" and score_label(None) == ""


def test_a_thinking_reply_labels_each_section() -> None:
    # Thinking: 3 tokens at -2 nats each; answer: 1 token at -1 nat.
    steps = steps_of([1, 2, 3, 4], [math.exp(-2)] * 3 + [math.exp(-1)], [T, T, T, A])
    assert score_label(reply_score(steps)) == (
        "logp −7.00 · ppl 5.75 · thinking ppl 7.39 · answer ppl 2.72"
    )
    ended_thinking = steps_of([1, 2], [0.5, 0.0], [T, T])
    assert score_label(reply_score(ended_thinking)) == "logp −∞ · thinking ppl ∞"
    cut = steps_of([1, 2, 3], [0.5, 0.5, 0.0], [T, T, A])
    assert score_label(reply_score(cut)) == "logp −∞ · thinking ppl 2.00 · answer ppl ∞"


async def test_a_finished_reply_ends_with_its_score() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=12, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        chat_of(app).flush_now()
        await pilot.pause()
        view = app.query_one(ReplyView)
        expected = score_label(
            reply_score([t.step for t in chat_of(app).conversation.replies[0].tokens])
        )
        assert expected.startswith("logp −")
        assert view.plain_text().rstrip().endswith(expected)
        # The cursor moves the marks, not the score: it is drawn once, at the end.
        await pilot.press("ctrl+t", "left")
        assert view.plain_text().count("logp") == 1


@pytest.mark.slow
async def test_the_score_is_never_broken_across_lines() -> None:
    app = SamplescopeApp(FakeBackend(), max_tokens=24, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_message(pilot, app, "hello")
        await nth_reply_finished(pilot, app)
        chat_of(app).flush_now()
        expected = score_label(
            reply_score([t.step for t in chat_of(app).conversation.replies[0].tokens])
        )
        view = app.query_one(ReplyView)
        on_own_line = 0
        for width in range(100, 139):  # every place the reply's last line can end
            await pilot.resize_terminal(width, 36)
            await pilot.pause()
            lines = view.plain_text().rstrip().splitlines()
            assert lines[-1].endswith(expected), (width, lines[-2:])
            on_own_line += lines[-1] == expected
        assert on_own_line  # some widths leave no room after the text
        # Narrower than the label (a pane no terminal width gives now that the panels
        # fold on narrow terminals): it breaks between its parts only.
        view.styles.width = len(expected) - 4
        await pilot.pause()
        lines = view.plain_text().rstrip().splitlines()
        logp, ppl = expected.split(" · ")
        assert lines[-2].endswith(logp) and lines[-1] in (f"· {ppl}", ppl), lines[-2:]


def test_generate_v_s_line_of_the_sections() -> None:
    steps = steps_of([1, 2, 3, 4], [math.exp(-2)] * 3 + [math.exp(-1)], [T, T, T, A])
    assert section_score_line(reply_score(steps)) == (
        "thinking: 3 tokens, logp/token −2.000, ppl 7.39; answer: 1 token, logp/token −1.000,"
        " ppl 2.72"
    )
    assert section_score_line(reply_score(steps_of([1], [0.5], [A]))) == ""
    assert section_score_line(None) == ""
