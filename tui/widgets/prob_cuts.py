"""Where the probability panel draws its cut lines, and what each removed row says.

Pure layout (no widgets): given which candidate rows were kept and which sampler
removed each of the others, `layout_rows` returns the rows and the cut lines between
them. A chain of filters that keep the most probable tokens cuts the tail (one line
under the last row kept); XTC removes the head (a line over the first row kept,
pointing up); a sampler that keeps a set that is not a run of rows (typical-p) gets
one line on top and each removed row names its sampler; a ban (the logit bias,
min_tokens) is shown on its own row wherever it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sampling.built_in import BUILT_IN_REGISTRY, BUILT_IN_UNITS
from sampling.settings.registry import Registry

BANS: frozenset[str] = frozenset(
    unit.name for unit in BUILT_IN_UNITS if unit.kind == "logits" and not unit.placement.in_order
)
"""The `removed_by` of a banned token (-inf): the logit bias, min_tokens."""

OLD_NAMES: dict[str, str] = {"typical_p": "typ_p", "mirostat_v2": "mirostat"}
"""The names older records may hold, each with the unit it names now (whose labels it
shows)."""

CUT_LABELS: dict[str, str] = {"greedy": "greedy", "none": "none"}
"""Names on the bars of the two cut names no unit has."""


def row_label(name: str, registry: Registry = BUILT_IN_REGISTRY) -> str:
    """A sampler's name on a removed row, at most 6 cells: "typ-p", "xtc", "ban"."""
    rows = registry.row_labels
    label = rows.get(name) or rows.get(OLD_NAMES.get(name, "")) or sampler_label(name, registry)
    return label[:6]


def sampler_label(name: str, registry: Registry = BUILT_IN_REGISTRY) -> str:
    """A sampler's name on the bars (at most 8 cells): "top-k", "typical", "xtc", "ban".

    The registry says it (a plugin's label included), then for an older record's
    name the unit's it names now.
    """
    labels = registry.labels
    return (
        labels.get(name)
        or labels.get(OLD_NAMES.get(name, ""))
        or CUT_LABELS.get(name)
        or name.replace("_", "-")
    )


@dataclass(frozen=True, slots=True)
class RowItem:
    """One candidate row.

    Attributes:
        index: The candidate's row in the table.
        removed_by: The sampler named on the row ("" when the row says nothing more
            than the cut line above or below it).
    """

    index: int
    removed_by: str


@dataclass(frozen=True, slots=True)
class CutItem:
    """A cut line between rows.

    Attributes:
        text: What the line says.
        quiet: A line that marks no cut ("no cut"), drawn dim.
    """

    text: str
    quiet: bool = False


Item = RowItem | CutItem


def layout_rows(
    kept: Sequence[bool],
    removed_by: Sequence[str],
    cut_by: str,
    n_kept: int,
    registry: Registry = BUILT_IN_REGISTRY,
) -> list[Item]:
    """The rows and cut lines of one step, top to bottom.

    Args:
        kept: Per row shown, whether it was kept.
        removed_by: Per row shown, the sampler that removed it ("" when kept).
        cut_by: The step's last sampler that removed tokens ("none": nothing cut).
        n_kept: How many tokens were kept in all (the rows shown may be fewer).
        registry: The units the cut lines name (the step's settings').
    """

    def label(name: str) -> str:
        return sampler_label(name, registry)

    count = len(kept)
    # A ban is drawn on its row; it does not decide where the cut lines go.
    placed = [i for i in range(count) if removed_by[i] not in BANS]
    kept_rows = [i for i in placed if kept[i]]
    cut_rows = [i for i in placed if not kept[i]]
    if not cut_rows:
        if cut_by == "none" or cut_by in BANS:
            closing = CutItem(f"no cut · {n_kept} kept", quiet=True)
        else:
            closing = CutItem(f"✂ {label(cut_by)} below · {n_kept} kept")
        return [*_rows(range(count), removed_by, named=()), closing]
    if not kept_rows:  # every row shown was removed: the kept ones are further down
        head = CutItem(f"✂ {label(removed_by[cut_rows[0]])} · kept rows below")
        return [head, *_rows(range(count), removed_by, named=_named(cut_rows, removed_by, ""))]
    first, last = kept_rows[0], kept_rows[-1]
    contiguous = all(kept[i] for i in placed if first <= i <= last)
    if not contiguous:  # the kept set is not a run of rows: every removed row says why
        top = CutItem(f"✂ {label(cut_by)} · {n_kept} kept, not the top {n_kept}")
        return [top, *_rows(range(count), removed_by, named=cut_rows)]
    head_rows = [i for i in cut_rows if i < first]
    tail_rows = [i for i in cut_rows if i > last]
    items: list[Item] = []
    head_by = removed_by[head_rows[0]] if head_rows else ""
    tail_by = removed_by[tail_rows[0]] if tail_rows else ""
    named = _named(head_rows, removed_by, head_by) + _named(tail_rows, removed_by, tail_by)
    for index in range(count):
        if head_rows and index == first:
            items.append(CutItem(f"✂ {label(head_by)} ↑ removed the top · {n_kept} kept"))
        if tail_rows and index == tail_rows[0]:
            items.append(CutItem(f"✂ {label(tail_by or cut_by)} · {n_kept} kept"))
        items.extend(_rows([index], removed_by, named))
    return items


def _named(rows: Sequence[int], removed_by: Sequence[str], line_by: str) -> list[int]:
    """The removed rows whose sampler is not the one their cut line names."""
    return [i for i in rows if removed_by[i] and removed_by[i] != line_by]


def _rows(
    indices: Sequence[int] | range, removed_by: Sequence[str], named: Sequence[int]
) -> list[Item]:
    shown = set(named)
    return [
        RowItem(i, removed_by[i] if i in shown or removed_by[i] in BANS else "") for i in indices
    ]
