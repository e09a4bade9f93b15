"""Repetition loops watched for while a reply is generated: marked, or stopped.

Each sequence's tokens (a branch's given tokens included) go through a
`sampling.analysis.section_loops.SectionLoopWatch` as they come, at a few µs a token:
a thinking model's thinking and answer are watched apart (a loop never spans the end of
the thinking), and a loop says which it is in. A given token's section is the one of the
first token sampled after it. When the reply's loop
changes (one forms, it grows by a copy, a rewind takes it back) a `LoopEvent` says
so right after the token; the FinishedEvent carries the latest loop found. In "stop"
mode the sequence ends after the token that completes a loop (finish reason "loop"),
unless a phrase ban sends it back first (`Generation.end_after`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, get_args

from backend.chat.events import FinishedEvent, LoopEvent, RewindEvent, TokenEvent
from sampling.analysis.loops import LoopRule
from sampling.analysis.section_loops import SectionLoopWatch
from sampling.sections import Section

if TYPE_CHECKING:
    from backend.session.loop import Event, Generation

LoopMode = Literal["off", "mark", "stop"]
"""What a loop found does: nothing (not watched), shown, or the reply stops on it."""
LOOP_MODES: tuple[LoopMode, ...] = get_args(LoopMode)


@dataclass(frozen=True, slots=True)
class LoopGuard:
    """Whether replies are watched for loops, which count, and what one does.

    Attributes:
        mode: "off", "mark" (found and shown) or "stop" (the reply ends on it).
        rule: Which repeats are a loop (vLLM's rule; see `sampling.analysis.loops`).

    Raises:
        ValueError: `mode` is none of `LOOP_MODES`.
    """

    mode: LoopMode = "mark"
    rule: LoopRule = field(default_factory=LoopRule)

    def __post_init__(self) -> None:
        if self.mode not in LOOP_MODES:
            raise ValueError(
                f"invalid loop mode {self.mode!r}: expected one of {', '.join(LOOP_MODES)}"
            )

    def __bool__(self) -> bool:
        return self.mode != "off"


def watching(
    generation: Generation, guard: LoopGuard, events: Iterable[Event] | None = None
) -> Iterator[Event]:
    """`events` (by default `generation`'s own) with each sequence watched for loops.

    Pass the phrase bans' events (`backend.session.phrase_bans.backtracking`) as
    `events` when both run: a rewind restarts the watch from the tokens kept.
    """
    watches: dict[int, SectionLoopWatch] = {}
    sections: dict[int, list[Section]] = {}  # each sequence's tokens' sections
    for number, event in generation if events is None else events:
        if isinstance(event, TokenEvent):
            watch = watches.get(number)
            if watch is None:
                watch = watches[number] = SectionLoopWatch(guard.rule)
            before = watch.last
            kinds = sections.setdefault(number, [])
            section = event.step.section
            if watch.length != event.index:  # a branch's given tokens
                given = generation.sequences[number].token_ids[: event.index]
                watch.restart(given, _aligned(kinds, len(given), section))
            kinds.append(section)
            found = watch.push(event.step.token_id, section)
            yield number, event
            if watch.last != before:
                yield number, LoopEvent(watch.last)
                if found is not None and guard.mode == "stop":
                    generation.end_after(number, "loop")
        elif isinstance(event, RewindEvent):
            yield number, event
            watch = watches.get(number)
            if watch is not None:
                before = watch.last
                kept = generation.sequences[number].token_ids[: event.index]
                watch.restart(kept, _aligned(sections[number], len(kept), Section.ANSWER))
                if watch.last != before:
                    yield number, LoopEvent(watch.last)
        elif isinstance(event, FinishedEvent):
            watch = watches.get(number)
            yield number, replace(event, loop=None if watch is None else watch.last)
        else:
            yield number, event


def _aligned(kinds: list[Section], length: int, fill: Section) -> list[Section]:
    """`kinds` cut or filled with `fill` to `length` sections (in place): the sections
    of the tokens a watch restarts from."""
    del kinds[length:]
    kinds.extend([fill] * (length - len(kinds)))
    return kinds
