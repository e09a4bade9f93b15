"""The token cursor's jump to the next or previous surprising token, across replies."""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.events import TokenEvent
from sampling.analysis.surprise import SurpriseRule


def surprising_after(
    replies: Sequence[Sequence[TokenEvent]],
    cursor: tuple[int, int] | None,
    delta: int,
    rule: SurpriseRule,
) -> tuple[int, int] | None:
    """The first surprising token after (`delta` 1) or before (-1) the cursor.

    Args:
        replies: Each reply's tokens, in conversation order.
        cursor: (reply, token) to start from, not itself a candidate; None starts
            before the first token (forwards) or after the last one (backwards).
        delta: 1 forwards, -1 backwards.
        rule: What counts as surprising.

    Returns:
        (reply, token), or None when no token that way is surprising.
    """
    flat = [(n, i) for n, tokens in enumerate(replies) for i in range(len(tokens))]
    if not flat:
        return None
    if cursor is None or cursor not in flat:
        start = -1 if delta > 0 else len(flat)
    else:
        start = flat.index(cursor)
    order = range(start + 1, len(flat)) if delta > 0 else range(start - 1, -1, -1)
    for position in order:
        number, index = flat[position]
        if rule.matches(replies[number][index].step):
            return number, index
    return None
