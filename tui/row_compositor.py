"""A compositor that renders only the rows a repaint changes.

Textual's compositor answers a repaint by rendering every widget whose clip overlaps
the bounding box of the changed regions, each over its whole visible area; so a
token's line in the transcript also renders the screen, the columns, the status line
and the footer top to bottom, and one change at each end of the screen renders
everything between. `RowCompositor` renders only the widgets a changed region
overlaps, each from its first to its last changed row. What reaches the terminal is
the same: it writes only the changed spans either way (`ChopsUpdate`), and a full
render (a new screen, a snapshot) is Textual's own.

Written against textual 8.2.8's `Compositor` (pinned in pyproject.toml); the tests
compare its partial renders with the stock compositor's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


class RowCompositor(Compositor):
    """Textual's compositor, with partial renders restricted to the changed rows."""

    def render_partial_update(self) -> ChopsUpdate | None:
        """Render the changed regions (Textual's, with `_changed_rows` as the crop)."""
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
        rendered_lines = {y for y, _, _ in spans}
        chops = self._changed_chops(update_regions, rendered_lines)
        chop_ends = [cut_set[1:] for cut_set in self.cuts]
        return ChopsUpdate(chops, spans, chop_ends)

    def _changed_chops(
        self, changed: Sequence[Region], rendered_lines: set[int]
    ) -> Sequence[Mapping[int, Strip | None]]:
        """Textual's `_render_chops`, rendering each widget over its changed rows only."""
        cuts = self.cuts
        fromkeys = dict.fromkeys
        chops: list[dict[int, Strip | None]] = [fromkeys(cut_set[:-1]) for cut_set in cuts]
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            visible = intersection(region, clip)
            rows = _changed_rows(visible, changed)
            if rows is None:
                continue
            top, bottom = rows
            x, _, width, _ = visible
            strips = widget.render_lines(Region(x - region.x, top - region.y, width, bottom - top))
            first_cut, last_cut = visible.column_span
            for y, strip in zip(range(top, bottom), strips, strict=False):
                if y not in rendered_lines:
                    continue
                chops_line = chops[y]
                line_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                pieces = strip.divide([cut - x for cut in line_cuts[1:]])
                for cut, piece in zip(line_cuts, pieces, strict=False):
                    if chops_line.get(cut) is None:  # the front-most widget wins a cut
                        chops_line[cut] = piece
        return chops


def _changed_rows(visible: Region, changed: Sequence[Region]) -> tuple[int, int] | None:
    """The rows [top, bottom) of `visible` from its first to its last changed one."""
    overlaps = [overlap for overlap in (visible.intersection(r) for r in changed) if overlap]
    if not overlaps:
        return None
    return min(o.y for o in overlaps), max(o.bottom for o in overlaps)
