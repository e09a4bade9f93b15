"""Score a text in the app: paste or type it, or open a file, and see how the model
judges each token (probability, rank, entropy, top alternatives) and the perplexity.
With a second model named (ctrl+b), that model is scored against the app's (the
base, the reference) instead, as `samplescope kld --model SECOND --base APP_MODEL`
scores it, by the same code: each token coloured by its KLD, `d` and `t` jump to the
largest divergences and to where the two models' top tokens differ, and the selected
token's top candidates of both models side by side (`tui.score.kld_view`).

The scoring runs on the app's generation runner (`ModelRunner`), the one thread
that may use the model: its job calls the scorer (`samplescope score`'s
`score_text` by default) and posts the result to this screen as a message. The UI
thread only draws.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static, TextArea

from backend.chat.compare import ColumnEvent
from backend.chat.events import GenerationEvent
from backend.config.paths import user_file
from backend.config.user_files import UserFileError, read_user_text
from backend.errors import FileAccessError
from backend.llama.pieces import visible_piece
from backend.session.backend import SessionBackend
from tui.score import kld_view
from tui.score_label import logprob_label
from tui.styled_once import StyledOnceScreen
from tui.widgets.phrases import Phrases
from tui.widgets.table_fill import fill_table
from tui.widgets.token_look import rank_style

if TYPE_CHECKING:  # llama.cpp's bindings load when a text is scored, not with the app
    from backend.score.kld_pair import PairScore
    from backend.score.text_score import TextScore, TokenScore

Scorer = Callable[[SessionBackend, str], "TextScore"]
"""Scores a text with the model (called on the runner's thread)."""

PairScorer = Callable[[SessionBackend, Path, str], "PairScore"]
"""Scores a text with a second model file against the model (on the runner's thread)."""

Job = Callable[[SessionBackend, threading.Event], Iterator[ColumnEvent]]
"""A job of the model's thread (`tui.runner.Job`)."""


class ModelRunner(Protocol):
    """The app's one model thread (`tui.runner.GenerationRunner`)."""

    @property
    def backend(self) -> SessionBackend | None:
        """The loaded model, or None."""
        ...

    def unavailable(self) -> str | None:
        """Why no job can start now (a model is loading), or None."""
        ...

    def start(self, job: Job, consumer: ScoreScreen) -> None:
        """Run `job` on the model's thread; its end goes to `consumer`."""
        ...

    def release(self, consumer: ScoreScreen) -> None:
        """`consumer` goes away: hand it nothing more."""
        ...


SCORE_COLUMNS = ("#", "token", "logp", "p", "rank", "H", "top alternatives")

MAX_FILE_BYTES = 4 << 20
"""The largest file the screen opens (4 MiB)."""


def llama_scorer(backend: SessionBackend, text: str) -> TextScore:
    """`samplescope score` on the app's model: the whole text in one window when it
    fits, else in windows of the context advancing by half of it.

    Raises:
        ScoreError: The model is not a llama.cpp one, or the text cannot be scored.
    """
    from backend.score.text_score import ScoreError, score_text
    from backend.session.llama_backend import LlamaBackend

    if not isinstance(backend, LlamaBackend):
        raise ScoreError("scoring a text needs a llama.cpp model")
    n_ctx = backend.runtime.n_ctx
    return score_text(backend, text, stride=max(1, (n_ctx - 1) // 2))


def llama_pair_scorer(backend: SessionBackend, test: Path, text: str) -> PairScore:
    """`samplescope kld --model TEST --base APP_MODEL` on the text: the model at
    `test` against the app's model, both loaded for this text as `kld` loads them,
    then freed (the app's own context is left as it is).

    Raises:
        ScoreError: The model is not a llama.cpp one.
        KldError, VocabularyMismatch, ModelFileError: As `score_pair`.
    """
    from backend.score.kld_pair import score_pair
    from backend.score.text_score import ScoreError
    from backend.session.llama_backend import LlamaBackend

    if not isinstance(backend, LlamaBackend):
        raise ScoreError("comparing two models needs a llama.cpp model")
    runtime = backend.runtime
    return score_pair(
        runtime.path,
        test,
        text,
        n_threads=runtime.n_threads,
        log_path=backend.log_path,
        rpc=runtime.rpc,
    )


class ScoreScreen(StyledOnceScreen[None]):
    """Paste, type or open a text; ctrl+s scores it; the table lists every token.

    Args:
        runner: The app's generation runner (its model scores the text).
        scorer: What scores a text (the llama.cpp one by default).
    """

    DEFAULT_CSS = """
    ScoreScreen { layout: vertical; }
    ScoreScreen #score-title { height: auto; padding: 0 1; }
    ScoreScreen #score-path { height: 3; }
    ScoreScreen #score-base { height: 3; }
    ScoreScreen #score-text { height: 6; }
    ScoreScreen #score-summary { height: auto; padding: 0 1; }
    ScoreScreen #score-kld-text { height: auto; max-height: 8; padding: 0 1; display: none; }
    ScoreScreen #score-detail { height: auto; max-height: 9; padding: 0 1; display: none; }
    ScoreScreen #score-table { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back"),
        Binding("ctrl+s", "score", "score", priority=True),
        Binding("ctrl+o", "open", "open file", priority=True),
        Binding("ctrl+b", "base", "second model", priority=True),
        Binding("d", "largest", "largest KLD"),
        Binding("t", "tops_differ", "tops differ"),
    ]

    class Scored(Message):
        """The scorer's result (posted from the runner's thread)."""

        def __init__(self, score: TextScore) -> None:
            super().__init__()
            self.score = score

    class PairScored(Message):
        """The pair scorer's result (posted from the runner's thread)."""

        def __init__(self, pair: PairScore) -> None:
            super().__init__()
            self.pair = pair

    def __init__(
        self,
        runner: ModelRunner,
        scorer: Scorer = llama_scorer,
        pair_scorer: PairScorer = llama_pair_scorer,
    ) -> None:
        super().__init__()
        self.runner = runner
        self.scorer = scorer
        self.pair_scorer = pair_scorer
        self.score: TextScore | None = None
        """The last result shown."""
        self.pair: PairScore | None = None
        """The last result against a second model shown."""
        self.base: Path | None = None
        """The second model, the test against the app's (None: the text is scored by
        the model alone)."""
        self._ranked: int | None = None  # the row the last `d` went to
        self.scoring = False

    def compose(self) -> ComposeResult:
        yield Static(
            Text.assemble(
                ("Score a text", "bold"),
                " · paste or type it, or open a file · scored under the model's raw "
                "distribution (temperature 1, no filter)",
            ),
            id="score-title",
        )
        yield Input(placeholder="a UTF-8 text file to open (Enter opens it)", id="score-path")
        yield Input(
            placeholder="a second model (GGUF) to test against this one, token by token"
            " (Enter sets it; empty: the model alone)",
            id="score-base",
        )
        yield TextArea(id="score-text", soft_wrap=True)
        yield Static("", id="score-summary")
        yield Static("", id="score-kld-text")
        yield Static("", id="score-detail")
        yield DataTable(id="score-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*SCORE_COLUMNS)
        self.query_one(TextArea).focus()

    def action_base(self) -> None:
        """Go to the second model's box."""
        self.query_one("#score-base", Input).focus()

    @on(Input.Submitted, "#score-base")
    def _on_base(self, event: Input.Submitted) -> None:
        event.stop()
        self.forget_pair()  # the old result answers for a model no longer named
        self.base = None  # until a name is taken
        name = event.value.strip()
        if not name:
            self.base = None
            self.notify("the text is scored by the model alone")
            return
        try:
            path = user_file(Path(name))
        except FileAccessError as error:  # served: only samplescope's own folders
            self.notify(str(error), severity="error")
            return
        if not path.is_file():
            self.notify(f"no such model file: {path}", severity="error")
            return
        self.base = path
        self.notify(f"ctrl+s scores {path.name} against this model (the base), token by token")
        self.query_one(TextArea).focus()

    # -- input -----------------------------------------------------------------------

    def action_open(self) -> None:
        """Go to the file name box."""
        self.query_one("#score-path", Input).focus()

    @on(Input.Submitted, "#score-path")
    def _on_path(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        if name:
            self.open_file(Path(name))

    def open_file(self, path: Path) -> bool:
        """Put a file's text in the text box; False (and a notice) when it cannot be."""
        try:
            text = read_user_text(user_file(path), MAX_FILE_BYTES)
        except (FileAccessError, UserFileError) as error:
            self.notify(str(error), severity="error")
            return False
        area = self.query_one(TextArea)
        area.load_text(text)
        area.focus()
        return True

    # -- scoring ---------------------------------------------------------------------

    def action_score(self) -> None:
        """Score the text in the box on the model's thread."""
        text = self.query_one(TextArea).text
        if self.scoring:
            self.notify("still scoring the last text")
            return
        if not text.strip():
            self.notify("nothing to score: paste or type a text first")
            return
        why = self.runner.unavailable()
        if why is not None:
            self.notify(why)
            return
        self.scoring = True
        self._summary(Text("scoring…", style="italic"))
        self.runner.start(self._job(text, self.base), self)

    def _job(self, text: str, base: Path | None) -> Job:
        def job(backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
            if base is None:
                self.post_message(self.Scored(self.scorer(backend, text)))
            else:
                self.post_message(self.PairScored(self.pair_scorer(backend, base, text)))
            yield from ()

        return job

    def generation_event(self, column: int, event: GenerationEvent) -> None:
        """A scoring job sends no events."""

    def generation_ended(self, error: str | None) -> None:
        """The job returned; show its error, if any (the result came as `Scored`)."""
        self.scoring = False
        if error is not None:
            self.forget_pair()  # a failed second model leaves no result of another
            self._summary(Text(error, style="bold red"))

    def paint(self) -> None:
        """Nothing streams in: the result is drawn once, when it arrives."""

    @on(Scored)
    def _on_scored(self, message: Scored) -> None:
        message.stop()
        self.show_score(message.score)

    @on(PairScored)
    def _on_pair_scored(self, message: PairScored) -> None:
        message.stop()
        self.show_pair(message.pair)

    def show_pair(self, pair: PairScore) -> None:
        """Fill the table, the coloured text and the summary with a two-model result."""
        self.pair = pair
        self.score = None
        self._summary(kld_view.summary_text(pair))
        for name in ("#score-kld-text", "#score-detail"):
            self.query_one(name).display = True
        table = self.query_one(DataTable)
        rows = (kld_view.pair_row(pair, row) for row in range(pair.result.positions.size))
        fill_table(table, kld_view.PAIR_COLUMNS, rows)
        table.focus()  # d and t move its cursor
        self._show_selected(0 if pair.result.positions.size else None)

    def _show_selected(self, row: int | None) -> None:
        pair = self.pair
        if pair is None:
            return
        text = kld_view.coloured_text(pair, row)
        self.query_one("#score-kld-text", Static).update(
            Text.assemble(kld_view.legend(), "\n", text)
        )
        detail = self.query_one("#score-detail", Static)
        detail.update("" if row is None else kld_view.candidates_table(pair, row))

    @on(DataTable.RowHighlighted, "#score-table")
    def _on_row(self, event: DataTable.RowHighlighted) -> None:
        if self.pair is not None:
            self._show_selected(event.cursor_row)

    def _jump(self, order: list[int], *, by_position: bool, what: str) -> None:
        table = self.query_one(DataTable)
        if self.pair is None:
            self.notify("score the text against a second model first (ctrl+b)")
            return
        current: int | None = table.cursor_row if table.row_count else None
        if not by_position and self._ranked != current:
            current = None  # the cursor moved since: the ranking starts again
        row = kld_view.next_in(order, current, cyclic_after=by_position)
        self._ranked = None if by_position else row
        if row is None:
            self.notify(f"no position where {what}")
            return
        table.focus()
        table.move_cursor(row=row)

    def action_largest(self) -> None:
        """The next largest divergence (in order of KLD, largest first)."""
        order = [] if self.pair is None else kld_view.largest_first(self.pair)
        self._jump(order, by_position=False, what="a token was scored")

    def action_tops_differ(self) -> None:
        """The next position where the two models' most probable tokens differ."""
        order = [] if self.pair is None else kld_view.tops_differ(self.pair)
        self._jump(order, by_position=True, what="the two models' top tokens differ")

    def forget_pair(self) -> None:
        """Drop the result against a second model: its table, coloured text, candidates
        and summary (nothing shown then answers for another model)."""
        if self.pair is None:
            return
        self.pair = None
        self._ranked = None
        for name in ("#score-kld-text", "#score-detail"):
            self.query_one(name).display = False
        fill_table(self.query_one(DataTable), SCORE_COLUMNS, ())
        self._summary(Text(""))

    def show_score(self, score: TextScore) -> None:
        """Fill the table and the summary with a result."""
        self.score = score
        self.pair = None
        for name in ("#score-kld-text", "#score-detail"):
            self.query_one(name).display = False
        parts = [
            f"{len(score.tokens)} tokens, {score.n_tokens} scored",
            logprob_label(score.logprob, score.n_tokens),
        ]
        if score.stride:
            parts.append(f"windows of {score.window} tokens, stride {score.stride}")
        self._summary(Text(" · ".join(parts), style="bold"))
        rows = (score_row(n, token) for n, token in enumerate(score.tokens))
        fill_table(self.query_one(DataTable), SCORE_COLUMNS, rows)

    def _summary(self, text: Text | Phrases) -> None:
        self.query_one("#score-summary", Static).update(text)

    def action_close(self) -> None:
        """Leave (a scoring still running finishes on the model thread, unseen)."""
        self.runner.release(self)
        self.dismiss(None)


def score_row(number: int, token: TokenScore) -> tuple[object, ...]:
    """A table row: position, token, logp, p, rank (tinted by GLTR bucket), H, top."""
    piece = visible_piece(token.text)
    top = "  ".join(f"{visible_piece(a.text)} {math.exp(a.logprob):.3f}" for a in token.top)
    if token.logprob is None:
        return (number, piece, "—", "—", "—", "—", top)
    rank = Text(str(token.rank), style=rank_style(token.rank))
    entropy = "—" if token.entropy is None else f"{token.entropy:.2f}"
    return (
        number,
        piece,
        f"{token.logprob:.3f}",
        f"{math.exp(token.logprob):.4f}",
        rank,
        entropy,
        top,
    )
