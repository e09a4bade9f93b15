"""A `generate` reply as it streams: its text to stdout (held back while a phrase ban
may still take it back), its steps and rejected attempts kept, and its progress on
stderr with -v (phases, rewinds) and -vv (every step)."""

from __future__ import annotations

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
from sampling.sections import Section
from tui.cli.commands.generate.held_back_text import HeldBackText
from tui.cli.commands.generate.section_output import SectionOutput
from tui.cli.verbose import log, step_line


@dataclass
class StreamedReply:
    """What a reply's events left: its steps and the text each token completed (a
    rewind drops those it takes back), the attempts a phrase ban rejected, and the
    finish."""

    steps: list[Step] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    ghosts: list[RewindEvent] = field(default_factory=list)
    finished: FinishedEvent | None = None


class ReplyPrinter:
    """Reads a reply's events, writing its text to stdout as it comes (with `stream`)
    and its progress to stderr (with `verbose` ≥ 1, and every step with ≥ 2).

    A thinking model's thinking is written apart from its answer (`SectionOutput`):
    dimmed on a terminal, or to stderr with `hide_thinking`.
    """

    def __init__(
        self, bans: PhraseBans, *, stream: bool, verbose: int, hide_thinking: bool = False
    ) -> None:
        self.stream = stream
        self.verbose = verbose
        # With phrase bans, text a rewind may still take back is held.
        self.held = HeldBackText(bans) if bans else None
        self.reply = StreamedReply()
        self.output = SectionOutput(hide_thinking)
        self.written = 0
        """How many tokens' text is out."""

    def read(self, events: Iterable[GenerationEvent]) -> StreamedReply:
        """Read every event; the reply they left."""
        for event in events:
            self._take(event)
        return self.reply

    def finish(self, final_text: str) -> None:
        """Write what is still held back when the reply finished as `final_text` (the
        tokens not out yet, then a character the end completed), and end its line."""
        texts, steps = self.reply.texts, self.reply.steps
        self._write_tokens(len(texts))
        tail = final_text[len("".join(texts)) :]
        kind = steps[-1].section if steps else Section.ANSWER
        self.output.write(tail, kind)
        self.output.end()

    def _write_tokens(self, end: int) -> None:
        """Write the text of the tokens up to `end` not out yet, each in its section."""
        texts, steps = self.reply.texts, self.reply.steps
        for index in range(self.written, end):
            self.output.write(texts[index], steps[index].section)
        self.written = max(self.written, end)

    def _release(self, text: str) -> None:
        """Write the tokens whose text a phrase ban released (whole tokens, in order)."""
        end, left = self.written, len(text)
        while left > 0 and end < len(self.reply.texts):
            left -= len(self.reply.texts[end])
            end += 1
        self._write_tokens(end)

    def _take(self, event: GenerationEvent) -> None:
        if isinstance(event, TokenEvent):
            self.reply.steps.append(event.step)
            self.reply.texts.append(event.text)
            if self.stream:
                if self.held is None:
                    self._write_tokens(len(self.reply.texts))
                else:
                    self._release(self.held.token(event))
            elif self.held is not None:
                self.held.token(event)
            if self.verbose >= 2:
                log(step_line(event.index, event.step, event.piece))
        elif isinstance(event, RewindEvent):
            self.reply.ghosts.append(event)
            del self.reply.steps[event.index :], self.reply.texts[event.index :]
            self.written = min(self.written, event.index)
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
