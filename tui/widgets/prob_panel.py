"""The probability panel: the top candidates of one step as bars, with the cutoff."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from sampling.records import Candidate, Step
from sampling.samplers.base import description, percent_text
from sampling.samplers.logit_bias import LogitBiasParams
from sampling.samplers.temperature import TemperatureParams
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from sampling.settings.summary import settings_summary
from tui.widgets.prob_cuts import BANS, CutItem, layout_rows, row_label

_PIECE_WIDTH = 12
_NUMBER_WIDTH = 6
_HEADER_LINES = 4
_Line = list[tuple[str, str]]  # (text, style) runs of one line


def _fit(piece: str, width: int) -> str:
    if len(piece) > width:
        return piece[: width - 1] + "…"
    return f"{piece:<{width}}"


class ProbPanel(Widget):
    """Shows one step: candidates with probability before and after the filters.

    Each row's bar draws both: █ as far as both reach, then ▒ to where the probability
    after the filters reaches (a kept token gains what the filters removed) or ░ to
    where the one before reaches (a token the filters removed, or lowered).

    Drawn with the line API from pre-styled segments: it redraws at every frame of a
    decode, so it stays cheap.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "probabilities"
        self._step: Step | None = None
        self._title = ""
        self._pieces: Callable[[int], str] = lambda token_id: f"#{token_id}"
        self._cached_for: tuple[int, str, Size] | None = None
        self._strips: list[Strip] = []

    @property
    def step(self) -> Step | None:
        """The step shown."""
        return self._step

    def show(self, step: Step | None, title: str, pieces: Callable[[int], str]) -> None:
        """Show `step` (None: nothing yet, `title` then says why), titled `title`."""
        if step is self._step and title == self._title:
            return
        self._step = step
        self._title = title
        self._pieces = pieces
        self.refresh()

    def render_line(self, y: int) -> Strip:
        key = (id(self._step), self._title, self.size)
        if key != self._cached_for:
            self._cached_for = key
            base = self.rich_style  # computed from the ancestors: once per redraw
            self._strips = [self._strip(line, base) for line in self._lines()]
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cached_for = None

    def _strip(self, line: _Line, base: Style) -> Strip:
        width = self.size.width
        segments = [Segment(text, base + _style(style)) for text, style in line if text]
        strip = Strip(segments)
        if strip.cell_length > width:
            strip = strip.crop(0, max(0, width - 1)).extend_cell_length(width - 1, base)
            strip = Strip([*strip, Segment("…", base)])
        return strip.extend_cell_length(width, base)

    def _lines(self) -> list[_Line]:
        width = max(20, self.size.width)
        step = self._step
        if step is None:
            note = self._title or "No token yet: send a message."
            return [[(line, "grey50")] for line in textwrap.wrap(note, width)]
        chosen_piece = self._pieces(step.token_id)
        draw = "—" if step.draw is None else f"{step.draw:.4f}"
        order = _temperature_note(step)
        bar_width = max(4, width - 2 - _PIECE_WIDTH - 1 - 1 - 2 * (_NUMBER_WIDTH + 1))
        lines: list[_Line] = [
            [
                (self._title, "bold"),
                ("  ", ""),
                (_fit(chosen_piece, 14).rstrip(), "bold reverse"),
                (f" · p {step.prob:.3f}", ""),
            ],
            [(f"H {step.entropy:.2f} nats · u {draw} · {step.n_kept} kept · {order}", "")],
            *_unit_lines(step, self._pieces),
            [(settings_summary(step.settings, style="fixed"), "grey62")],
            [
                (f"  {'token':<{_PIECE_WIDTH}} {_bar_legend(bar_width):<{bar_width}} ", "grey62"),
                (f"{'before':>{_NUMBER_WIDTH}} {'after':>{_NUMBER_WIDTH}}", "grey62"),
            ],
        ]
        bans = [
            token
            for token, bias in step.settings.of(LogitBiasParams).logit_bias
            if bias == -math.inf
        ]
        described = len(step.reports)
        rows = max(1, self.size.height - _HEADER_LINES - 1 - (1 if bans else 0) - described)
        candidates = step.candidates[:rows]  # built on each access: take it once
        removed_by = [c.removed_by for c in candidates]
        kept = [c.kept for c in candidates]
        registry = registry_of(step.settings)
        for item in layout_rows(kept, removed_by, step.cut_by, step.n_kept, registry):
            if isinstance(item, CutItem):
                lines.append(_cut_line(item.text, width, "grey50" if item.quiet else "bold red"))
            else:
                candidate = candidates[item.index]
                lines.append(self._row(step, candidate, bar_width, item.removed_by))
        if bans:
            shown = " ".join(self._pieces(token) for token in bans)
            lines.append([("⊘ banned by logit bias: ", "bold red"), (shown, "grey62")])
        return lines

    def _row(self, step: Step, candidate: Candidate, bar_width: int, removed_by: str) -> _Line:
        chosen = candidate.token_id == step.token_id
        banned = removed_by in BANS
        piece_style = "bold yellow" if chosen else ("" if candidate.kept else "grey50")
        if banned:
            piece_style = "grey50 strike"
        bar_colour = "yellow" if chosen else ("green" if candidate.kept else "red")
        after = min(round(candidate.prob_after * bar_width), bar_width)
        before = min(round(candidate.prob_before * bar_width), bar_width)
        both = min(before, after)
        if candidate.kept:
            shown_after = percent_text(candidate.prob_after)
        else:
            shown_after = row_label(removed_by, registry_of(step.settings)) if removed_by else "—"
        marker = (
            ("▶ ", "bold yellow")
            if chosen
            else ("⊘ ", "bold red")
            if banned
            else ("  ", "bold yellow")
        )
        return [
            marker,
            (_fit(self._pieces(candidate.token_id), _PIECE_WIDTH), piece_style),
            (" ", ""),
            ("█" * both, bar_colour),
            ("▒" * (after - both), bar_colour),  # the filters' renormalising gain
            ("░" * (before - both), "grey50"),  # the mass the filters took
            (" " * (bar_width - max(before, after) + 1), ""),
            (f"{percent_text(candidate.prob_before):>{_NUMBER_WIDTH}} ", "grey70"),
            (f"{shown_after:>{_NUMBER_WIDTH}}", "bold" if candidate.kept else "grey50"),
        ]


BAR_LEGENDS = ("▒ gained ░ lost", "▒+ ░−")
"""Over the bars, the first that fits: each bar is both probabilities, before the
filters and after, drawn over each other: █ where they overlap, ▒ what the token
gained (after reaches further), ░ what it lost (before reaches further)."""


def _bar_legend(width: int) -> str:
    return next((legend for legend in BAR_LEGENDS if len(legend) <= width), "")


def _switched_on(name: str, settings: SamplerSettings) -> bool:
    """Whether the unit `name` is on under `settings` (a plugin, or a unit not
    loaded: on; a plugin's own code is not run here)."""
    registry = registry_of(settings)
    unit = registry.units_by_name.get(name)
    return unit is None or registry.is_plugin(name) or unit.is_on(settings)


def _temperature_note(step: Step) -> str:
    """Where the temperature ran, or the one dynamic temperature chose."""
    settings = step.settings
    order = settings.order
    # The units that read the order and ran (a unit switched off does not count).
    reading = [
        name
        for name in order
        if name not in registry_of(settings).logits_samplers
        and (name == "temperature" or _switched_on(name, settings))
    ]
    if settings.of(TemperatureParams).dynatemp_range > 0:
        note = f"T used {step.temperature:.2f}"
    elif "temperature" not in order:
        note = "no T"
    elif reading[-1] == "temperature":
        note = "T last"
    elif reading[0] == "temperature":
        note = "T first"
    else:
        note = f"T {reading.index('temperature') + 1}."
    return note


def _unit_lines(step: Step, pieces: Callable[[int], str]) -> list[_Line]:
    """A line for each unit that reported figures of the step, in the words of the
    unit (`SamplerUnit.describe`): the grammar's removed mass, mirostat's μ, the
    token guidance raised the most (as `pieces` shows it)…"""
    units = registry_of(step.settings).units_by_name
    return [
        [(description(units.get(name), name, report, step.settings, pieces), "magenta")]
        for name, report in step.reports.items()
    ]


def _cut_line(label: str, width: int, style: str = "bold red") -> _Line:
    body = f"── {label} "
    return [(body + "─" * max(0, width - len(body)), style)]


@lru_cache(maxsize=64)
def _style(name: str) -> Style:
    return Style.parse(name) if name else Style()
