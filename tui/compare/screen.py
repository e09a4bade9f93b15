"""The compare view: the last user turn regenerated under 2–4 settings, one seed.

The columns run one after the other through `backend.chat.compare.compare`, as one
job of a `GenerationRunner` (the app's, so they take turns with the chat on the one
model thread); the screen is the job's consumer and its handlers own every state
change. The first column is the reference: in every other column the first token
that differs from it is marked, the tokens before it shown dim. Re-running with the
same seed gives the same tokens (each column's sampler is seeded afresh).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.dom import DOMNode
from textual.widgets import Static

from backend.chat.completion import Mode
from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    TokenEvent,
)
from backend.chat.protocol import ChatMessage
from backend.session.backend import SessionBackend
from backend.session.compare import CompareJob
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of
from tui.compare.column import FORK_LEGEND, CompareColumnView, divergence_between
from tui.compare.columns import CompareColumn, check_column_count, settings_summary
from tui.compare.curves import CompareCurves
from tui.compare.edit import CompareEditScreen, CompareRequest
from tui.compare.result import CompareResult
from tui.generate_command import NotOneCommandError, generate_command
from tui.row_compositor import use_row_compositor
from tui.runner import GenerationRunner
from tui.styled_once import StyledOnceScreen
from tui.widgets.alternatives import Alternative, AlternativesScreen
from tui.widgets.entry import covered
from tui.widgets.prob_panel import ProbPanel
from tui.widgets.steady_footer import SteadyFooter
from tui.widgets.token_text import TokenPieces, TokenPieceSource

DEFAULT_MAX_TOKENS = 256
NEW_SEED_RANGE = 100_000
PROMPT_PREVIEW_CHARS = 60
SELECT_HINT = (
    "Select a token to see its candidates: focus a column (tab or 1–4), then ←/→, or click it."
    " ? says what the margins and Δlogit are."
)


def as_columns(columns: Sequence[SamplerSettings | CompareColumn]) -> list[CompareColumn]:
    """Columns from settings (labelled by their summary) or ready-made columns."""
    return [
        c if isinstance(c, CompareColumn) else CompareColumn(settings_summary(c), c)
        for c in columns
    ]


#: The title's note when the model's self-check found lockstep not batch-invariant.
NOT_EXACT_NOTE = "not exact side by side: a column can differ from its reply alone"


class CompareScreen(StyledOnceScreen[CompareResult | None]):
    """Regenerate the last user turn under several settings with one seed.

    Args:
        model: The app's `GenerationRunner` (the comparison then takes its turn on
            the app's model thread), or a model for this screen alone.
        messages: The conversation up to and including the last user turn.
        columns: 2 to 4 settings (or labelled `CompareColumn`s); their seeds are
            replaced by `seed`.
        seed: The seed every column uses.
        base: The current sliders, what "one field changed" columns start from
            (default: the first column's settings).
        presets: The presets offered by the edit form (default: `assets/presets.toml`).
        max_tokens: Tokens per column at most.
        pieces: Shows any token id for the probability panel (the app's; default:
            the pieces of the tokens seen, and the backend's own if it has them).
        mode: The chat's mode: in "completion" every column continues the
            conversation as one document, as the chat's reply does.
    """

    CSS_PATH = "screen.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("r", "rerun", "Re-run"),
        Binding("e", "edit", "Edit seed/columns"),
        Binding("n", "new_seed", "New seed"),
        Binding("p,enter", "promote", "Use as reply"),
        Binding("c", "curves", "Curves H/p/off"),
        Binding("y", "copy_command", "Copy cmd"),
        # Shown once a column has thinking (a thinking model's).
        Binding("ctrl+b", "toggle_thinking", "Thinking"),
        Binding("question_mark", "legend", "Legend", show=False),
        Binding("1", "focus_column(0)", "Column 1", show=False),
        Binding("2", "focus_column(1)", "Column 2", show=False),
        Binding("3", "focus_column(2)", "Column 3", show=False),
        Binding("4", "focus_column(3)", "Column 4", show=False),
    ]

    def __init__(
        self,
        model: GenerationRunner | SessionBackend,
        messages: Sequence[ChatMessage],
        columns: Sequence[SamplerSettings | CompareColumn],
        seed: int,
        *,
        base: SamplerSettings | None = None,
        presets: dict[str, SamplerSettings] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        pieces: TokenPieces | None = None,
        mode: Mode = "chat",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        use_row_compositor(self)  # its columns stream: draw only changed rows
        if isinstance(model, GenerationRunner):
            self._runner = model
        else:
            self._runner = GenerationRunner(self, model)
        self._messages = list(messages)
        self._columns = as_columns(columns)
        check_column_count(len(self._columns))
        self.seed = SamplerSettings(seed=seed).seed  # validates the range
        self._base = base if base is not None else self._columns[0].settings
        self._presets = presets
        self._max_tokens = max_tokens
        self._mode = mode
        if pieces is None:
            backend = self._runner.backend
            own = backend.token_piece if isinstance(backend, TokenPieceSource) else None
            pieces = TokenPieces(own)
        self._pieces = pieces
        self._run = 0
        self._running = False
        self._has_thinking = False  # whether the footer shows the thinking key
        self._error: str | None = None

    # --- public state (read by the app and the tests) -----------------------------

    @property
    def messages(self) -> list[ChatMessage]:
        """The conversation the columns reply to."""
        return list(self._messages)

    @property
    def columns(self) -> list[CompareColumn]:
        """The columns of the comparison, labels and settings (seed not applied)."""
        return list(self._columns)

    @property
    def column_views(self) -> list[CompareColumnView]:
        """The column widgets, in order."""
        return list(self.query(CompareColumnView))

    @property
    def running(self) -> bool:
        """Whether a run is still generating."""
        return self._running

    @property
    def done(self) -> bool:
        """Whether a run was started and has ended (every column finished or stopped)."""
        return self._run > 0 and not self._running

    def column_settings(self, column: int) -> SamplerSettings:
        """The settings column `column` samples with, the comparison's seed applied."""
        return self._columns[column].settings.with_changes(seed=self.seed)

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="compare-title", markup=False)
        with Horizontal(id="compare-columns"):
            for i, column in enumerate(self._columns):
                yield CompareColumnView(i, column, id=f"compare-column-{i}")
        with Horizontal(id="compare-bottom"):
            yield Static(SELECT_HINT, id="compare-hint", markup=False)
            yield ProbPanel(id="compare-prob")
            yield CompareCurves(id="compare-curves")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.column_views[0].focus()
        self._start_run()

    def on_unmount(self) -> None:
        # The worker stops within one token; nothing it sends is handled any more.
        self._runner.release(self)

    def _title_text(self) -> Text:
        prompt = next((m.content for m in reversed(self._messages) if m.role == "user"), "")
        prompt = " ".join(prompt.split())
        if len(prompt) > PROMPT_PREVIEW_CHARS:
            prompt = prompt[: PROMPT_PREVIEW_CHARS - 1] + "…"
        title = Text("Compare", style="bold")
        title.append(f" · seed {self.seed} · ")
        title.append(f"“{prompt}”", style="italic")
        backend = self._runner.backend
        if backend is not None and backend.info.repack:
            title.append(" · weights repacked (--repack)")
        if backend is not None and backend.info.batch_invariant is False:
            # The load's self-check: decoded beside each other, this model's numbers move.
            title.append(" · ")
            title.append(NOT_EXACT_NOTE, style="bold yellow")
        title.append(f" · {self._status()}", style="dim")
        return title

    def _status(self) -> str:
        if self._error is not None:
            return f"error: {self._error}"
        if not self._running:
            return "done" if self._run else "ready"
        if not self.is_mounted:
            return "starting"
        views = self.column_views
        done = sum(v.finished is not None for v in views)
        if done == len(views):
            return "finishing"
        return f"generating · {done}/{len(views)} columns done"

    def _update_title(self) -> None:
        self.query_one("#compare-title", Static).update(self._title_text())

    # --- the run ----------------------------------------------------------------------

    def _start_run(self) -> None:
        """Start a run of every column with the current seed (no run may be going)."""
        self._run += 1
        self._error = None
        self._running = True
        for view, column in zip(self.column_views, self._columns, strict=True):
            view.reset(column)
            view.reference = self.column_views[0] if view.index else None  # diffed against
        self._show_detail(None)
        settings = [self.column_settings(i) for i in range(len(self._columns))]
        self._update_title()
        job = CompareJob(list(self._messages), settings, self._max_tokens, self._mode)
        self._runner.start(job, self)

    async def _stop_run(self) -> None:
        """Cancel the running generation and wait until its thread let go of the model."""
        self._runner.release(self)
        await self._runner.wait_idle()
        self._running = False

    async def _restart(self) -> None:
        """Stop any run, rebuild the columns if their number changed, run again."""
        await self._stop_run()
        container = self.query_one("#compare-columns", Horizontal)
        if len(self.column_views) != len(self._columns):
            await container.remove_children()
            await container.mount_all(
                CompareColumnView(i, c, id=f"compare-column-{i}")
                for i, c in enumerate(self._columns)
            )
            self.column_views[0].focus()
        self._start_run()

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """Show one event of the run (runner, UI thread)."""
        views = self.column_views
        view = views[column]
        if isinstance(event, TokenEvent):
            view.add_token(event)
            self._pieces.learn(event)
            self._update_divergence(views, column)
        elif isinstance(event, PhaseEvent):
            view.set_phase(event.phase)
            self._update_title()
        elif isinstance(event, PrefillProgress):
            view.set_prefill(event.done, event.total)
        elif isinstance(event, NoticeEvent):
            view.set_notice(event.message)
        elif isinstance(event, FinishedEvent):
            view.finish(event)
            self._update_divergence(views, column)
            self._update_title()

    def generation_ended(self, error: str | None) -> None:
        """Every column ended, or the run stopped on `error` (runner, UI thread)."""
        self._running = False
        self._error = error
        self._update_title()
        self.paint()  # the last tokens came in the same drain: show them now, not a tick later

    def paint(self) -> None:
        """Redraw the columns that received tokens (runner, FLUSH_HZ a second)."""
        for view in self.column_views:
            view.flush()
        if self._has_thinking != any(view.has_thinking for view in self.column_views):
            self._has_thinking = not self._has_thinking
            self.refresh_bindings()  # the thinking key shows
        for curves in self.query(CompareCurves):  # none while the screen is torn down
            curves.show_views(self.column_views)

    def _update_divergence(self, views: list[CompareColumnView], column: int) -> None:
        targets = views[1:] if column == 0 else [views[column]]
        for view in targets:
            known = view.divergence
            if known is not None and known < min(len(view.tokens), len(views[0].tokens)):
                continue  # a divergence inside both columns is final: no rescan per token
            view.set_divergence(divergence_between(views[0], view))

    # --- actions ----------------------------------------------------------------------

    def _focused_column(self) -> CompareColumnView:
        node: DOMNode | None = self.focused
        while node is not None and not isinstance(node, CompareColumnView):
            node = node.parent
        return node if isinstance(node, CompareColumnView) else self.column_views[0]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The thinking key only once a column has thinking."""
        return self._has_thinking if action == "toggle_thinking" else True

    def action_toggle_thinking(self) -> None:
        """Show every column's thinking, or fold them all."""
        shown = not any(view.thinking_open for view in self.column_views)
        for view in self.column_views:
            view.set_thinking_open(shown)

    def action_curves(self) -> None:
        """Show the entropy curves, then the chosen probability's, then hide them."""
        self.query_one(CompareCurves).cycle(self.column_views)

    def action_focus_column(self, column: int) -> None:
        """Focus column `column` (keys 1–4), at once: the next key goes to it."""
        views = self.column_views
        if column < len(views):
            self.set_focus(views[column])

    def action_legend(self) -> None:
        """Say what the divergence line's margins and Δlogit mean."""
        self.notify(FORK_LEGEND, title="The divergence line", timeout=30)

    def action_copy_command(self) -> None:
        """Copy the `generate` line that gives the focused column's reply again."""
        view = self._focused_column()
        backend = self._runner.backend
        try:
            line = generate_command(
                self._messages,
                self.column_settings(view.index),
                max_tokens=self._max_tokens,
                mode=self._mode,
                model=None if backend is None else backend.info.path,
                contrast_model=None if backend is None else backend.info.contrast_model,
                control_vectors=() if backend is None else backend.info.control_vectors,
                control_layers=None if backend is None else backend.info.control_layers,
            )
        except NotOneCommandError as error:
            self.notify(str(error), severity="warning")
            return
        self.app.copy_to_clipboard(line)
        self.notify(
            line, title=f"Copied column {view.index + 1} as a command", timeout=30, markup=False
        )  # the prompt, literally

    async def action_close(self) -> None:
        """Stop generating and go back to the chat without a result."""
        await self._stop_run()
        self.dismiss(None)

    async def action_rerun(self) -> None:
        """Run every column again with the same seed and settings."""
        await self._restart()

    async def action_new_seed(self) -> None:
        """Pick a new random seed and run again."""
        self.seed = secrets.randbelow(NEW_SEED_RANGE)
        await self._restart()

    def action_edit(self) -> None:
        """Open the form that edits the seed and each column's settings."""
        presets = self._load_presets()
        self.app.push_screen(
            CompareEditScreen(self.seed, self._columns, self._base, presets),
            self._apply_edit,
        )

    async def _apply_edit(self, request: CompareRequest | None) -> None:
        if request is None:
            return
        self.seed = request.seed
        self._columns = list(request.columns)
        await self._restart()

    async def action_promote(self) -> None:
        """Dismiss with the focused column as the chat's reply."""
        await self.promote(self._focused_column())

    async def promote(
        self, view: CompareColumnView, branch_at: int | None = None, force: int | None = None
    ) -> None:
        """Dismiss with `view`'s column as the chat's reply, then (`branch_at`) a branch
        of it from that token: `force` chosen there (None: drawn again)."""
        if view.finished is None:
            self.notify(f"column {view.index + 1} is still generating", severity="warning")
            return
        await self._stop_run()
        settings, tokens = self.column_settings(view.index), tuple(view.tokens)
        self.dismiss(
            CompareResult(view.index, view.column.label, settings, view.finished, tokens).branched(
                branch_at, force
            )
        )

    @on(CompareColumnView.AlternativesAsked)
    def _on_alternatives_asked(self, message: CompareColumnView.AlternativesAsked) -> None:
        if covered(self):
            return  # the list is open already (an `a` typed twice)
        view = self.column_views[message.column]
        step, title = view.tokens[message.token].step, f"column {view.index + 1}"

        async def chosen(choice: Alternative | None) -> None:
            if choice is not None:
                await self.promote(view, message.token, choice.token)

        self.app.push_screen(AlternativesScreen(step, title, self._pieces), chosen)

    @on(CompareColumnView.TokenSelected)
    def _on_token_selected(self, message: CompareColumnView.TokenSelected) -> None:
        view = self.column_views[message.column]
        if message.token < len(view.tokens):
            self._show_detail(view, message.token)

    def _show_detail(self, view: CompareColumnView | None, token: int = 0) -> None:
        """Show a token's candidates in the probability panel (None: the hint)."""
        panel = self.query_one(ProbPanel)
        hint = self.query_one("#compare-hint", Static)
        if view is None:
            panel.display = False
            hint.display = True
            return
        event = view.tokens[token]
        panel.show(event.step, f"column {view.index + 1} · token {token + 1}", self._pieces)
        hint.display = False
        panel.display = True

    def _load_presets(self) -> dict[str, SamplerSettings]:
        if self._presets is None:
            try:
                from tui.resources import available_presets

                self._presets = available_presets(registry_of(self._base))
            except (ImportError, SamplescopeError, OSError) as exc:
                self.notify(f"presets unavailable: {exc}", severity="warning")
                self._presets = {}
        return self._presets
