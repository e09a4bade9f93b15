"""A forced token's record: its own probability, raw probability and rank, not the
drawn token's."""

from __future__ import annotations

import numpy as np
import pytest

from backend.session.run import forced_step
from sampling.sampler import Sampler
from sampling.settings.record import SamplerSettings


def test_a_forced_token_has_its_own_logit_and_rank() -> None:
    logits = np.log(np.array([0.5, 0.25, 0.15, 0.1], dtype=np.float32))
    settings = SamplerSettings(temperature=0.0)
    drawn = Sampler(settings, vocab_size=4, n_candidates=3).sample(logits)
    assert drawn.token_id == 0 and drawn.rank == 1
    forced = forced_step(drawn, 2, logits, ())
    assert forced.token_id == 2 and forced.rank == 3 and forced.rank_known == 3
    assert forced.prob_unfiltered == pytest.approx(0.15, rel=1e-6)
    below = forced_step(drawn, 3, logits, ())  # below the three-row table
    assert below.rank is None and below.rank_known is None
    assert below.prob_unfiltered is None
