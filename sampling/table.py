"""A step's candidate table: the top-N rows, their probabilities, and who cut each."""

from __future__ import annotations

import numpy as np

from sampling.entropy import entropy_and_normaliser
from sampling.kept import Kept
from sampling.logits import FloatArray
from sampling.ordering import IdArray, top_ids
from sampling.records import CandidateTable, RankTail
from sampling.workspace import Workspace


def candidate_table(
    penalized: FloatArray,
    maximum: float,
    kept: Kept,
    rows: int,
    workspace: Workspace,
    tail_ranks: int = 0,
) -> tuple[CandidateTable, float, RankTail | None]:
    """The top-`rows` candidates, the entropy of the penalised distribution at T=1,
    and the deeper ranks' probabilities when `tail_ranks` asks for more than `rows`.

    Args:
        penalized: The logits every unit read (after penalties, DRY and logit bias).
        maximum: Their maximum.
        kept: The distribution the chain ended with.
        rows: How many rows (at most the vocabulary).
        workspace: Scratch buffers.
        tail_ranks: How many top ranks the tail plot wants (0: none); they come from
            the same ordering as the table, so they extend it.
    """
    rows = min(rows, penalized.shape[0])
    count = max(rows, min(tail_ranks, penalized.shape[0]))
    if kept.prefix and kept.ids is not None and kept.ids.size >= count:
        ids = kept.ids[:count]
    elif kept.ranked is not None and kept.ranked.size >= count:
        ids = kept.ranked[:count]
    else:
        ids = top_ids(penalized, count)
    entropy, normaliser = entropy_and_normaliser(penalized, maximum, workspace)
    logits = penalized[ids].astype(np.float64)
    before = np.subtract(logits, maximum)  # weights_of at T = 1, from the rows' logits
    np.exp(before, out=before)
    before /= normaliser
    if kept.ids is None:
        after = kept.probs[ids]
    elif kept.prefix:
        after = np.zeros(count)
        shared = min(count, kept.n_kept)
        after[:shared] = kept.probs[:shared]
    else:
        after = _probs_of_rows(penalized, kept, ids)
    tail = None
    if count > rows:
        tail = RankTail(before.astype(np.float32), after.astype(np.float32))
        for column in (tail.prob_before, tail.prob_after):
            column.flags.writeable = False
        ids, before, after = ids[:rows].copy(), before[:rows].copy(), after[:rows].copy()
        logits = logits[:rows].copy()
    kept_rows = after.astype(bool)  # probabilities are never NaN or negative
    removed_by = _removed_by(penalized, logits, ids, kept, kept_rows)
    if kept.bans:
        removed_by = _banned_rows_named(removed_by, ids, kept_rows, kept)
    for array in (ids, logits, before, after, kept_rows):
        array.flags.writeable = False
    return CandidateTable(ids, logits, before, after, kept_rows, removed_by), entropy, tail


def _probs_of_rows(penalized: FloatArray, kept: Kept, ids: IdArray) -> np.ndarray:
    """The rows' probabilities when the kept set is not a prefix of the order."""
    assert kept.ids is not None
    after = np.zeros(ids.shape[0])
    row_of = {int(token): row for row, token in enumerate(ids)}
    # Only kept tokens at least as likely as the last row can be rows.
    lowest = penalized[ids[-1]]
    for position in np.flatnonzero(penalized[kept.ids] >= lowest):
        row = row_of.get(int(kept.ids[position]))
        if row is not None:
            after[row] = kept.probs[position]
    return after


def _removed_by(
    penalized: FloatArray, logits: np.ndarray, ids: IdArray, kept: Kept, kept_rows: np.ndarray
) -> tuple[str, ...]:
    """Per row, the sampler whose cut removed it ("" for a kept row).

    A row alive before a prefix cut survives it when it comes no later in the order
    than the cut's last kept token; other cuts are checked by membership. A row no
    cut removed but with probability 0 was banned (-inf: "logit_bias") or
    underflowed at a low temperature ("temperature").
    """
    if kept.prefix:
        return _removed_from_prefix(logits, ids, kept)
    names = [""] * ids.shape[0]
    alive = np.ones(ids.shape[0], dtype=bool)
    for name, cut_ids, is_prefix in kept.cuts:
        if is_prefix:
            last = int(cut_ids[-1])
            last_logit = float(penalized[last])
            member = (logits > last_logit) | ((logits == last_logit) & (ids <= last))
        else:
            member = np.isin(ids, cut_ids)
        for position in np.flatnonzero(alive & ~member).tolist():
            names[position] = name
        alive &= member
    for position in np.flatnonzero(alive & ~kept_rows).tolist():
        names[position] = _zero_row_name(kept, int(ids[position]), float(logits[position]))
    return tuple(names)


def _banned_rows_named(
    names: tuple[str, ...], ids: IdArray, kept_rows: np.ndarray, kept: Kept
) -> tuple[str, ...]:
    """`names` with each row a recorded ban holds named by it, whatever cut it later.

    (A min_tokens ban's rows are read before the ban: their logits are finite.)
    """
    renamed = list(names)
    for row in np.flatnonzero(~kept_rows).tolist():
        for name, banned in kept.bans:
            if int(ids[row]) in banned:
                renamed[row] = name
                break
    return tuple(renamed)


def _zero_row_name(kept: Kept, token: int, logit: float) -> str:
    """Who zeroed a row no cut removed: the ban that holds it (a -inf logit), else the
    logit bias (a -inf the model gave counts as one), or the underflow's cause."""
    if logit != -np.inf:
        return kept.underflow_by
    for name, banned in kept.bans:
        if token in banned:
            return name
    return "logit_bias"


def _removed_from_prefix(logits: np.ndarray, ids: IdArray, kept: Kept) -> tuple[str, ...]:
    """`_removed_by` when every cut kept a prefix: the rows are the order's first N.

    Cut c removed the rows from its length up to the previous cut's; rows below
    that but past the tokens with a nonzero probability were banned or underflowed.
    Built from runs of one name, with no per-row work in the common case.
    """
    runs: list[tuple[str, ...]] = []
    alive = ids.shape[0]
    for name, cut_ids, _ in kept.cuts:
        length = cut_ids.shape[0]
        if length < alive:
            runs.append((name,) * (alive - length))
            alive = length
    nonzero = min(alive, kept.n_kept)
    if nonzero < alive:
        runs.append(
            tuple(
                _zero_row_name(kept, int(ids[row]), float(logits[row]))
                for row in range(nonzero, alive)
            )
        )
    names: tuple[str, ...] = ("",) * nonzero
    for run in reversed(runs):
        names += run
    return names
