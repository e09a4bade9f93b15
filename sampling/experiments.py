"""Headless experiments: many draws from one fixed distribution (seed 000's `dist`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sampling.logits import checked_logits
from sampling.ordering import sort_descending
from sampling.rng import make_source
from sampling.sampler import probabilities
from sampling.settings.record import SamplerSettings


def draw_counts(logits: object, settings: SamplerSettings, draws: int) -> npt.NDArray[np.int64]:
    """How often each token is drawn in `draws` steps on the same logits.

    Token for token the same draws as `draws` calls of `Sampler(settings).sample`
    on these logits (no history), vectorised: the same generator, the same order.

    Raises:
        LogitsError: The logits cannot be sampled from.
    """
    checked, _, argmax = checked_logits(logits)
    vocab_size = checked.shape[0]
    probs = probabilities(checked, settings)
    if settings.greedy:
        counts = np.zeros(vocab_size, dtype=np.int64)
        counts[argmax] = draws
        return counts
    source = make_source(settings.rng, settings.seed)
    kept_ids = np.flatnonzero(probs)
    if settings.draw == "gumbel":
        # One exponential per kept token per draw, kept tokens in descending order.
        order = sort_descending(checked, kept_ids)
        kept_probs = probs[order]
        exponentials = np.empty((draws, order.size))
        for row in exponentials:
            source.exponentials(row)
        chosen = order[np.argmin(exponentials / kept_probs, axis=1)]
    else:
        # run.c walks its roulette in token-id order; otherwise descending probability.
        xorshift = settings.rng == "xorshift128"
        order = kept_ids if xorshift else sort_descending(checked, kept_ids)
        cumulative = np.cumsum(probs[order])
        uniforms = source.uniforms(draws)
        positions = np.searchsorted(cumulative, uniforms * cumulative[-1], side="right")
        chosen = order[np.minimum(positions, order.size - 1)]
    return np.bincount(chosen, minlength=vocab_size).astype(np.int64)
