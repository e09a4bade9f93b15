"""The score screen with a second model: the text coloured token by token by its KLD,
the positions to jump to, both models' top candidates side by side, and the summary.

Model text is appended to `rich.text.Text` as plain text (never parsed as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.table import Table
from rich.text import Text

from backend.llama.pieces import visible_piece

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


def candidates_table(pair: PairScore, row: int) -> Table:
    """Both models' top candidates at a scored row, side by side."""
    result = pair.result
    d = result.divergence
    position = int(result.positions[row])
    token = visible_piece(pair.texts[position])
    table = Table(
        title=Text.assemble(
            (f"token {position} ", "bold"),
            (token, "bold"),
            f" · KLD {d.kld[row]:.4f} · reverse {d.kld_reverse[row]:.4f}"
            f" · Δp {100 * d.delta_p[row]:+.2f}%"
            f" · p base {d.p_base[row]:.4f} · p model {d.p_test[row]:.4f}",
        ),
        title_justify="left",
        expand=True,
        box=None,
        padding=(0, 1),
    )
    table.add_column(f"base: {pair.base_name}", ratio=1)
    table.add_column("p", justify="right", width=7)
    table.add_column("the model", ratio=1)
    table.add_column("p", justify="right", width=7)
    pairs = result.candidates
    if pairs is None:
        return table
    target = int(result.token_ids[row])
    for k in range(pairs.base_ids.shape[1]):
        base_id, test_id = int(pairs.base_ids[row, k]), int(pairs.test_ids[row, k])
        table.add_row(
            _candidate(pair, base_id, target),
            f"{pairs.base_probs[row, k]:.4f}",
            _candidate(pair, test_id, target),
            f"{pairs.test_probs[row, k]:.4f}",
        )
    return table


def _candidate(pair: PairScore, token: int, target: int) -> Text:
    """A candidate's text; the token that came is bold."""
    return Text(pair.shown.get(token, f"#{token}"), style="bold" if token == target else "")


def summary_text(pair: PairScore) -> Text:
    """One line: the rule, the main statistics."""
    s = pair.summary
    plan = pair.result.plan
    rule = "every position" if plan.every_position else f"chunks of {plan.n_ctx}, second halves"
    if s is None:
        return Text(f"against {pair.base_name}: {rule} · too few positions for statistics")
    return Text(
        f"against {pair.base_name} · {s.count} scored ({rule}) · mean KLD {s.kld.value:.4f}"
        f" · median {s.kld_at('Median'):.4f} · max {s.kld_at('Maximum'):.4f}"
        f" · same top {100 * s.same_top.value:.1f}% · RMS Δp {100 * s.rms_delta_p.value:.2f}%"
        f" · PPL model {s.ppl_test.value:.2f} / base {s.ppl_base.value:.2f}",
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


PAIR_COLUMNS = ("#", "token", "KLD", "Δp", "p base", "p model", "top base", "", "top model")
