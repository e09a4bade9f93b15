"""Compare: each column's token diff against the reference (replaced, inserted and
deleted spans, not only the first divergence) and each column's raw log-probability."""

from __future__ import annotations

import math

import pytest
from rich.text import Text
from textual.widgets import Static

from sampling.analysis.fork import find_fork, fork_summary
from sampling.analysis.reply_score import reply_score
from sampling.settings.record import SamplerSettings
from tests.helpers import HostApp, wait_done
from tests.tui.test_compare_view import FAKE_COLUMNS, SIZE, fake_screen
from tui.compare.column_text import DELETION_MARK, ColumnText
from tui.compare.columns import CompareColumn
from tui.compare.token_diff import token_diff
from tui.score_label import score_label
from tui.widgets.token_look import (
    DIVERGE_STYLE,
    INSERTED_STYLE,
    REPLACED_STYLE,
    SHARED_STYLE,
    TokenMarks,
)

pytestmark = pytest.mark.anyio


def test_golden_diff() -> None:
    reference = [1, 2, 3, 4, 5, 6, 7, 8]
    # 3 → 9 (replaced), 10 inserted after 5, 6 deleted, then back to 7 8.
    diff = token_diff(reference, [1, 2, 9, 4, 5, 10, 7, 8])
    assert diff.changes == (
        "same", "same", "replaced", "same", "same", "replaced", "same", "same"
    )  # fmt: skip
    assert (diff.replaced, diff.inserted, diff.deleted) == (2, 0, 0)
    diff = token_diff(reference, [1, 2, 4, 5, 11, 12, 6, 7, 8, 13])
    assert diff.changes == (
        "same", "same", "same", "same", "inserted", "inserted", "same", "same", "same",
        "inserted",
    )  # fmt: skip
    assert diff.deleted_before == {2: 1}  # token 3 is left out before the column's 3rd
    assert diff.summary() == "3 inserted · 1 deleted"
    ends_early = token_diff(reference, [1, 2, 3])
    assert ends_early.deleted_before == {3: 5} and ends_early.summary() == "5 deleted"
    assert token_diff(reference, reference).same
    # A frequent token is matched like any other (no junk heuristic).
    many = [0] * 300
    assert token_diff(many, [*many[:150], 5, *many[150:]]).inserted == 1


def test_a_live_diff_waits_while_the_columns_run() -> None:
    from tui.compare.token_diff import DIFF_EVERY, LiveDiff

    now = [100.0]
    live = LiveDiff(clock=lambda: now[0])
    reference, tokens = [1, 2, 3, 4, 5, 6], [1, 9, 3]
    live.update(reference[:4], tokens, ended=False)  # running: the common length only
    assert live.diff is not None and live.diff.changes == ("same", "replaced", "same")
    assert live.diff.deleted_before == {}  # the reference's 4th token is not "left out" yet
    assert not live.due(6, 3, ended=False)  # too soon after the last diff
    now[0] += DIFF_EVERY
    # Only the shared length counts while they run: 3 tokens in common, as last time.
    assert not live.due(6, 3, ended=False) and not live.due(4, 3, ended=False)
    assert live.due(6, 4, ended=False)  # one more token in common
    live.update(reference, tokens, ended=True)  # both ended: at once, the whole of both
    assert live.diff.deleted_before == {3: 3} and live.diff.deleted == 3
    assert not live.due(6, 3, ended=True)
    live.reset()
    assert live.diff is None and live.due(6, 3, ended=False)


def test_changes_style_whole_tokens_and_the_divergence_stays() -> None:
    marks = TokenMarks(divergence=2, changes=("same", "same", "replaced", "inserted", "same"))
    assert marks.look(0, 0.5).word == SHARED_STYLE
    assert marks.look(2, 0.5).word == DIVERGE_STYLE  # the first difference stays marked
    assert marks.look(3, 0.5) == (INSERTED_STYLE, INSERTED_STYLE)
    assert marks.look(4, 0.5).word == SHARED_STYLE  # back on the reference's tokens
    assert TokenMarks(changes=("replaced",)).look(0, 0.5).word == REPLACED_STYLE


async def test_columns_show_their_diff_and_log_probability() -> None:
    columns = [
        *FAKE_COLUMNS[:3],
        CompareColumn("t=0.5 k=3 again", SamplerSettings(temperature=0.5, top_k=3)),  # the same
    ]
    app = HostApp(lambda: fake_screen(columns))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.compare_screen
        assert screen is not None
        await wait_done(pilot, screen)
        views = screen.column_views
        reference = views[0].token_ids
        for view in views:
            steps = [t.step for t in view.tokens]
            label = score_label(reply_score(steps))
            assert label.startswith("logp −")
            stats = view.query_one(".column-stats", Static).render()
            assert label in str(stats).replace("\n", " · ")
            expected = sum(math.log(s.prob_unfiltered or 0.0) for s in steps)
            assert view.logprob_raw == pytest.approx(expected, abs=1e-9)
        assert views[0].diff is None  # the reference
        for view in views[1:]:
            diff = token_diff(reference, view.token_ids)
            assert view.diff == diff
            marker = str(view.query_one(".column-marker", Static).render())
            if diff.same:
                assert view.divergence is None
                continue
            joined = " · ".join(line.strip() for line in marker.split("\n"))
            at = view.divergence
            ends = (views[0].tokens, view.tokens)
            fork = find_fork(
                (reference, view.token_ids), [s[at].step if at < len(s) else None for s in ends]
            )
            summary = f"{fork_summary(fork)} · {diff.summary()}"
            assert f"◆ diverges at token {at + 1} · {summary}" == joined
            assert fork.verdict in ("near-tie", "disagreement", "ended")
            body = view.query_one(ColumnText)
            assert body.marks.changes == diff.changes
            drawn: Text = body.text()
            assert drawn.plain.count(DELETION_MARK) == len(diff.deleted_before)
        # Column 2 (t=0.8) leaves the reference at token 15 and comes back to it:
        # tokens after a changed span are the same again, which one divergence hides.
        changes = views[1].diff.changes if views[1].diff else ()
        first = changes.index("replaced") if "replaced" in changes else changes.index("inserted")
        assert "same" in changes[first:]
