"""A `generate` reply as it streams: its text to stdout (held back while a phrase ban
may still take it back), its steps and rejected attempts kept, and its progress on
stderr with -v (phases, rewinds) and -vv (every step)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from backend.chat.events import (
    FinishedEvent,
    GenerationEvent,
    NoticeEvent,
    PhaseEvent,
    PrefillProgress,
    RewindEvent,
    TokenEvent,
)
from backend.session.phrase_bans import PhraseBans
from sampling.records import Step
from tui.cli.commands.generate.held_back_text import HeldBackText
from tui.cli.verbose import log, step_line


@dataclass
class StreamedReply:
    """What a reply's events left: its steps (a rewind drops the steps it takes back),
    the attempts a phrase ban rejected, and the finish."""

    steps: list[Step] = field(default_factory=list)
    ghosts: list[RewindEvent] = field(default_factory=list)
    finished: FinishedEvent | None = None


class ReplyPrinter:
    """Reads a reply's events, writing its text to stdout as it comes (with `stream`)
    and its progress to stderr (with `verbose` ≥ 1, and every step with ≥ 2)."""

    def __init__(self, bans: PhraseBans, *, stream: bool, verbose: int) -> None:
        self.stream = stream
        self.verbose = verbose
        # With phrase bans, text a rewind may still take back is held.
        self.held = HeldBackText(bans) if bans else None
        self.reply = StreamedReply()

    def read(self, events: Iterable[GenerationEvent]) -> StreamedReply:
        """Read every event; the reply they left."""
        for event in events:
            self._take(event)
        return self.reply

    def rest(self, final_text: str) -> str:
        """The text still held back when the reply finished as `final_text`."""
        return "" if self.held is None else self.held.rest(final_text)

    def _take(self, event: GenerationEvent) -> None:
        if isinstance(event, TokenEvent):
            self.reply.steps.append(event.step)
            text = event.text if self.held is None else self.held.token(event)
            if self.stream and text:
                sys.stdout.write(text)
                sys.stdout.flush()
            if self.verbose >= 2:
                log(step_line(event.index, event.step, event.piece))
        elif isinstance(event, RewindEvent):
            self.reply.ghosts.append(event)
            del self.reply.steps[event.index :]
            if self.held is not None:
                self.held.rewind(event)
            if self.verbose >= 1:
                log(
                    f"rejected {len(event.token_ids)} tokens at token {event.index}"
                    f" ({event.matched!r} is banned): {event.text!r}"
                )
        elif isinstance(event, NoticeEvent):
            log(event.message)
        elif isinstance(event, PhaseEvent):
            if self.verbose >= 1:
                log(f"phase {event.phase}")
        elif isinstance(event, PrefillProgress):
            if self.verbose >= 1:
                log(f"prefill {event.done}/{event.total}")
        elif isinstance(event, FinishedEvent):
            self.reply.finished = event
