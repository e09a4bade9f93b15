"""A reply's thinking as every view shows it: folded under one summary line, or open.

A thinking model's reply is a run of thinking steps, then the answer (`Step.section`,
`sampling.sections`). The chat's replies, the compare columns and the sweep's samples
fold each run of thinking into one line, "▸ thought for 212 tokens", and open it
("▾ thought for 212 tokens" over the thinking, dimmed) with the thinking key or when
the token cursor goes into it. While the thinking streams in, the line says
"thinking… 12 tokens" (open: "▾ thinking…", the tokens growing under it).

The steps record how long the sampler took, not the model, so the line gives no time.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.events import TokenEvent
from sampling.sections import Section, SectionSpan, spans_of

FOLDED_MARK = "▸"
OPEN_MARK = "▾"


def is_thinking(event: TokenEvent) -> bool:
    """Whether the token belongs to the thinking."""
    return event.step.section is Section.THINKING


def thinking_spans(tokens: Sequence[TokenEvent]) -> tuple[SectionSpan, ...]:
    """The runs of thinking among `tokens`, in order."""
    if not any(is_thinking(token) for token in tokens):
        return ()
    kinds = [token.step.section for token in tokens]
    return tuple(span for span in spans_of(kinds) if span.kind is Section.THINKING)


def summary(length: int, *, done: bool, folded: bool) -> str:
    """The line a run of thinking shows: "▸ thought for 212 tokens"; while it streams
    "▸ thinking… 12 tokens" folded, "▾ thinking…" open (its tokens show the count)."""
    mark = FOLDED_MARK if folded else OPEN_MARK
    tokens = f"{length} token{'' if length == 1 else 's'}"
    if done:
        return f"{mark} thought for {tokens}"
    return f"{mark} thinking… {tokens}" if folded else f"{mark} thinking…"
