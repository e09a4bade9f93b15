"""A reply's sections: where the model thinks and where it answers.

A thinking model writes its reasoning between a start tag and an end tag (`<think>`
and `</think>`, `[THINK]` and `[/THINK]`, gpt-oss's analysis and final channels),
then the answer. The tags are found as text, across token boundaries: SmolLM2 spells
`<think>` in three tokens, Qwen3 in one, and a model may write `>\\n` as one token.

`SectionTracker` is a pure function of the bytes the tokens spell: its state is
whether the thinking is open and the last bytes that may begin a tag, so a rewind, a
branch or a replay restores it by value. A step's section is the thinking when the
thinking is open before, during or after its token: the token that completes a start
tag and the tokens up to the one that completes an end tag are thinking, the rest
answer. The settings a step is sampled with follow the state before it (the thinking's
from the token after a complete start tag).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sampling.errors import SettingsError


class Section(StrEnum):
    """The two kinds of section of a reply (a string, as a step's row stores it)."""

    THINKING = "thinking"
    ANSWER = "answer"


@dataclass(frozen=True, slots=True)
class SectionState:
    """Where the tracker stands after some text.

    Attributes:
        thinking: Whether the thinking is open.
        tail: The last bytes after the last tag that may be the beginning of the next
            tag (at most the longest tag's length less one).
    """

    thinking: bool = False
    tail: bytes = b""


@dataclass(frozen=True, slots=True)
class SectionSpan:
    """A run of steps of one section.

    Attributes:
        kind: The section.
        first: The index of its first step.
        last: The index of its last step (inclusive).
    """

    kind: Section
    first: int
    last: int

    @property
    def length(self) -> int:
        """How many steps the span holds."""
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class SectionTracker:
    """Finds the thinking's tags in the bytes a reply's tokens spell.

    Attributes:
        start: The start tag's UTF-8 bytes.
        ends: The end tags' UTF-8 bytes; the first that appears closes the thinking.
    """

    start: bytes
    ends: tuple[bytes, ...]

    @classmethod
    def of(cls, start: str, ends: Sequence[str]) -> SectionTracker:
        """The tracker of a start tag and its end tags.

        Raises:
            SettingsError: A tag is empty, or there is no end tag.
        """
        ends = tuple(ends)
        if not start or not ends or not all(ends):
            raise SettingsError(
                "thinking_tags",
                (start, *ends),
                "a start tag and at least one end tag, none empty: START,END",
            )
        return cls(start.encode("utf-8"), tuple(end.encode("utf-8") for end in ends))

    @property
    def _longest(self) -> int:
        return max(len(self.start), *(len(end) for end in self.ends))

    def advance(self, state: SectionState, piece: bytes) -> SectionState:
        """The state after the bytes of one more token."""
        return self.step(state, piece)[1]

    def step(self, state: SectionState, piece: bytes) -> tuple[Section, SectionState]:
        """One token's section and the state after it.

        The token is thinking when the thinking is open before or after it, or opens
        and closes within it.
        """
        text = state.tail + piece
        thinking = state.thinking
        touched = thinking
        position = 0
        while True:
            if thinking:
                found = [
                    (index, end) for end in self.ends if (index := text.find(end, position)) >= 0
                ]
                if not found:
                    break
                index, end = min(found, key=lambda match: (match[0], -len(match[1])))
                position = index + len(end)
                thinking = False
            else:
                index = text.find(self.start, position)
                if index < 0:
                    break
                position = index + len(self.start)
                thinking = True
                touched = True
        keep = self._longest - 1
        tail = text[max(position, len(text) - keep) :] if keep > 0 else b""
        return (Section.THINKING if touched else Section.ANSWER), SectionState(thinking, tail)

    def feed(self, state: SectionState, pieces: Iterable[bytes]) -> SectionState:
        """The state after the bytes of several tokens, in order."""
        for piece in pieces:
            state = self.advance(state, piece)
        return state

    def sections(self, state: SectionState, pieces: Iterable[bytes]) -> list[Section]:
        """Each token's section, starting from `state` (the prompt's)."""
        kinds: list[Section] = []
        for piece in pieces:
            kind, state = self.step(state, piece)
            kinds.append(kind)
        return kinds


def spans_of(kinds: Sequence[Section]) -> tuple[SectionSpan, ...]:
    """The runs of equal sections in a reply's steps, in order."""
    spans: list[SectionSpan] = []
    for index, kind in enumerate(kinds):
        if spans and spans[-1].kind is kind:
            spans[-1] = SectionSpan(kind, spans[-1].first, index)
        else:
            spans.append(SectionSpan(kind, index, index))
    return tuple(spans)
