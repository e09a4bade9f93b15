"""The deeper ranks a step records for the tail plot (`Sampler.tail_ranks`)."""

from __future__ import annotations

import numpy as np
import pytest

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.sampler import Sampler, probabilities
from sampling.settings.record import SamplerSettings

RANKS = 256
_LOGITS = np.random.default_rng(7).standard_normal(3000).astype(np.float32) * 3.0

SETTINGS = [
    DEFAULT_CHAT_SETTINGS,
    DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=1.0, min_p=0.0),
    DEFAULT_CHAT_SETTINGS.with_changes(top_k=300, top_p=1.0, min_p=0.0),
    DEFAULT_CHAT_SETTINGS.with_changes(top_k=0, top_p=0.5, min_p=0.0),
]


def test_no_tail_unless_asked() -> None:
    step = Sampler(DEFAULT_CHAT_SETTINGS).sample(_LOGITS)
    assert step.tail is None


@pytest.mark.parametrize("settings", SETTINGS)
def test_tail_extends_the_table_and_leaves_the_step_alone(settings: SamplerSettings) -> None:
    plain = Sampler(settings).sample(_LOGITS)
    sampler = Sampler(settings)
    sampler.tail_ranks = RANKS
    step = sampler.sample(_LOGITS)
    assert step == plain  # same token, same draw, same cut
    assert step.tail is not None and step.tail.ranks == RANKS
    np.testing.assert_array_equal(step.table.token_ids, plain.table.token_ids)
    np.testing.assert_allclose(step.tail.prob_before[:20], plain.table.prob_before, rtol=1e-6)
    np.testing.assert_allclose(step.tail.prob_after[:20], plain.table.prob_after, rtol=1e-6)
    # Exact against the whole distribution, sorted.
    before = np.sort(probabilities(_LOGITS, settings.with_changes(**_NO_FILTER)))[::-1]
    after = np.sort(probabilities(_LOGITS, settings))[::-1]
    np.testing.assert_allclose(step.tail.prob_before, before[:RANKS], rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(step.tail.prob_after, after[:RANKS], rtol=1e-5, atol=1e-12)
    assert int(np.count_nonzero(step.tail.prob_after)) == min(step.n_kept, RANKS)


_NO_FILTER = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
