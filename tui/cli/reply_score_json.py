"""A reply's score as JSON (`generate --json`, `compare --json`, `export`): a figure that
is not finite, or not recorded, is null. A reply that thinks has its sections' scores
too, as `thinking` and `answer` (null when the reply ended in its thinking); one that
does not has neither key."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from sampling.analysis.reply_score import ReplyScore, reply_score
from sampling.records import Step
from tui.cli.json_numbers import finite_or_null


def reply_score_json(steps: Sequence[Step]) -> dict[str, Any] | None:
    """`generate --json`'s `score` object: the reply's score from its steps (None for
    no token; a figure that is not finite, or not recorded, is null)."""
    return reply_score_object(reply_score(steps))


def reply_score_object(score: ReplyScore | None) -> dict[str, Any] | None:
    """A reply's score as JSON; a figure that is not finite (or not recorded) is null."""
    if score is None:
        return None
    figures = {
        field.name: finite_or_null(getattr(score, field.name))
        for field in fields(score)
        if field.name not in _SECTIONS
    }
    if score.thinking is None:
        return figures
    return {
        **figures,
        "thinking": reply_score_object(score.thinking),
        "answer": reply_score_object(score.answer),
    }


#: The fields that hold the sections' own scores.
_SECTIONS = ("thinking", "answer")
