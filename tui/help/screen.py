"""The help screen: every key of the app, read from the bindings of the app and each
screen (and the chat's widgets), with the config's [keys] overrides applied."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap, BindingType
from textual.containers import VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Static

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


def key_name(key: str) -> str:
    """A key as the help shows it: "ctrl+r", "←", "[", "f1"."""
    *modifiers, last = key.split("+")
    return "+".join([*modifiers, format_key(last)])


def binding_rows(
    bindings: Iterable[BindingType], keymap: Mapping[str, str] = {}
) -> list[tuple[str, str]]:
    """(keys, what it does) for each action of `bindings`, the keymap applied.

    A binding's several keys (or a remapped one's) share a row; so do bindings of one
    `Binding.Group` (←/→: "token"). The text is the binding's tooltip, else its
    footer description. System bindings (Textual's own) are left out.
    """
    bound = BindingsMap(bindings)
    if keymap:
        bound.apply_keymap(keymap)
    rows: dict[tuple[str, str], list[str]] = {}
    for key, binding in bound:
        if binding.system:
            continue
        what = binding.tooltip or binding.description
        if binding.group is not None:
            what = binding.group.description or what
        row_key = (binding.action if binding.group is None else what, what)
        shown = binding.key_display if binding.key_display and key == binding.key else None
        rows.setdefault(row_key, []).append(shown or key_name(key))
    return [(" / ".join(dict.fromkeys(keys)), what) for (_, what), keys in rows.items()]


KEY_WIDTH = 22
"""The key column's width: the same in every section."""


def help_table(rows: Sequence[tuple[str, str]]) -> Table:
    """One section's keys as a table."""
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0), expand=True)
    table.add_column("key", style="bold cyan", width=KEY_WIDTH)
    table.add_column("what it does", ratio=1)
    for keys, what in rows:
        table.add_row(Text(keys), Text(what))
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
    """Lists the keys by screen; any of escape, f1 or q closes it.

    Args:
        sections: (title, its rows of (keys, what it does)), as `binding_rows` makes them.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "close")]

    def __init__(self, sections: Sequence[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = list(sections)
        """(title, its rows of (keys, what it does)), as shown."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("samplescope — keys", style="bold"), id="help-title")
            for title, rows in self.sections:
                yield Static(Text(title, style="bold"), classes="help-section")
                yield Static(help_table(rows))
            yield Static(
                Text(
                    "Sliders change the sampler from the next token, also in the middle"
                    " of a reply. Bars: █ probability after the filters, ░ before."
                    " The red line is the cutoff, labelled with the filter that made it."
                    " tab / shift+tab: next / previous control; click a token to see its"
                    " step.",
                    style="grey70",
                )
            )
            yield Static(docs_table(), id="help-docs")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
