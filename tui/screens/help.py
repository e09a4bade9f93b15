"""The help screen: every key of the app."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send the message (in the input box)"),
    ("escape", "stop the reply, keeping what was generated; leave the token cursor"),
    ("ctrl+r", "regenerate the last reply with the same seed (a new branch)"),
    ("ctrl+n", "new chat"),
    ("ctrl+o", "saved chats: search, open one and continue it, delete one"),
    ("ctrl+y", "copy the reply (the selected one, else the last)"),
    ("ctrl+g", "new random seed"),
    ("ctrl+l", "colour each token by its probability"),
    ("ctrl+d", "compare: the last question under several settings, one seed"),
    ("ctrl+t", "token cursor: ← → pick a past token; its step shows on the right"),
    ("enter on a token", "its alternatives; one chosen makes a new branch from there"),
    ("w, then b", "what if: the step under the current settings; b: branch from it"),
    ("x", "token cursor: explore the continuations the chain keeps there"),
    ("e / s / b", "explore: grow from a node / every path by its p / branch"),
    ("< > (ctrl+← →)", "token cursor: the reply's other branches (⋔N marks a fork)"),
    ("u (ctrl+↑)", "token cursor: the branch this one forks from"),
    ("[ ]", "token cursor: previous / next surprising token (raw p < 0.05)"),
    ("s / S", "token cursor: next preset rule for surprising tokens / type one"),
    ("g", "token cursor: colour by rank bucket (top 10 · 100 · 1000 · beyond) or by p"),
    ("mouse", "click a token to see its step; click or drag a slider"),
    ("f2 / f3", "go to the sampling panel / the input box"),
    ("f4", "reply timeline; again: with the kept count; again: hidden (click a column)"),
    ("f5", "tail plot: the selected step's probability by rank, log scale, the cut"),
    ("f6", "switch between chat and completion mode (plain text continued)"),
    ("f7", "open another model on disk; the chat goes on with it"),
    ("f8", "score a text: paste or open it; each token's p, rank, entropy; perplexity"),
    ("f9", "loop: a reply's repetition loop, copy under copy; a / x: leave it at its start"),
    ("tab, shift+tab", "next / previous control"),
    ("← →", "slider: fine step (a toggle: switch)"),
    ("shift+← →, pgup pgdn", "slider: coarse step"),
    ("home / end", "slider: minimum / maximum"),
    ("enter on a slider", "type a value (any valid value, beyond the bar too)"),
    ("enter, space", "toggle: top-p scope, temperature first/last, draw, generator"),
    ("ctrl+p", "command palette"),
    ("f1 / ctrl+q", "this help / quit"),
)


DOCS: tuple[tuple[str, str], ...] = (
    ("every key", "docs/keys.md"),
    ("the panel, timeline and tail plot", "docs/screen.md"),
    ("compare (ctrl+d)", "docs/compare.md"),
    ("alternatives, what-if, branches, explore, beams, bans", "docs/steering.md"),
    ("exact side by side", "docs/lockstep.md"),
    ("grammars and JSON schemas", "docs/grammar.md"),
    ("score (f8), surprising tokens, kld, fork", "docs/scores.md"),
    ("sweeps", "docs/sweeps.md"),
    ("loops (f9)", "docs/loops.md"),
    ("sampling semantics", "docs/sampling.md"),
    ("your own sampler", "docs/plugins.md"),
    ("presets (ctrl+p)", "docs/presets.md"),
    ("saved chats (ctrl+o), export, config", "docs/chats.md"),
    ("models (f7)", "docs/models.md"),
    ("commands and flags", "docs/commands.md"),
)
"""Each feature and the page of the repository's docs/ folder that describes it."""


def help_table() -> Table:
    """The keys as a table."""
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    table.add_column("key", style="bold cyan", no_wrap=True)
    table.add_column("what it does")
    for key, what in KEYS:
        table.add_row(Text(key), Text(what))
    return table


def docs_table() -> Table:
    """Where each feature is described: a page of docs/."""
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    table.add_column("more on", style="bold cyan")
    table.add_column("in samplescope's docs/", no_wrap=True)
    for topic, page in DOCS:
        table.add_row(Text(topic), Text(page))
    return table


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, f1 or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("samplescope — keys", style="bold"), id="help-title")
            yield Static(help_table())
            yield Static(
                Text(
                    "Sliders change the sampler from the next token, also in the middle"
                    " of a reply. Bars: █ probability after the filters, ░ before."
                    " The red line is the cutoff, labelled with the filter that made it.",
                    style="grey70",
                )
            )
            yield Static(docs_table(), id="help-docs")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
