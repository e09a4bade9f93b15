"""The what-if panel: a past step recomputed under the sampling panel's settings.

It takes the probability panel's place while what-if is on: a header saying which
step it is, where its logits came from, whether the settings are the step's own or
which of them differ, what the step chose then and what it would now, and below it
the recomputed step drawn as the probability panel draws a step (bars, kept count,
the cut and which sampler made it). What-if (`tui.chat.whatif.WhatIf`) computes and
shows it; the panel tells it where the selection went.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from backend.session.sweep_result import temperature_place
from sampling.records import Step
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from tui.chat.selection import ChatPanel, PanelHost, Selection
from tui.widgets.prob_panel import ProbPanel
from tui.widgets.token_text import TokenPieces


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(_shown(v) for v in value) or "—"
    return str(value)


def settings_diff(own: SamplerSettings, current: SamplerSettings) -> list[str]:
    """Each setting that differs, as "name own→current", in the settings' order; the
    chain's order (a list of every unit) as where it runs the temperature."""
    changes = []
    for spec in registry_of(current).settings:
        before, after = getattr(own, spec.name), getattr(current, spec.name)
        if before == after:
            continue
        if spec.name == "samplers":
            was, now = temperature_place(own), temperature_place(current)
            changes.append(f"order t-{was}→t-{now}" if was != now else "order: another")
        else:
            changes.append(f"{spec.name} {_shown(before)}→{_shown(after)}")
    return changes


def reseeded(own: SamplerSettings, current: SamplerSettings) -> bool:
    """Whether `current` draws from another random stream than `own` (the step's)."""
    return (own.seed, own.rng) != (current.seed, current.rng)


def header_text(
    title: str,
    stored: Step,
    current: SamplerSettings,
    pieces: TokenPieces,
    status: str,
) -> Text:
    """The what-if header (see the module doc); model text is appended literally."""
    text = Text()
    text.append(title, style="bold")
    text.append(f" · {status}\n", style="italic")
    own = stored.settings
    changes = settings_diff(own, current)
    if changes:
        text.append("current settings, not the step's own: ", style="bold yellow")
        text.append("; ".join(changes) + "\n")
        if reseeded(own, current):
            text.append(f"a fresh draw: seed {current.seed}'s uniform for this token\n")
    else:
        text.append("the step's own settings\n", style="bold green")
    text.append("then ")
    text.append(pieces(stored.token_id)[:14], style="bold reverse")
    text.append(f" · p {stored.prob:.3f} · {stored.n_kept} kept · cut by {stored.cut_by}\n")
    text.append("b: branch · y: copy as command · esc: leave", style="grey62")
    return text


class WhatIfMode(Protocol):
    """What-if, as its panel sees it."""

    def follow(self, cursor: tuple[int, int] | None) -> None:
        """The selection moved: what-if follows the cursor (off when it leaves)."""
        ...

    def update(self) -> None:
        """Recompute the step if anything changed, and draw it."""
        ...


class WhatIfHost(PanelHost, Protocol):
    """The chat view, with its what-if mode."""

    whatif: WhatIfMode


class WhatIfPanel(Vertical, ChatPanel):
    """The header and the recomputed step (see the module doc); hidden until used."""

    NAME = "whatif"
    host: WhatIfHost
    DEFAULT_CSS: ClassVar[str] = """
    WhatIfPanel {
        display: none;
        height: 1fr;
        border: round $warning;
        border-title-color: $warning;
        padding: 0 1;
    }
    WhatIfPanel #whatif-header {
        height: auto;
    }
    WhatIfPanel #whatif-probs {
        height: 1fr;
    }
    """

    def __init__(self, host: WhatIfHost) -> None:
        super().__init__(id=self.NAME)
        self.host = host
        self.border_title = "what if"
        self.header = Static("", id="whatif-header", markup=False)
        self.probs = ProbPanel(id="whatif-probs")

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.probs

    def watch_selected(self, selection: Selection) -> None:
        self.host.whatif.follow(selection.at)
        self.host.whatif.update()  # off when its reply went (a new chat)

    def show(
        self,
        title: str,
        stored: Step,
        step: Step | None,
        current: SamplerSettings,
        pieces: TokenPieces,
        status: str,
    ) -> None:
        """Show the stored step's recomputation `step` (None while it is computed)."""
        self.header.update(header_text(title, stored, current, pieces, status))
        # While there is no step, the header's status says why (once): no bars below.
        self.probs.display = step is not None
        if step is not None:
            self.probs.show(step, "now", pieces)
