"""llama.cpp's reasoning budget as a state machine over token ids.

The states and transitions of `common/reasoning-budget.cpp` (llama.cpp as
llama-cpp-python 0.3.36 vendors it), one immutable value per state, so that a unit
can snapshot and restore it: see `sampling.samplers.reasoning_budget`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class Rules(Protocol):
    """What the machine reads of the budget's rules (`BudgetRules`)."""

    @property
    def budget(self) -> int:
        """The thinking's budget in tokens."""
        ...

    @property
    def start(self) -> TokenMatcher:
        """The start tag."""
        ...

    @property
    def end(self) -> TokenMatcher:
        """The end tags."""
        ...

    @property
    def forced(self) -> tuple[int, ...]:
        """The tokens forced when the budget runs out."""
        ...


class Phase(Enum):
    """The budget's states (llama.cpp's `common_reasoning_budget_state`)."""

    IDLE = "idle"
    COUNTING = "counting"
    WAITING_UTF8 = "waiting_utf8"
    FORCING = "forcing"
    DONE = "done"


def utf8_is_complete(piece: bytes) -> bool:
    """Whether `piece` ends on a whole UTF-8 character (llama.cpp's
    `common_utf8_is_complete`): the last lead byte has all its continuation bytes."""
    if not piece:
        return True
    for back in range(1, min(4, len(piece)) + 1):
        byte = piece[-back]
        if byte & 0xC0 != 0x80:
            expected = 4 if byte >= 0xF0 else 3 if byte >= 0xE0 else 2 if byte >= 0xC0 else 1
            return back >= expected
    return False


@dataclass(frozen=True, slots=True)
class TokenMatcher:
    """Tags as token sequences, matched as llama.cpp's `token_matcher` matches them.

    llama.cpp runs an Aho–Corasick automaton over the tokens and starts it afresh after
    each match; its state stands for the tokens since then. Keeping those tokens (the
    last `longest` of them) and asking which tag ends them gives the same answers.

    Attributes:
        sequences: The tags, empty ones and repeats dropped, in order (a match's index
            points into them).
    """

    sequences: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, sequences: Sequence[Sequence[int]]) -> TokenMatcher:
        """The matcher of `sequences` (empty ones and repeats left out)."""
        kept: list[tuple[int, ...]] = []
        for sequence in sequences:
            ids = tuple(int(token) for token in sequence)
            if ids and ids not in kept:
                kept.append(ids)
        return cls(tuple(kept))

    @property
    def longest(self) -> int:
        """The longest tag's length in tokens."""
        return max((len(s) for s in self.sequences), default=0)

    def advance(self, recent: tuple[int, ...], token: int) -> tuple[tuple[int, ...], int]:
        """The tokens since the last match after `token`, and the index of the longest
        tag ending at it (-1: none; a match starts the tokens afresh)."""
        window = (*recent, token)[-self.longest :] if self.longest else ()
        best, best_length = -1, 0
        for index, sequence in enumerate(self.sequences):
            length = len(sequence)
            if length > best_length and window[-length:] == sequence:
                best, best_length = index, length
        if best >= 0:
            return (), best
        return window, -1


@dataclass(frozen=True, slots=True)
class BudgetMachine:
    """The budget's state after some tokens (llama.cpp's `common_reasoning_budget_ctx`).

    Attributes:
        phase: The state.
        remaining: The tokens the thinking may still take (COUNTING).
        force_pos: The next forced token's position (FORCING).
        start_recent: The start matcher's tokens since its last match.
        end_recent: The end matcher's tokens since its last match.
        end_match: The end tag that ended the thinking (its index), -1 if none.
    """

    phase: Phase = Phase.IDLE
    remaining: int = 0
    force_pos: int = 0
    start_recent: tuple[int, ...] = ()
    end_recent: tuple[int, ...] = ()
    end_match: int = -1

    def accept(self, token: int, complete: bool, rules: Rules) -> BudgetMachine:
        """The state after `token` (`complete`: its text ends on a whole character)."""
        phase = self.phase
        if phase in (Phase.IDLE, Phase.DONE):
            start_recent, match = rules.start.advance(self.start_recent, token)
            if match < 0:
                return BudgetMachine(
                    phase, self.remaining, self.force_pos, start_recent, self.end_recent,
                    self.end_match,
                )  # fmt: skip
            end_recent = () if phase is Phase.DONE else self.end_recent
            if rules.budget <= 0:
                return BudgetMachine(Phase.FORCING, rules.budget, 0, start_recent, end_recent)
            return BudgetMachine(Phase.COUNTING, rules.budget, 0, start_recent, end_recent)
        if phase is Phase.FORCING:
            end_recent, match = rules.end.advance(self.end_recent, token)
            position = self.force_pos + 1
            if position >= len(rules.forced):
                return BudgetMachine(
                    Phase.DONE, self.remaining, position, self.start_recent, end_recent, match
                )
            return BudgetMachine(
                phase, self.remaining, position, self.start_recent, end_recent, self.end_match
            )
        end_recent, match = rules.end.advance(self.end_recent, token)
        if match >= 0:
            return BudgetMachine(
                Phase.DONE, self.remaining, self.force_pos, self.start_recent, end_recent, match
            )
        remaining = self.remaining
        if phase is Phase.WAITING_UTF8:
            if complete:
                return BudgetMachine(Phase.FORCING, remaining, 0, self.start_recent, ())
            return BudgetMachine(phase, remaining, self.force_pos, self.start_recent, end_recent)
        remaining -= 1
        if remaining <= 0:
            waiting = Phase.FORCING if complete else Phase.WAITING_UTF8
            return BudgetMachine(waiting, remaining, 0, self.start_recent, ())
        return BudgetMachine(phase, remaining, self.force_pos, self.start_recent, end_recent)
