"""Repetition loops of a reply that thinks: a loop in the thinking is not one in the answer.

A reply's steps are runs of one section (`sampling.sections.spans_of`). Each run is
watched for loops on its own (`sampling.analysis.loops`, vLLM's rule): the watch starts
again where the section changes, so a repeated run of tokens that begins in the thinking
and goes on in the answer is two runs, each a loop only when it repeats enough on its
own side. A loop found says its section, and its indices are the reply's. A reply that
does not think is one run of the answer: the loops found are those of
`sampling.analysis.loops` as they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from sampling.analysis.loops import Loop, LoopRule, LoopWatch
from sampling.sections import Section, spans_of


class SectionLoopWatch:
    """`LoopWatch` over a reply's tokens, started again at each change of section.

    Args:
        rule: Which repeats count.
    """

    def __init__(self, rule: LoopRule | None = None) -> None:
        self.rule = rule or LoopRule()
        self._watch = LoopWatch(self.rule)
        self._first = 0
        """Where the current section's run began in the reply."""
        self._section: Section | None = None
        """The current run's section (None before any token)."""
        self.loop: Loop | None = None
        """The verdict after the last token, in the current run (None: no loop)."""
        self.last: Loop | None = None
        """The latest loop found since the start (it may have been left since)."""

    @property
    def length(self) -> int:
        """How many tokens it has seen."""
        return self._first + self._watch.length

    def restart(self, tokens: Sequence[int], sections: Sequence[Section]) -> Loop | None:
        """Start again from `tokens` and their sections (after a rewind); returns the
        verdict there (the last run's).

        Raises:
            ValueError: `tokens` and `sections` differ in length.
        """
        if len(tokens) != len(sections):
            raise ValueError(
                f"{len(tokens)} tokens but {len(sections)} sections: expected one a token"
            )
        spans = spans_of(sections)
        if spans:
            self._first, self._section = spans[-1].first, spans[-1].kind
        else:
            self._first, self._section = 0, None
        found = self._watch.restart(tokens[self._first :])
        self.loop = self.last = self._in_reply(found)
        return self.loop

    def push(self, token: int, section: Section) -> Loop | None:
        """Take the next token and its section; returns the verdict with it."""
        if section is not self._section:
            self._first += self._watch.length
            self._section = section
            self._watch.restart(())
        self.loop = self._in_reply(self._watch.push(token))
        if self.loop is not None:
            self.last = self.loop
        return self.loop

    def _in_reply(self, found: Loop | None) -> Loop | None:
        """A loop of the current run, placed in the reply and given its section."""
        if found is None or self._section is None:
            return found
        return replace(found, start=found.start + self._first, section=self._section)


def first_loops(
    tokens: Iterable[int], sections: Iterable[Section], rule: LoopRule | None = None
) -> dict[Section, Loop]:
    """The first loop a watcher finds in each section of a reply (as found then, like
    `sampling.analysis.loops.first_loop`); a section with none is left out.

    Raises:
        ValueError: `tokens` and `sections` differ in length.
    """
    watch = SectionLoopWatch(rule)
    found: dict[Section, Loop] = {}
    for token, section in zip(tokens, sections, strict=True):
        loop = watch.push(int(token), section)
        if loop is not None:
            found.setdefault(section, loop)
    return found
