"""A reply's thinking and answer apart, as `generate --json` and `compare --json` give
them."""

from __future__ import annotations

from collections.abc import Sequence

from sampling.records import Step
from sampling.sections import Section, spans_of


def sections_json(
    steps: Sequence[Step], texts: Sequence[str], final_text: str
) -> dict[str, object]:
    """A reply's thinking and answer apart: "thinking" (its text), "text" (the
    answer's: everything for a model that does not think), "sections" (each run of one
    kind: its kind and first and last token) and "thinking_closed" (False when the
    reply ended inside the thinking).

    Args:
        steps: The reply's steps.
        texts: The text each step's token completed.
        final_text: The reply's whole text (it may hold text no step completed yet).
    """
    kinds = [step.section for step in steps]
    pieces = texts[: len(kinds)]
    tail = final_text[len("".join(pieces)) :]
    thinking = "".join(t for t, k in zip(pieces, kinds, strict=True) if k is Section.THINKING)
    answer = "".join(t for t, k in zip(pieces, kinds, strict=True) if k is Section.ANSWER)
    open_at_end = bool(kinds) and kinds[-1] is Section.THINKING
    if open_at_end:
        thinking += tail
    else:
        answer += tail
    return {
        "text": answer,
        "thinking": thinking,
        "sections": [
            {"kind": str(span.kind), "first": span.first, "last": span.last}
            for span in spans_of(kinds)
        ],
        "thinking_closed": not open_at_end,
    }
