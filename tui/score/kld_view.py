"""The score screen with a second model: the text coloured token by token by its KLD,
the positions to jump to, both models' top candidates side by side, and the summary.
The second model is the test, the app's model the base (the reference), as
`samplescope kld --model SECOND --base APP_MODEL` names them.

Model text is appended to `rich.text.Text` as plain text (never parsed as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from backend.llama.pieces import visible_piece
from tui.widgets.phrases import Phrases

if TYPE_CHECKING:  # llama.cpp's bindings load when a text is scored, not with the app
    from backend.score.kld_pair import PairScore

#: KLD bands (nats) and their background, from agreement to a strong divergence.
KLD_BANDS: tuple[tuple[float, str], ...] = (
    (0.01, "on #1e3a26"),
    (0.1, "on #4a4a1c"),
    (1.0, "on #6b3a16"),
    (float("inf"), "on #7a1c1c"),
)
UNSCORED_STYLE = "dim"
SELECTED_STYLE = "reverse bold"


def kld_style(kld: float) -> str:
    """The background of a token with this KLD."""
    for upper, style in KLD_BANDS:
        if kld < upper:
            return style
    return KLD_BANDS[-1][1]


def legend() -> Text:
    """What the colours mean."""
    text = Text("KLD: ")
    lower = 0.0
    for upper, style in KLD_BANDS:
        label = f" <{upper:g} " if upper != float("inf") else f" ≥{lower:g} "
        text.append(label, style=style)
        text.append(" ")
        lower = upper
    text.append(" unscored", style=UNSCORED_STYLE)
    return text


def coloured_text(pair: PairScore, selected: int | None) -> Text:
    """The whole text, each scored token on its KLD's colour, `selected` (a row of the
    scored positions) reversed."""
    result = pair.result
    row_of = {int(p): row for row, p in enumerate(result.positions)}
    text = Text()
    for position, piece in enumerate(pair.texts):
        row = row_of.get(position)
        if row is None:
            text.append(piece, style=UNSCORED_STYLE)
            continue
        style = kld_style(float(result.divergence.kld[row]))
        if row == selected:
            style = f"{style} {SELECTED_STYLE}"
        text.append(piece, style=style)
    return text


def largest_first(pair: PairScore) -> list[int]:
    """Scored rows by KLD, largest first (ties: earlier first)."""
    kld = pair.result.divergence.kld
    return [int(i) for i in np.lexsort((np.arange(kld.size), -kld))]


def tops_differ(pair: PairScore) -> list[int]:
    """Scored rows where the two models' most probable tokens differ, in text order."""
    d = pair.result.divergence
    return [int(i) for i in np.flatnonzero(d.top_test != d.top_base)]


def next_in(order: list[int], current: int | None, *, cyclic_after: bool) -> int | None:
    """The row after `current` in `order`: by rank when `cyclic_after` is False (the
    next in the list after current's place), by position otherwise (the first one
    after current, wrapping)."""
    if not order:
        return None
    if current is None:
        return order[0]
    if cyclic_after:
        later = [row for row in order if row > current]
        return later[0] if later else order[0]
    if current in order:
        return order[(order.index(current) + 1) % len(order)]
    return order[0]


def candidates_table(pair: PairScore, row: int) -> Group:
    """Both models' top candidates at a scored row, side by side under a line of the
    row's figures (each column as wide as its widest candidate: no gap between a
    token and its probability)."""
    result = pair.result
    d = result.divergence
    position = int(result.positions[row])
    token = visible_piece(pair.texts[position])
    title = Phrases(
        [
            Text.assemble((f"token {position} ", "bold"), (token, "bold")),
            f"KLD {d.kld[row]:.4f}",
            f"reverse {d.kld_reverse[row]:.4f}",
            f"Δp {100 * d.delta_p[row]:+.2f}%",
            f"p base {d.p_base[row]:.4f}",
            f"p test {d.p_test[row]:.4f}",
        ]
    )
    table = Table(expand=False, box=None, padding=(0, 1), show_edge=False)
    table.add_column("base", max_width=40, no_wrap=True)  # the summary names both
    table.add_column("p", justify="right", width=6)
    table.add_column("", width=3)
    table.add_column("test", max_width=40, no_wrap=True)
    table.add_column("p", justify="right", width=6)
    pairs = result.candidates
    if pairs is None:
        return Group(title, table)
    target = int(result.token_ids[row])
    for k in range(pairs.base_ids.shape[1]):
        base_id, test_id = int(pairs.base_ids[row, k]), int(pairs.test_ids[row, k])
        table.add_row(
            _candidate(pair, base_id, target),
            f"{pairs.base_probs[row, k]:.4f}",
            "",
            _candidate(pair, test_id, target),
            f"{pairs.test_probs[row, k]:.4f}",
        )
    return Group(title, table)


def _candidate(pair: PairScore, token: int, target: int) -> Text:
    """A candidate's text; the token that came is bold."""
    return Text(pair.shown.get(token, f"#{token}"), style="bold" if token == target else "")


def summary_text(pair: PairScore) -> Phrases:
    """The models, the rule, the main statistics: phrases that wrap only between each
    other."""
    s = pair.summary
    plan = pair.result.plan
    rule = "every position" if plan.every_position else f"chunks of {plan.n_ctx}, second halves"
    kernels = {choice.kernels for choice in pair.weights.values()}
    weights = (
        f"weights {kernels.pop()}"
        if len(kernels) == 1
        else ", ".join(f"{role} {choice.kernels}" for role, choice in pair.weights.items())
    )
    models = [f"test {pair.test_name}", f"base {pair.base_name}"]
    if s is None:
        return Phrases([*models, rule, "too few positions for statistics", weights])
    return Phrases(
        [
            *models,
            f"{s.count} scored ({rule})",
            f"mean KLD {s.kld.value:.4f}",
            f"median {s.kld_at('Median'):.4f}",
            f"max {s.kld_at('Maximum'):.4f}",
            f"same top {100 * s.same_top.value:.1f}%",
            f"RMS Δp {100 * s.rms_delta_p.value:.2f}%",
            f"PPL test {s.ppl_test.value:.2f}",
            f"PPL base {s.ppl_base.value:.2f}",
            weights,
        ],
        style="bold",
    )


def pair_row(pair: PairScore, row: int) -> tuple[object, ...]:
    """A table row: position, token (on its KLD's colour), KLD, Δp, both p, both tops."""
    result = pair.result
    d = result.divergence
    position = int(result.positions[row])
    kld = float(d.kld[row])
    token = Text(visible_piece(pair.texts[position]), style=kld_style(kld))
    top_base, top_test = int(d.top_base[row]), int(d.top_test[row])
    differ = "≠" if top_base != top_test else "="
    return (
        position,
        token,
        f"{kld:.4f}",
        f"{100 * d.delta_p[row]:+.2f}%",
        f"{d.p_base[row]:.4f}",
        f"{d.p_test[row]:.4f}",
        Text(pair.shown.get(top_base, f"#{top_base}")),
        differ,
        Text(pair.shown.get(top_test, f"#{top_test}")),
    )


PAIR_COLUMNS = ("#", "token", "KLD", "Δp", "p base", "p test", "top base", "", "top test")
