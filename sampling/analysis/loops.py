"""Repetition loops in a token sequence: vLLM's rule, as a function and as a watcher.

vLLM's `repetition_detection` (vllm/v1/core/sched/utils.py, `check_sequence_repetition`)
ends a request when, for the smallest pattern length p in [min, max] with
p · min_count ≤ the number of output tokens, the last p tokens equal each of the
min_count − 1 blocks of p tokens before them: the last copy repeats min_count times
back to back. `find_loop` gives the same verdict and says more of it: where the
periodic tail began and how many whole copies it holds.

The tail of period p is "periodic" from token s on when every token from s + p on
equals the token p before it; vLLM's condition for p is that this holds over the last
p · (min_count − 1) tokens. `LoopWatch` keeps, for every period in range, the index
from which it holds (a mismatch moves it to the next token), so each new token costs
one comparison per period: O(max_period) a token, in a few numpy operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sampling.sections import Section

DEFAULT_MIN_PERIOD = 1
DEFAULT_MAX_PERIOD = 128
"""The longest loop looked for, in tokens (a few lines of text)."""
DEFAULT_MIN_COUNT = 4
"""Copies back to back that make a loop."""
LONGEST_PERIOD = 65_536
"""The longest max_period (and the most min_count) a rule may ask for: a loop's copies
must fit in the model's context, and a watch holds a few numbers per period of its
range."""

_NO_TOKEN = -1  # before the first token: equal to no token id


@dataclass(frozen=True, slots=True)
class LoopRule:
    """Which repeats count as a loop (vLLM's `RepetitionDetectionParams`).

    Attributes:
        min_period: The shortest period looked for, in tokens (≥ 1).
        max_period: The longest (≥ min_period, ≤ `LONGEST_PERIOD`).
        min_count: How many copies of the last period back to back make a loop (2 to
            `LONGEST_PERIOD`).

    Raises:
        ValueError: A value is out of its range (named in the message).
    """

    min_period: int = DEFAULT_MIN_PERIOD
    max_period: int = DEFAULT_MAX_PERIOD
    min_count: int = DEFAULT_MIN_COUNT

    def __post_init__(self) -> None:
        for name in ("min_period", "max_period", "min_count"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f"invalid {name}={value!r}: expected an integer")
        if self.max_period > LONGEST_PERIOD:
            raise ValueError(
                f"invalid max_period={self.max_period}: expected at most {LONGEST_PERIOD:,}"
                " tokens (a loop's copies must fit in the context)"
            )
        if self.min_period < 1:
            raise ValueError(f"invalid min_period={self.min_period}: expected at least 1")
        if self.max_period < self.min_period:
            raise ValueError(
                f"invalid max_period={self.max_period}: expected at least "
                f"min_period={self.min_period}"
            )
        if not 2 <= self.min_count <= LONGEST_PERIOD:
            raise ValueError(
                f"invalid min_count={self.min_count}: expected 2 to {LONGEST_PERIOD:,}"
                " (the copies must fit in the context)"
            )

    @property
    def text(self) -> str:
        """The rule as the command line takes it: "MIN,MAX,COUNT"."""
        return f"{self.min_period},{self.max_period},{self.min_count}"

    @classmethod
    def parse(cls, text: str) -> LoopRule:
        """A rule from "MIN,MAX,COUNT" ("" is the default rule).

        Raises:
            ValueError: Not three integers, or one out of its range.
        """
        if not text.strip():
            return cls()
        parts = [part.strip() for part in text.split(",")]
        try:
            values = [int(part) for part in parts]
        except ValueError:
            values = []
        if len(values) != 3:
            raise ValueError(
                f"invalid loop rule {text!r}: expected MIN,MAX,COUNT (three integers, "
                f"e.g. {cls().text})"
            )
        return cls(*values)


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop at the end of a token sequence.

    Attributes:
        period: Its length in tokens (the smallest in range that the rule finds).
        start: The index of the first token of the periodic tail: from there on the
            tokens repeat with this period (each token from `start + period` on equals
            the one a period before it).
        count: How many whole copies the tail holds (at least the rule's min_count).
        section: The section of the reply it lies in: a loop never spans the thinking's
            end (`sampling.analysis.section_loops`); the answer for a reply that does
            not think.
    """

    period: int
    start: int
    count: int
    section: Section = Section.ANSWER

    @property
    def end(self) -> int:
        """The index just past the last whole copy."""
        return self.start + self.period * self.count

    def copy_of(self, index: int) -> int:
        """Which copy (0-based) token `index` lies in."""
        return (index - self.start) // self.period

    @property
    def section_note(self) -> str:
        """ " in the thinking" for a loop in the thinking, else "" (for its labels)."""
        return " in the thinking" if self.section is Section.THINKING else ""

    def to_dict(self) -> dict[str, int | str]:
        """The loop as JSON (`--json`, the store): "section" only for a loop in the
        thinking (a loop without it is in the answer, as loops stored before read)."""
        values: dict[str, int | str] = {
            "period": self.period,
            "start": self.start,
            "count": self.count,
        }
        if self.section is Section.THINKING:
            values["section"] = str(self.section)
        return values

    @classmethod
    def from_dict(cls, values: object) -> Loop:
        """The loop from its JSON form.

        Raises:
            ValueError: Not such an object.
        """
        if not isinstance(values, dict):
            raise ValueError(f"not a loop record: {values!r}")
        try:
            loop = cls(
                int(values["period"]),
                int(values["start"]),
                int(values["count"]),
                Section(values.get("section", Section.ANSWER)),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a loop record: {values!r} ({error})") from None
        if loop.period < 1 or loop.start < 0 or loop.count < 1:
            raise ValueError(f"not a loop record: {values!r}")
        return loop


def _as_tokens(tokens: Sequence[int] | npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    array = np.asarray(tokens, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"the tokens must be a flat sequence, got shape {array.shape}")
    return array


def periodic_from(tokens: npt.NDArray[np.int64], period: int) -> int:
    """The start of the longest tail of `tokens` that repeats with `period` (the index
    from which each token equals the one `period` before it, minus `period`); the
    length of `tokens` when they are fewer than a period."""
    n = int(tokens.shape[0])
    if n <= period:
        return n
    mismatches = np.flatnonzero(tokens[period:] != tokens[:-period])
    last = int(mismatches[-1]) + period if mismatches.size else period - 1
    return last + 1 - period


def find_loop(
    tokens: Sequence[int] | npt.NDArray[np.integer],
    min_period: int = DEFAULT_MIN_PERIOD,
    max_period: int = DEFAULT_MAX_PERIOD,
    min_count: int = DEFAULT_MIN_COUNT,
) -> Loop | None:
    """The loop `tokens` end in, by vLLM's rule, or None.

    The smallest period p in [min_period, max_period] (with p · min_count tokens at
    least) whose last p tokens repeat min_count times back to back; the loop's
    `start` is where its periodic tail began and `count` its whole copies.

    Raises:
        ValueError: The rule's values are out of range, or `tokens` is not flat.
    """
    rule = LoopRule(min_period, max_period, min_count)
    array = _as_tokens(tokens)
    n = int(array.shape[0])
    for period in range(rule.min_period, rule.max_period + 1):
        span = period * rule.min_count
        if span > n:
            return None
        tail = array[n - span :]
        if np.array_equal(tail[period:], tail[:-period]):
            start = periodic_from(array, period)
            return Loop(period, start, (n - start) // period)
    return None


class LoopWatch:
    """`find_loop` kept up to date token by token (amortised O(max_period) a token).

    Per period p it keeps `since[p]`: the first index from which every token equals
    the one p before it. A new token compares itself with the tokens 1 … max_period
    back (one array), and moves `since` past it where they differ. The rule holds for
    p when p · (min_count − 1) tokens end the run; the smallest such p is the verdict.

    Args:
        rule: Which repeats count.
        tokens: The sequence so far (e.g. a branch's tokens before its fork).
    """

    def __init__(self, rule: LoopRule | None = None, tokens: Iterable[int] = ()) -> None:
        self.rule = rule or LoopRule()
        periods = np.arange(1, self.rule.max_period + 1, dtype=np.int64)
        # Periods below the range can never be long enough.
        self._need = np.where(
            periods >= self.rule.min_period,
            periods * (self.rule.min_count - 1),
            np.iinfo(np.int64).max // 2,
        )
        self.restart(tokens)

    def restart(self, tokens: Iterable[int]) -> Loop | None:
        """Start again from `tokens` (after a rewind); returns the verdict there."""
        array = _as_tokens(list(tokens))
        n = int(array.shape[0])
        size = self.rule.max_period
        self._recent = np.full(size, _NO_TOKEN, dtype=np.int64)
        """The tokens 1, 2, … max_period back, most recent first."""
        back = min(n, size)
        if back:
            self._recent[:back] = array[::-1][:back]
        self._since = np.array(
            [periodic_from(array, p) + p if n > p else n for p in range(1, size + 1)],
            dtype=np.int64,
        )
        self._n = n
        self.loop = self._verdict()
        """The verdict after the last token (None: no loop)."""
        self.last = self.loop
        """The latest loop found since the start (it may have been left since)."""
        return self.loop

    @property
    def length(self) -> int:
        """How many tokens it has seen."""
        return self._n

    def push(self, token: int) -> Loop | None:
        """Take the next token; returns the verdict with it."""
        recent = self._recent
        n = self._n
        self._since[recent != token] = n + 1
        recent[1:] = recent[:-1]
        recent[0] = token
        self._n = n + 1
        loop = self.loop = self._verdict()
        if loop is not None:
            self.last = loop
        return loop

    def _verdict(self) -> Loop | None:
        n = self._n
        holding = (n - self._since) >= self._need
        index = int(holding.argmax())
        if not holding[index]:
            return None
        period = index + 1
        start = int(self._since[index]) - period
        return Loop(period, start, (n - start) // period)


def first_loop(
    tokens: Sequence[int] | npt.NDArray[np.integer], rule: LoopRule | None = None
) -> Loop | None:
    """The first loop a watcher finds along `tokens` (as found then: `count` is the
    rule's min_count or a little more), or None: what a reply stopped on a loop would
    have stopped at."""
    watch = LoopWatch(rule)
    for token in _as_tokens(tokens).tolist():
        found = watch.push(token)
        if found is not None:
            return found
    return None


def loop_rate(
    replies: Iterable[Sequence[int] | npt.NDArray[np.integer]], rule: LoopRule | None = None
) -> float:
    """The share of `replies` (token sequences) in which a loop forms anywhere
    (`first_loop`); 0.0 for no replies."""
    looped = total = 0
    for tokens in replies:
        total += 1
        looped += first_loop(tokens, rule) is not None
    return looped / total if total else 0.0
