"""What the generation worker runs for a chat reply made by beam search (worker thread).

The search runs whole (`backend.session.beams`), is saved (the best beam as the
turn's reply, the others as its branches), then the best beam's tokens come out as
a reply's events; the other beams wait in `branches` for the view to add to the
turn's tree once the reply has finished.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from backend.chat.compare import ColumnEvent
from backend.chat.completion import Mode, as_document
from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    GenerationStats,
    NoticeEvent,
    PhaseEvent,
    TokenEvent,
)
from backend.chat.protocol import ChatMessage
from backend.error_log import logged_line
from backend.session.backend import SessionBackend
from backend.session.beam_result import Beam, BeamSearch, token_texts
from backend.session.beams import beam_search, check_beam_search
from backend.session.phrase_bans import PhraseBans
from backend.session.recorded_beams import BeamRecorder
from backend.store.recorded import StoreErrorNotices
from backend.store.recorder import ChatRecorder
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from tui.chat.reply_job import REPLY_COLUMN


@dataclass(frozen=True, slots=True)
class BeamBranch:
    """A kept beam other than the best, for the turn's tree.

    Attributes:
        tokens: Its tokens as a reply's events.
        reason: How it ended.
        branch_id: Its stored id (None: not saved).
    """

    tokens: tuple[TokenEvent, ...]
    reason: str
    branch_id: int | None


@dataclass
class BeamJob:
    """One reply by beam search (a `runner.Job`).

    Attributes:
        messages: The conversation, ending with the user's turn.
        settings: The chain whose probabilities rank the beams.
        max_tokens: The longest beam.
        width: How many beams.
        length_penalty: A finished beam ranks by logprob / length ** it.
        recorder: Saves the beams, or None.
        notices: Remembers which store error was shown.
        reset: Forget the backend's cache first.
        mode: "chat", or "completion" (the conversation continued as one document).
        bans: Phrases no beam may hold (continuations completing one are passed over).
        branches: Filled by the worker before the reply's FinishedEvent: the other
            kept beams, best first.
        reply_id: The best beam's stored id (None: not saved).
    """

    messages: Sequence[ChatMessage]
    settings: SamplerSettings
    max_tokens: int
    width: int
    length_penalty: float = 0.0
    recorder: ChatRecorder | None = None
    notices: StoreErrorNotices = field(default_factory=StoreErrorNotices)
    reset: bool = False
    mode: Mode = "chat"
    bans: PhraseBans = field(default_factory=PhraseBans)
    branches: list[BeamBranch] = field(default_factory=list)
    reply_id: int | None = None

    def __call__(self, backend: SessionBackend, cancel: threading.Event) -> Iterator[ColumnEvent]:
        """Search, save, and give the best beam as the reply's events (worker thread)."""
        for event in self._events(backend, cancel):
            yield ColumnEvent(REPLY_COLUMN, event)

    def _events(
        self, backend: SessionBackend, cancel: threading.Event
    ) -> Iterator[GenerationEvent]:
        try:
            if self.reset:
                backend.reset()
            yield PhaseEvent("prefill")
            completion = self.mode == "completion"
            messages = as_document(self.messages) if completion else self.messages
            check_beam_search(
                backend.model, self.settings, self.width, self.max_tokens, self.length_penalty
            )
            saver = None
            if self.recorder is not None:  # saved as it runs (see BeamRecorder)
                saver = BeamRecorder(self.recorder, backend.model)
                saver.begin(
                    messages,
                    self.settings,
                    self.max_tokens,
                    self.mode,
                    self.width,
                    self.length_penalty,
                )
            search = beam_search(
                backend,
                messages,
                self.settings,
                width=self.width,
                max_tokens=self.max_tokens,
                length_penalty=self.length_penalty,
                raw=completion,
                cancel=cancel,
                on_step=None if saver is None else saver.step,
                bans=self.bans or None,
            )
            for message in search.notices:
                yield NoticeEvent(message)
            yield NoticeEvent(search_summary(search))
            yield PhaseEvent("decode")
            ids: list[int | None] = [None] * len(search.beams)
            recorder = self.recorder
            if recorder is not None and saver is not None:
                ids = saver.finish(search)
                notice = self.notices.notice(recorder)
                if notice is not None:
                    yield notice
            best, *others = search.beams
            self.reply_id = ids[0]
            self.branches = [
                BeamBranch(_events(backend, beam), beam.reason, ids[n])
                for n, beam in enumerate(others, start=1)
            ]
            yield from _events(backend, best)
            yield PhaseEvent("done")
            text = "".join(token_texts(backend.model, best.token_ids))
            yield FinishedEvent(best.finish_reason, search.stats, text, best.token_ids)
        except SamplescopeError as error:  # the contract says errors come as events; be safe
            yield FinishedEvent("error", GenerationStats(), "", (), error=str(error))
        except Exception as error:  # a bug: logged, told in one line, the chat goes on
            line = logged_line(error)
            yield FinishedEvent("error", GenerationStats(), "", (), error=line)


def search_summary(search: BeamSearch) -> str:
    """One line on a finished search: the kept beams' log-probabilities, the pruned."""
    kept = ", ".join(f"{beam.logprob:.2f}" for beam in search.beams)
    line = f"beam search: {len(search.beams)} beams kept (logprob {kept})"
    where = sorted({b.pruned_at for b in search.pruned if b.pruned_at is not None})
    if where:
        line += f", {len(search.pruned)} pruned at tokens {where[0] + 1}–{where[-1] + 1}"
    if search.banned:
        line += f", {search.banned} continuations passed over for a banned phrase"
    return line


def _events(backend: SessionBackend, beam: Beam) -> tuple[TokenEvent, ...]:
    """A beam's tokens as a reply's TokenEvents."""
    model = backend.model
    texts = token_texts(model, beam.token_ids)
    return tuple(
        TokenEvent(index, step, texts[index], model.shown_piece(step.token_id))
        for index, step in enumerate(beam.steps)
    )
