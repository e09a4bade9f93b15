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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np

from sampling.errors import SettingsError

if TYPE_CHECKING:
    from sampling.logits import History
    from sampling.vocabulary import Vocabulary

DEFAULT_TAGS: tuple[str, str] = ("<think>", "</think>")
"""The tags a reasoning budget watches when neither the settings nor the model name any."""

_CHECKED = 8
"""How many of the last tokens a watch compares to tell that a history goes on from
the one it took (a constant cost a step; a rewind or a branch restores its state)."""


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


_LONGEST: dict[SectionTracker, int] = {}
"""Each tracker's longest tag in bytes (a frozen slotted value keeps no cache)."""


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
        return _LONGEST.get(self) or _LONGEST.setdefault(
            self, max(len(self.start), *(len(end) for end in self.ends))
        )

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


@dataclass(frozen=True, slots=True)
class SectionSnapshot:
    """A `SectionWatch`'s state, frozen (what a sampler's state keeps).

    Attributes:
        taken: How many of the history's tokens it took.
        recent: The last of them (up to `_CHECKED`), to check a history against.
        state: The tracker's state after them.
        answer_start: The history index of the first token after the thinking last
            closed (0: it never closed).
    """

    taken: int = 0
    recent: tuple[int, ...] = ()
    state: SectionState = SectionState()
    answer_start: int = 0


@dataclass(slots=True, eq=False)
class SectionWatch:
    """The sections of a history, learnt token by token as it grows.

    It takes the history's tokens it has not taken yet at every step (the prompt's
    first), so its state follows from the history alone: a rewind, a branch, a
    what-if or a replay that hands it a history gets that history's sections. A
    history shorter than the one taken, or whose last tokens there differ, is taken
    again from the start (a rewind restores a snapshot instead, `restore`); checking
    the last few tokens rather than all keeps a step's cost constant.

    Attributes:
        tracker: The tags.
        spell: A token's bytes (special tokens by their text).
        now: Where it stands.
        peeked: The last token `section_of` was asked about, its section and the
            state after it (the next step takes it without tracking it again).
    """

    tracker: SectionTracker
    spell: Callable[[int], bytes]
    now: SectionSnapshot = field(default_factory=SectionSnapshot)
    peeked: tuple[int, Section, SectionState] | None = None

    @property
    def thinking(self) -> bool:
        """Whether the thinking is open after the tokens taken."""
        return self.now.state.thinking

    def catch_up(self, history: History) -> None:
        """Take the history's tokens not taken yet (all again when it is another
        history than the one taken)."""
        now = self.now
        size = len(history)
        taken = now.taken
        if taken:
            recent = _ints(history[max(0, taken - _CHECKED) : taken]) if size >= taken else ()
            if recent != now.recent:
                now = SectionSnapshot()
                taken = 0
        if taken == size:
            self.now = now
            return
        state, answer_start = now.state, now.answer_start
        tracker, spell, peeked = self.tracker, self.spell, self.peeked
        fresh = _ints(history[taken:])
        for offset, token in enumerate(fresh):
            if peeked is not None and peeked[0] == token:
                kind, after = peeked[1], peeked[2]
            else:
                kind, after = tracker.step(state, spell(token))
            peeked = None
            state = after
            if kind is Section.THINKING and not state.thinking:
                answer_start = taken + offset + 1
        self.peeked = None
        recent = fresh[-_CHECKED:] if len(fresh) >= _CHECKED else (*now.recent, *fresh)[-_CHECKED:]
        self.now = SectionSnapshot(size, recent, state, answer_start)

    def section_of(self, token: int) -> Section:
        """The section `token` has after the tokens taken."""
        kind, after = self.tracker.step(self.now.state, self.spell(token))
        self.peeked = (token, kind, after)
        return kind

    def restore(self, snapshot: SectionSnapshot) -> None:
        """Stand where `snapshot` stood."""
        self.now = snapshot
        self.peeked = None

    def reset(self) -> None:
        """A new reply: nothing taken (the prompt is taken again)."""
        self.restore(SectionSnapshot())


def _ints(tokens: History) -> tuple[int, ...]:
    """Token ids as a tuple (from a list, a tuple or an array alike)."""
    if isinstance(tokens, np.ndarray):
        return tuple(tokens.tolist())
    return tuple(tokens)


def speller(vocabulary: Vocabulary) -> Callable[[int], bytes]:
    """A token's bytes, special tokens by their text (a tag may be one: gpt-oss's
    `<|channel|>`), each token spelled once."""
    spelled: dict[int, bytes] = {}

    def spell(token: int) -> bytes:
        piece = spelled.get(token)
        if piece is None:
            piece = spelled[token] = vocabulary.token_bytes(token, special=True)
        return piece

    return spell
