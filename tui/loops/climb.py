"""A loop's copies one under the other: each token's probability copy after copy, and
what each stage of the sampler did to it.

Each token of a loop has four probabilities, read left to right as the sampler
worked: `raw` (the model's softmax at temperature 1), `penalized` (after the repeat,
frequency and presence penalties), `shaped` (after DRY and the logit bias too: the
record's unfiltered probability) and `drawn` (after the temperature and the filters:
what the draw used). The record holds the last two; the first two need the step's
logits, which the current reply keeps in memory for its latest steps
(`backend.session.step_logits`): without them they are None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from backend.chat.events import TokenEvent
from backend.session.run import StepInput
from sampling.analysis.loops import Loop
from sampling.records import Step
from sampling.samplers.penalties import PenaltiesParams, penalized_logits


@dataclass(frozen=True, slots=True)
class LoopCell:
    """One token of a loop: where it is and what the sampler did to it.

    Attributes:
        index: Its index in the reply.
        copy: Which copy of the loop it lies in (0: the first).
        offset: Its place in the copy (0 … period − 1).
        piece: Its visible text.
        text: The text it added to the reply.
        step: Its record.
        raw: Its probability in the model's own distribution (None: logits not kept).
        penalized: After the repeat / frequency / presence penalties (None: not kept).
    """

    index: int
    copy: int
    offset: int
    piece: str
    text: str
    step: Step
    raw: float | None = None
    penalized: float | None = None

    @property
    def shaped(self) -> float | None:
        """After the penalties, DRY and the logit bias (temperature 1, no filter)."""
        return self.step.prob_unfiltered

    @property
    def drawn(self) -> float:
        """In the distribution the draw used (temperature and filters applied)."""
        return self.step.prob


def _softmax_at(logits: np.ndarray, token: int) -> float:
    values = logits.astype(np.float64)
    finite = values[np.isfinite(values)]
    if not finite.size or not np.isfinite(values[token]):
        return 0.0
    top = float(finite.max())
    weights = np.exp(np.where(np.isfinite(values), values - top, -np.inf))
    return float(weights[token] / weights.sum())


def stage_probs(given: StepInput, step: Step) -> tuple[float, float]:
    """The chosen token's raw probability and after the penalties, from the step's
    own logits and history."""
    token = step.token_id
    raw = _softmax_at(given.logits, token)
    if not step.settings.of(PenaltiesParams).penalizes:
        return raw, raw
    penalized = penalized_logits(given.logits, step.settings, given.history)
    return raw, _softmax_at(np.asarray(penalized), token)


def loop_cells(
    tokens: Sequence[TokenEvent],
    loop: Loop,
    inputs: Callable[[int], StepInput | None] = lambda _: None,
) -> list[list[LoopCell]]:
    """The loop's tokens as rows of copies (the last row may be a part copy: the tokens
    after the last whole one that go on repeating), each with its stages.

    Args:
        tokens: The reply's tokens.
        loop: Its loop.
        inputs: A step's kept logits and history by index (None: not kept).
    """
    end = loop.end
    while end < len(tokens) and (
        tokens[end].step.token_id == tokens[end - loop.period].step.token_id
    ):
        end += 1
    rows: list[list[LoopCell]] = []
    for index in range(loop.start, min(end, len(tokens))):
        step = tokens[index].step
        copy, offset = divmod(index - loop.start, loop.period)
        given = inputs(index)
        raw = penalized = None
        if given is not None:
            raw, penalized = stage_probs(given, step)
        token = tokens[index]
        cell = LoopCell(index, copy, offset, token.piece, token.text, step, raw, penalized)
        if offset == 0:
            rows.append([])
        rows[-1].append(cell)
    return rows


def dry_blind_spot(loop_text: str, breakers: Sequence[str]) -> str | None:
    """The DRY sequence breaker the loop's text holds (DRY's repeat length restarts
    at each breaker, so a loop that holds one is never penalised as one), or None."""
    for breaker in breakers:
        if breaker and breaker in loop_text:
            return breaker
    return None


def climb_text(values: Sequence[float | None]) -> str:
    """A probability copy after copy, e.g. "0.41 → 0.78 → 0.95" ("—": not known)."""
    return " → ".join("—" if value is None else f"{value:.2f}" for value in values)
