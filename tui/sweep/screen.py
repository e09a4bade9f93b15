"""The sweep screen: the frontier plot over a table of the settings; a setting's samples.

Moving along the settings table selects that setting's point on the plot; Enter lists
its samples (prompt, seed, length, finish reason, quality, the text's start); Enter on
a sample closes the screen with its saved chat's id (the app opens it as the saved
chats screen does). `d` switches the diversity measure the plot and frontier use;
Escape goes back from the samples to the settings, then closes the screen (None).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from backend.chat.protocol import ChatMessage
from backend.session.sweep_result import (
    DIVERSITY_AXES,
    ORDER_WORDS,
    SampleRecord,
    SweepResult,
    metric,
)
from sampling.analysis.sweep_metrics import Estimate
from tui.generate_command import NotOneCommandError, generate_command
from tui.styled_once import StyledOnceScreen
from tui.sweep.frontier_plot import AXIS_NAMES, FrontierPlot, mark_of
from tui.widgets.steady_footer import SteadyFooter
from tui.widgets.table_fill import fill_table
from tui.widgets.thinking_fold import summary

AXES = tuple(DIVERSITY_AXES)
#: A sample's text is shown up to this many characters, on one line.
TEXT_SHOWN = 200
SAMPLE_COLUMNS = ("prompt", "seed", "tokens", "finish", "logp/token", "chat", "text")
"""The columns of a setting's samples."""


def _cell(value: Estimate | None, digits: int = 3) -> Text:
    if value is None:
        return Text("-", justify="right")
    text = f"{value.mean:.{digits}f}"
    if value.stderr is not None:
        text += f" ±{value.stderr:.{digits}f}"
    return Text(text, justify="right")


def _one_line(text: str) -> Text:
    """Model text shown literally on one line (newlines as ↵)."""
    flat = text.replace("\r", "").replace("\n", "↵")
    return Text(flat[:TEXT_SHOWN], no_wrap=True, overflow="ellipsis")


def _sample_text(sample: SampleRecord) -> Text:
    """A sample's text on one line; a thinking model's thinking folded, as the chat
    folds it ("▸ thought for 212 tokens · " before the answer)."""
    text = sample.figures.text
    if not sample.thinking_runs:
        return _one_line(text)
    length = sum(span.length for span in sample.thinking_runs)
    shown = _one_line(text.removeprefix(sample.thinking).lstrip())
    head = Text(f"{summary(length, done=True, folded=True)} · ", style="dim italic")
    return Text.assemble(head, shown, no_wrap=True, overflow="ellipsis")


class SweepScreen(StyledOnceScreen[int | None]):
    """A sweep's frontier and its settings; dismissed with a sample's chat id.

    Args:
        result: The sweep.
        selected: The setting under the cursor at the start.
        listing: The setting whose samples are listed at the start (None: the settings).
    """

    CSS_PATH = "screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("d", "next_axis", "diversity measure"),
        Binding("y", "copy_command", "copy as command"),
    ]

    def __init__(
        self, result: SweepResult, *, selected: int = 0, listing: int | None = None
    ) -> None:
        super().__init__()
        self.result = result
        self.axis = AXES[0]
        """The diversity measure on the plot's x axis."""
        self.selected = selected
        """The setting selected in the table."""
        self.listing: int | None = listing
        """The setting whose samples the table lists (None: the settings)."""
        self.chosen: SampleRecord | None = None
        """The sample Enter opened (None: none yet)."""
        self._samples: list[SampleRecord] = []

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="sweep-title")
        yield FrontierPlot(id="sweep-plot")
        yield Static("", id="sweep-table-title")
        yield DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)
        yield SteadyFooter()

    def _title(self) -> Text:
        plan = self.result.plan
        return Text(
            f"sweep: {plan.shape}, ≤ {plan.max_tokens} tokens · "
            f"{ORDER_WORDS[self.result.temperature_order]}"
            + (" · cancelled" if self.result.cancelled else ""),
            no_wrap=True,
            overflow="ellipsis",
        )

    def on_mount(self) -> None:
        listing = self.listing
        self.show_settings()
        if listing is not None:
            self.show_samples(listing)
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        self.query_one(FrontierPlot).show(self.result, self.axis, self.selected)

    # ---- the table ------------------------------------------------------------------

    def show_settings(self) -> None:
        """List the settings, the selected one under the cursor."""
        self.listing = None
        table = self.query_one(DataTable)
        thinks = self.result.thinks
        labels = (
            "#",
            "setting",
            "★",
            "logp/token",
            AXIS_NAMES[self.axis],
            "ppl",
            "length",
            *(("think len", "answer len") if thinks else ()),
            "finish",
        )
        frontier = set(self.result.frontier(self.axis))
        rows = []
        for metrics in self.result.metrics:
            index = metrics.setting
            finish = " ".join(f"{why}:{n}" for why, n in metrics.finish_reasons.items())
            rows.append(
                (
                    Text(mark_of(index)),
                    Text(self.result.plan.settings[index].label, no_wrap=True),
                    Text("★" if index in frontier else ""),
                    _cell(metrics.logprob),
                    _cell(metric(metrics, self.axis)),
                    _cell(metrics.perplexity, 2),
                    _cell(metrics.length, 1),
                    *(
                        (_cell(metrics.thinking_length, 1), _cell(metrics.answer_length, 1))
                        if thinks
                        else ()
                    ),
                    Text(finish or "-"),
                )
            )
        keys = [str(metrics.setting) for metrics in self.result.metrics]
        fill_table(table, labels, rows, column_keys=labels, row_keys=keys)
        self.query_one("#sweep-table-title", Static).update(
            Text(
                "settings (⏎ its samples · d: diversity measure)",
                style="bold",
            )
        )
        table.move_cursor(row=self.selected)
        self._draw()

    def show_samples(self, setting: int) -> None:
        """List one setting's samples."""
        self.listing = setting
        self._samples = self.result.samples_of(setting)
        table = self.query_one(DataTable)
        rows = []
        for sample in self._samples:
            f = sample.figures
            per_token = (
                "-"
                if f.logprob_raw is None or not f.n_tokens
                else f"{f.logprob_raw / f.n_tokens:.3f}"
            )
            rows.append(
                (
                    Text(str(f.prompt + 1), justify="right"),
                    Text(str(sample.seed), justify="right"),
                    Text(str(f.n_tokens), justify="right"),
                    Text(f.finish_reason),
                    Text(per_token, justify="right"),
                    Text("-" if sample.chat_id is None else str(sample.chat_id), justify="right"),
                    _sample_text(sample),
                )
            )
        fill_table(table, SAMPLE_COLUMNS, rows, column_keys=SAMPLE_COLUMNS)
        label = self.result.plan.settings[setting].label
        self.query_one("#sweep-table-title", Static).update(
            Text(f"{mark_of(setting)}: {label} — its samples (⏎ opens one · esc back)")
        )
        table.move_cursor(row=0)

    @on(DataTable.RowHighlighted, "#sweep-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.listing is None and 0 <= event.cursor_row < len(self.result.plan.settings):
            self.selected = event.cursor_row
            self._draw()

    @on(DataTable.RowSelected, "#sweep-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.listing is None:
            self.show_samples(event.cursor_row)
            return
        if not 0 <= event.cursor_row < len(self._samples):
            return
        sample = self._samples[event.cursor_row]
        if sample.chat_id is None:
            self.notify("This sample was not saved (sweep --no-save).", severity="warning")
            return
        self.chosen = sample
        self.dismiss(sample.chat_id)

    # ---- actions -------------------------------------------------------------------

    def action_back(self) -> None:
        """From the samples back to the settings; from the settings, close."""
        if self.listing is not None:
            self.show_settings()
        else:
            self.dismiss(None)

    def action_copy_command(self) -> None:
        """Copy the `generate` line of the sample under the cursor (in the settings: the
        setting's first sample, on the first prompt)."""
        table = self.query_one(DataTable)
        plan = self.result.plan
        if self.listing is None:
            setting, prompt, seed = self.selected, 0, plan.seed
        else:
            if not 0 <= table.cursor_row < len(self._samples):
                return
            sample = self._samples[table.cursor_row]
            setting, prompt, seed = self.listing, sample.figures.prompt, sample.seed
        try:
            system = [] if plan.system is None else [ChatMessage("system", plan.system)]
            line = generate_command(
                [*system, ChatMessage("user", plan.prompts[prompt])],  # as generate reads it
                plan.settings[setting].settings.with_changes(seed=seed),
                max_tokens=plan.max_tokens,
                mode=plan.mode,
                model=self.result.model,
                contrast_model=self.result.contrast_model,
                control_vectors=self.result.control_vectors,
                control_layers=self.result.control_layers,
            )
        except NotOneCommandError as error:
            self.notify(str(error), severity="warning")
            return
        self.app.copy_to_clipboard(line)
        title = f"Copied {mark_of(setting)}, seed {seed}, as a command"
        self.notify(line, title=title, timeout=30, markup=False)  # the prompt, literally

    def action_next_axis(self) -> None:
        """Plot against the next diversity measure (the frontier follows)."""
        self.axis = AXES[(AXES.index(self.axis) + 1) % len(AXES)]
        if self.listing is None:
            self.show_settings()
        else:
            self._draw()
