"""A compositor that renders only the rows a repaint changes.

Textual's compositor answers a repaint by rendering every widget whose clip overlaps
the bounding box of the changed regions, each over its whole visible area; so a
token's line in the transcript also renders the screen, the columns, the status line
and the footer top to bottom, and one change at each end of the screen renders
everything between. `RowCompositor` renders only the widgets a changed region
overlaps, each from its first to its last changed row where it shows: a widget whose
part of a changed row is all covered by widgets in front of it (a container behind
its children) is not rendered for that row. What reaches the terminal is
the same: it writes only the changed spans either way (`ChopsUpdate`), and a full
render (a new screen, a snapshot) is Textual's own.

Written against textual 8.2.8's `Compositor` (pinned in pyproject.toml); the tests
compare its partial renders with the stock compositor's. Textual has no public way to
give a screen another compositor: `use_row_compositor` sets the screen's private
`_compositor`, the one place that does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


def use_row_compositor(screen: Screen[Any]) -> None:
    """Give `screen` the row compositor (at its construction, before it is shown)."""
    screen._compositor = RowCompositor()


class RowCompositor(Compositor):
    """Textual's compositor, with partial renders restricted to the changed rows."""

    def render_partial_update(self) -> ChopsUpdate | None:
        """Render the changed regions: Textual's, with each widget rendered only over the
        changed rows where it shows (`_changed_chops`)."""
        screen_region = self.size.region
        update_regions = [
            region
            for region in (r.intersection(screen_region) for r in self._dirty_regions)
            if region
        ]
        self._dirty_regions.clear()
        if not update_regions:
            return None
        spans = list(self._regions_to_spans(update_regions))
        chops = self._changed_chops(update_regions, spans)
        chop_ends = [cut_set[1:] for cut_set in self.cuts]
        return ChopsUpdate(chops, spans, chop_ends)

    def _changed_chops(
        self, changed: Sequence[Region], spans: Sequence[tuple[int, int, int]]
    ) -> Sequence[Mapping[int, Strip | None]]:
        """Textual's `_render_chops`, rendering a widget only over the changed rows
        where it shows: a widget behind others that already fill every written chop
        of a row (a container behind its children) is not rendered there."""
        cuts = self.cuts
        fromkeys = dict.fromkeys
        chops: list[dict[int, Strip | None]] = [fromkeys(cut_set[:-1]) for cut_set in cuts]
        written: dict[int, list[tuple[int, int]]] = {}
        for y, x1, x2 in spans:
            written.setdefault(y, []).append((x1, x2))
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            visible = intersection(region, clip)
            rows = _changed_rows(visible, changed)
            if rows is None:
                continue
            first_cut, last_cut = visible.column_span
            line_cuts = {
                y: [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                for y in range(*rows)
                if y in written
            }
            shown = [
                y for y, row_cuts in line_cuts.items() if _open(chops[y], row_cuts, written[y])
            ]
            if not shown:
                continue
            top, bottom = shown[0], shown[-1] + 1
            x, _, width, _ = visible
            strips = widget.render_lines(Region(x - region.x, top - region.y, width, bottom - top))
            for y, strip in zip(range(top, bottom), strips, strict=False):
                row_cuts = line_cuts.get(y)
                if row_cuts is None:
                    continue  # not written
                chops_line = chops[y]
                pieces = strip.divide([cut - x for cut in row_cuts[1:]])
                for cut, piece in zip(row_cuts, pieces, strict=False):
                    if chops_line.get(cut) is None:  # the front-most widget wins a cut
                        chops_line[cut] = piece
        return chops


def _open(
    chops_line: Mapping[int, Strip | None],
    row_cuts: Sequence[int],
    row_spans: Sequence[tuple[int, int]],
) -> bool:
    """Whether a widget over `row_cuts` would fill a chop the update writes.

    A chop [cut, end) is written when `ChopsUpdate` does not pass it over for a span
    (x1, x2): when cut <= x2 and end > x1. Only an empty one can be filled.
    """
    for cut, end in pairwise(row_cuts):
        if chops_line.get(cut) is None and any(cut <= x2 and end > x1 for x1, x2 in row_spans):
            return True
    return False


def _changed_rows(visible: Region, changed: Sequence[Region]) -> tuple[int, int] | None:
    """The rows [top, bottom) of `visible` from its first to its last changed one."""
    overlaps = [overlap for overlap in (visible.intersection(r) for r in changed) if overlap]
    if not overlaps:
        return None
    return min(o.y for o in overlaps), max(o.bottom for o in overlaps)
