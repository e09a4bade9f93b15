"""How far a test model's distributions are from a base model's, position by position,
and the totals `llama-perplexity --kl-divergence` prints.

The base side is always the stored form (`sampling.analysis.logprob_codec`): log-probabilities
kept 16 nats under the top, as llama-perplexity compares them. Per position, as its
`log_softmax(..., base_log_prob, ...)` computes in float32:

- KLD = Σ p_base · (log p_base − log p_test) over the tokens whose stored base
  log-probability is above −16 (the others add nothing);
- the reverse KLD Σ p_test · (log p_test − log p_base) over every token, the base
  at its stored floor where it was cut (this one llama-perplexity does not give);
- Δp = p_test(token) − p_base(token) for the token that came;
- whether the two most probable tokens are the same (first index on ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sampling.analysis.logprob_codec import (
    HEADER_SLOTS,
    decode_rows,
    log_sum_exp_rows,
    row_headers,
    row_width,
)
from sampling.errors import LogitsError

#: Stored base log-probabilities at or under this take no part in the KLD (nats).
KLD_FLOOR = -16.0

#: Rows compared at once (bounds scratch memory to a few rows of the vocabulary).
ROWS_AT_ONCE = 16


@dataclass(frozen=True, slots=True)
class PositionDivergence:
    """n positions compared, one entry per position.

    Attributes:
        nll_test: −log p_test(token), nats (float32, as llama.cpp rounds it).
        nll_base: −log p_base(token) from the stored row.
        kld: KL(base ‖ test), nats.
        kld_reverse: KL(test ‖ base), nats, the base at its stored floor where cut.
        delta_p: p_test(token) − p_base(token).
        top_test: The test model's most probable token.
        top_base: The base's most probable token (stored row).
    """

    nll_test: npt.NDArray[np.float32]
    nll_base: npt.NDArray[np.float32]
    kld: npt.NDArray[np.float64]
    kld_reverse: npt.NDArray[np.float64]
    delta_p: npt.NDArray[np.float32]
    top_test: npt.NDArray[np.int64]
    top_base: npt.NDArray[np.int64]

    @classmethod
    def concatenate(cls, parts: Sequence[PositionDivergence], n_vocab: int) -> PositionDivergence:
        """The positions of `parts`, in order (none: an empty record)."""
        if not parts:
            empty = np.zeros((0, n_vocab), np.float32)
            return _compare_block(
                empty, np.zeros((0, row_width(n_vocab)), np.uint16), np.zeros(0, np.int64)
            )
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _FIELDS))

    @property
    def p_test(self) -> npt.NDArray[np.float32]:
        """p_test(token)."""
        result: npt.NDArray[np.float32] = np.exp(-self.nll_test)
        return result

    @property
    def p_base(self) -> npt.NDArray[np.float32]:
        """p_base(token)."""
        result: npt.NDArray[np.float32] = np.exp(-self.nll_base)
        return result


def compare_rows(
    test_logits: npt.NDArray[np.float32],
    base_rows: npt.NDArray[np.uint16],
    targets: npt.NDArray[np.integer] | list[int],
) -> PositionDivergence:
    """Compare each row of test logits with the stored base row of the same position.

    Args:
        test_logits: (n, vocabulary) logits of the test model.
        base_rows: (n, row width) stored base log-probabilities.
        targets: The n tokens that came at those positions.

    Raises:
        LogitsError: The shapes disagree, a target is outside the vocabulary, or a
            test row has no finite maximum.
    """
    if test_logits.ndim != 2:
        raise LogitsError(f"test logits must be 2-D (rows × vocabulary), got {test_logits.ndim}-D")
    n, n_vocab = test_logits.shape
    target_ids = np.asarray(targets, dtype=np.int64)
    if target_ids.shape != (n,) or base_rows.shape[0] != n:
        raise LogitsError(
            f"{n} test rows, {base_rows.shape[0]} base rows and {target_ids.size} tokens: expected"
            " one of each per position"
        )
    if n and (target_ids.min() < 0 or target_ids.max() >= n_vocab):
        raise LogitsError(f"a token is outside the vocabulary of {n_vocab}")
    parts = [
        _compare_block(
            np.asarray(test_logits[b : b + ROWS_AT_ONCE], dtype=np.float32),
            base_rows[b : b + ROWS_AT_ONCE],
            target_ids[b : b + ROWS_AT_ONCE],
        )
        for b in range(0, n, ROWS_AT_ONCE)
    ]
    return PositionDivergence.concatenate(parts, n_vocab)


_FIELDS = ("nll_test", "nll_base", "kld", "kld_reverse", "delta_p", "top_test", "top_base")


def _compare_block(
    block: npt.NDArray[np.float32],
    base_rows: npt.NDArray[np.uint16],
    targets: npt.NDArray[np.int64],
) -> PositionDivergence:
    n, n_vocab = block.shape
    top = block.max(axis=1) if n else np.zeros(0, np.float32)
    if not np.all(np.isfinite(top)):
        bad = int(np.flatnonzero(~np.isfinite(top))[0])
        raise LogitsError(f"the test logits of row {bad} have no finite maximum")
    log_sum_exp = log_sum_exp_rows(block, top) if n else np.zeros(0, np.float32)
    rows = np.arange(n)
    nll_test = (top + log_sum_exp) - block[rows, targets]
    scale, floor = row_headers(base_rows)
    steps = base_rows[rows, HEADER_SLOTS + targets].astype(np.float32)
    nll_base = -(scale * steps + floor)
    log_base = decode_rows(base_rows, n_vocab)
    log_norm = (top + log_sum_exp)[:, None]
    log_test = block - log_norm
    p_base = np.exp(log_base)
    # llama.cpp's order of operations: p_base * (log p_base - logit + log norm), only
    # where the stored base is above -16 nats.
    terms = p_base * ((log_base - block) + log_norm)
    np.multiply(terms, log_base > np.float32(KLD_FLOOR), out=terms)
    kld = np.add.reduce(terms, axis=1, dtype=np.float64)
    p_test = np.exp(log_test)
    kld_reverse = (p_test * (log_test - log_base)).sum(axis=1, dtype=np.float64)
    delta_p = np.exp(-nll_test) - np.exp(-nll_base)
    return PositionDivergence(
        nll_test.astype(np.float32),
        nll_base.astype(np.float32),
        kld,
        kld_reverse,
        delta_p.astype(np.float32),
        block.argmax(axis=1).astype(np.int64) if n else np.zeros(0, np.int64),
        log_base.argmax(axis=1).astype(np.int64) if n else np.zeros(0, np.int64),
    )


@dataclass
class DivergenceTotals:
    """The running sums llama-perplexity keeps (`kl_divergence_result`), and every
    position's KLD and Δp for the percentiles. Add positions with `add`."""

    sum_nll: float = 0.0
    sum_nll2: float = 0.0
    sum_nll_base: float = 0.0
    sum_nll_base2: float = 0.0
    sum_nll_nll_base: float = 0.0
    sum_kld: float = 0.0
    sum_kld2: float = 0.0
    sum_p_diff: float = 0.0
    sum_p_diff2: float = 0.0
    sum_p_diff4: float = 0.0
    n_same_top: int = 0
    count: int = 0
    kld_values: list[npt.NDArray[np.float32]] = field(default_factory=list)
    p_diff_values: list[npt.NDArray[np.float32]] = field(default_factory=list)

    def add(self, positions: PositionDivergence) -> None:
        """Add compared positions (llama.cpp's products in float32, sums in float64)."""
        nll = positions.nll_test
        nll_base = positions.nll_base
        self.sum_nll += float(nll.sum(dtype=np.float64))
        self.sum_nll2 += float((nll * nll).sum(dtype=np.float64))
        self.sum_nll_base += float(nll_base.sum(dtype=np.float64))
        self.sum_nll_base2 += float((nll_base * nll_base).sum(dtype=np.float64))
        self.sum_nll_nll_base += float((nll * nll_base).sum(dtype=np.float64))
        self.sum_kld += float(positions.kld.sum())
        self.sum_kld2 += float((positions.kld * positions.kld).sum())
        p_diff2 = (positions.delta_p * positions.delta_p).astype(np.float64)
        self.sum_p_diff += float(positions.delta_p.sum(dtype=np.float64))
        self.sum_p_diff2 += float(p_diff2.sum())
        self.sum_p_diff4 += float((p_diff2 * p_diff2).sum())
        self.n_same_top += int(np.count_nonzero(positions.top_test == positions.top_base))
        self.count += int(nll.shape[0])
        self.kld_values.append(positions.kld.astype(np.float32))
        self.p_diff_values.append(positions.delta_p.astype(np.float32))


@dataclass(frozen=True, slots=True)
class Estimate:
    """A value and its uncertainty (one standard error, as llama-perplexity gives it)."""

    value: float
    uncertainty: float


@dataclass(frozen=True, slots=True)
class DivergenceSummary:
    """What `llama-perplexity --kl-divergence` prints after its last chunk.

    Attributes:
        count: Positions compared.
        ppl_test, ppl_base: Each model's perplexity over them.
        log_ppl_correlation: Correlation of the two models' ln PPL estimates.
        log_ppl_ratio: Mean ln(PPL(test)/PPL(base)).
        ppl_ratio: PPL(test)/PPL(base).
        ppl_difference: PPL(test) − PPL(base).
        kld: Mean KLD.
        kld_percentiles: (label, value) from the maximum down to the minimum:
            Maximum, 99.9%, 99.0%, 95.0%, 90.0%, Median, 10.0%, 5.0%, 1.0%, 0.1%, Minimum.
        delta_p: Mean Δp.
        delta_p_percentiles: (label, value) from the maximum down to the minimum.
        rms_delta_p: Root mean square Δp.
        same_top: The fraction of positions where both models' top token is the same.
    """

    count: int
    ppl_test: Estimate
    ppl_base: Estimate
    log_ppl_correlation: float
    log_ppl_ratio: Estimate
    ppl_ratio: Estimate
    ppl_difference: Estimate
    kld: Estimate
    kld_percentiles: tuple[tuple[str, float], ...]
    delta_p: Estimate
    delta_p_percentiles: tuple[tuple[str, float], ...]
    rms_delta_p: Estimate
    same_top: Estimate

    def kld_at(self, label: str) -> float:
        """A KLD percentile by its label ("Median", "99.0%", "Maximum", ...)."""
        return dict(self.kld_percentiles)[label]


def mean_and_uncertainty(total: float, total2: float, count: int) -> Estimate:
    """Mean and its standard error from a sum and a sum of squares (llama-perplexity's
    `mean_and_uncertainty`: no uncertainty for 10 values or fewer)."""
    if count < 1:
        return Estimate(0.0, 0.0)
    mean = total / count
    variance = total2 / count - mean * mean
    error = float(np.sqrt(variance / (count - 1))) if variance > 0 and count > 10 else 0.0
    return Estimate(mean, error)


def covariance(sum_a: float, sum_b: float, sum_ab: float, count: int) -> float:
    """Covariance of two means (llama-perplexity's: 0 for fewer than 10 values)."""
    if count < 10:
        return 0.0
    return (sum_ab / count - (sum_a / count) * (sum_b / count)) / (count - 1)


def percentile(values: npt.NDArray[np.float32], fraction: float) -> float:
    """llama-perplexity's percentile of sorted float32 values: linear between the two
    nearest ranks, in float32."""
    if fraction <= 0:
        return float(values[0])
    if fraction >= 1:
        return float(values[-1])
    p = np.float32(fraction) * np.float32(values.size - 1)
    index = int(p)
    p -= np.float32(index)
    upper = values[min(index + 1, values.size - 1)]
    return float((np.float32(1) - p) * values[index] + p * upper)


def median(values: npt.NDArray[np.float32]) -> float:
    """The middle of sorted values (the mean of the two middle ones for an even count)."""
    half = values.size // 2
    if values.size % 2 == 0:
        return float(np.float32(0.5) * (values[half] + values[half - 1]))
    return float(values[half])


_KLD_LEVELS = (0.999, 0.99, 0.95, 0.90, None, 0.10, 0.05, 0.01, 0.001)
_DELTA_P_LEVELS = (0.999, 0.99, 0.95, 0.90, 0.75, None, 0.25, 0.10, 0.05, 0.01, 0.001)


def _percentiles(
    values: npt.NDArray[np.float32], levels: tuple[float | None, ...]
) -> tuple[tuple[str, float], ...]:
    table = [("Maximum", float(values[-1]))]
    for level in levels:
        if level is None:
            table.append(("Median", median(values)))
        else:
            table.append((f"{100 * level:.1f}%", percentile(values, level)))
    table.append(("Minimum", float(values[0])))
    return tuple(table)


def summarize(totals: DivergenceTotals) -> DivergenceSummary:
    """The statistics llama-perplexity prints, with its uncertainties.

    Raises:
        LogitsError: No position was compared.
    """
    count = totals.count
    if count < 2:
        raise LogitsError(f"{count} position compared: the statistics need at least 2")
    log_ppl = mean_and_uncertainty(totals.sum_nll, totals.sum_nll2, count)
    log_ppl_base = mean_and_uncertainty(totals.sum_nll_base, totals.sum_nll_base2, count)
    ppl = float(np.exp(log_ppl.value))
    ppl_base = float(np.exp(log_ppl_base.value))
    ppl_test = Estimate(ppl, ppl * log_ppl.uncertainty)
    ppl_base_estimate = Estimate(ppl_base, ppl_base * log_ppl_base.uncertainty)
    cov = covariance(totals.sum_nll, totals.sum_nll_base, totals.sum_nll_nll_base, count)
    spread = log_ppl.uncertainty * log_ppl_base.uncertainty
    correlation = cov / spread if spread > 0 else float("nan")
    ratio_value = log_ppl.value - log_ppl_base.value
    ratio_error = _root(log_ppl.uncertainty**2 + log_ppl_base.uncertainty**2 - 2.0 * cov)
    ppl_ratio = float(np.exp(ratio_value))
    ppl_cov = ppl * ppl_base * cov
    difference_error = _root(
        ppl_test.uncertainty**2 + ppl_base_estimate.uncertainty**2 - 2.0 * ppl_cov
    )
    kld_values = np.sort(np.concatenate(totals.kld_values))
    p_diff_values = np.sort(np.concatenate(totals.p_diff_values))
    mse = mean_and_uncertainty(totals.sum_p_diff2, totals.sum_p_diff4, count)
    rms = float(np.sqrt(mse.value))
    same = totals.n_same_top / count
    return DivergenceSummary(
        count=count,
        ppl_test=ppl_test,
        ppl_base=ppl_base_estimate,
        log_ppl_correlation=correlation,
        log_ppl_ratio=Estimate(ratio_value, ratio_error),
        ppl_ratio=Estimate(ppl_ratio, ppl_ratio * ratio_error),
        ppl_difference=Estimate(ppl - ppl_base, difference_error),
        kld=mean_and_uncertainty(totals.sum_kld, totals.sum_kld2, count),
        kld_percentiles=_percentiles(kld_values, _KLD_LEVELS),
        delta_p=mean_and_uncertainty(totals.sum_p_diff, totals.sum_p_diff2, count),
        delta_p_percentiles=_percentiles(p_diff_values, _DELTA_P_LEVELS),
        rms_delta_p=Estimate(rms, 0.5 / rms * mse.uncertainty if rms > 0 else 0.0),
        same_top=Estimate(same, float(np.sqrt(same * (1.0 - same) / (count - 1)))),
    )


def _root(value: float) -> float:
    """√value, NaN for a negative value (as C's sqrt)."""
    return float(np.sqrt(value)) if value >= 0 else float("nan")
