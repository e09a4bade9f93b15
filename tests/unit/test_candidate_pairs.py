"""Both models' top candidates at a position (sampling.analysis.candidate_pairs) and the score
screen's jumps and colours (tui.score.kld_view)."""

from __future__ import annotations

import numpy as np
import pytest

from sampling.analysis.candidate_pairs import CandidatePairs, candidate_pairs
from sampling.analysis.logprob_codec import encode_rows
from tui.score.kld_view import KLD_BANDS, kld_style, next_in


def test_top_candidates_of_both_sides() -> None:
    rng = np.random.default_rng(7)
    base = (rng.standard_normal((5, 300)) * 3).astype(np.float32)
    test = (base + rng.standard_normal((5, 300))).astype(np.float32)
    got = candidate_pairs(test, encode_rows(base), 4)
    for row in range(5):
        assert got.test_ids[row].tolist() == np.argsort(-test[row], kind="stable")[:4].tolist()
        assert got.base_ids[row].tolist() == np.argsort(-base[row], kind="stable")[:4].tolist()
        t = test[row].astype(np.float64)
        p_test = np.exp(t - t.max()) / np.exp(t - t.max()).sum()
        assert got.test_probs[row] == pytest.approx(p_test[got.test_ids[row]], rel=1e-6)
        b = base[row].astype(np.float64)
        p_base = np.exp(b - b.max()) / np.exp(b - b.max()).sum()
        assert got.base_probs[row] == pytest.approx(p_base[got.base_ids[row]], rel=1e-3)
    both = CandidatePairs.concatenate([got, got], 4)
    assert both.test_ids.shape == (10, 4)
    assert CandidatePairs.concatenate([], 4).base_probs.shape == (0, 4)


def test_bands() -> None:
    assert kld_style(0.0) == KLD_BANDS[0][1]
    assert kld_style(0.05) == KLD_BANDS[1][1]
    assert kld_style(0.5) == KLD_BANDS[2][1]
    assert kld_style(7.0) == KLD_BANDS[3][1]


def test_jumps() -> None:
    ranked = [8, 3, 5]  # rows by KLD, largest first
    assert next_in(ranked, None, cyclic_after=False) == 8
    assert next_in(ranked, 8, cyclic_after=False) == 3
    assert next_in(ranked, 5, cyclic_after=False) == 8  # wraps
    differ = [2, 6, 9]  # rows where the top tokens differ, in text order
    assert next_in(differ, 0, cyclic_after=True) == 2
    assert next_in(differ, 6, cyclic_after=True) == 9
    assert next_in(differ, 9, cyclic_after=True) == 2
    assert next_in([], 3, cyclic_after=True) is None
