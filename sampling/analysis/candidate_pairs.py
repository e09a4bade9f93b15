"""Both models' most probable tokens at each compared position, side by side.

The test side from its logits, the base side from its stored rows (log-probabilities
kept 16 nats under the top, `sampling.analysis.logprob_codec`); each side's top k by
probability, ties by lower id, with their probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sampling.analysis.logprob_codec import decode_rows
from sampling.analysis.token_scores import top_tokens


@dataclass(frozen=True, slots=True)
class CandidatePairs:
    """n positions' top k of each model.

    Attributes:
        test_ids: (n, k) the test model's most probable tokens, most probable first.
        test_probs: (n, k) their probabilities.
        base_ids: (n, k) the base's.
        base_probs: (n, k) theirs.
    """

    test_ids: npt.NDArray[np.int64]
    test_probs: npt.NDArray[np.float64]
    base_ids: npt.NDArray[np.int64]
    base_probs: npt.NDArray[np.float64]

    @classmethod
    def concatenate(cls, parts: Sequence[CandidatePairs], k: int) -> CandidatePairs:
        """The positions of `parts`, in order."""
        if not parts:
            ids, probs = np.zeros((0, k), np.int64), np.zeros((0, k))
            return cls(ids, probs, ids.copy(), probs.copy())
        return cls(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in ("test_ids", "test_probs", "base_ids", "base_probs")
            )
        )


def candidate_pairs(
    test_logits: npt.NDArray[np.float32], base_rows: npt.NDArray[np.uint16], k: int
) -> CandidatePairs:
    """Each row's top k under the test logits and under the stored base row."""
    n, n_vocab = test_logits.shape
    keep = min(k, n_vocab)
    test_ids = np.empty((n, keep), np.int64)
    base_ids = np.empty((n, keep), np.int64)
    test_probs = np.empty((n, keep))
    base_probs = np.empty((n, keep))
    log_base = decode_rows(base_rows, n_vocab)
    for row in range(n):
        logits = test_logits[row].astype(np.float64)
        test_ids[row] = top_tokens(logits, keep)
        log_norm = logits.max() + np.log(np.exp(logits - logits.max()).sum())
        test_probs[row] = np.exp(logits[test_ids[row]] - log_norm)
        base_ids[row] = top_tokens(log_base[row], keep)
        base_probs[row] = np.exp(log_base[row][base_ids[row]].astype(np.float64))
    return CandidatePairs(test_ids, test_probs, base_ids, base_probs)
