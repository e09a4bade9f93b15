"""One-line equivalents of candle's `Sampling` modes and of run.c's `-t -k -s`.

Each returns the `SamplerSettings` that samples exactly as the original would, so
every example of the two seed documents can be written directly, e.g.
`Sampler(candle_top_k_then_top_p(k=3, p=0.75, temperature=1.0, seed=42))`.
"""

from __future__ import annotations

from sampling.settings.record import SamplerSettings

_CANDLE_GREEDY_BELOW = 1e-7


def candle_argmax(seed: int = 0) -> SamplerSettings:
    """candle `Sampling::ArgMax`."""
    return SamplerSettings(temperature=0.0, seed=seed)


def candle_all(temperature: float, seed: int = 0) -> SamplerSettings:
    """candle `Sampling::All { temperature }` (temperature 0 is greedy, not NaN)."""
    return SamplerSettings(temperature=temperature, seed=seed)


def candle_top_k(k: int, temperature: float, seed: int = 0) -> SamplerSettings:
    """candle `Sampling::TopK { k, temperature }`."""
    return SamplerSettings(temperature=temperature, top_k=k, seed=seed)


def candle_top_p(p: float, temperature: float, seed: int = 0) -> SamplerSettings:
    """candle `Sampling::TopP { p, temperature }` (p <= 0 or >= 1 means no cut)."""
    return SamplerSettings(temperature=temperature, top_p=p if 0.0 < p < 1.0 else 1.0, seed=seed)


def candle_top_k_then_top_p(k: int, p: float, temperature: float, seed: int = 0) -> SamplerSettings:
    """candle `Sampling::TopKThenTopP { k, p, temperature }`: p against the vocabulary."""
    return SamplerSettings(
        temperature=temperature,
        top_k=k,
        top_p=p if 0.0 < p < 1.0 else 1.0,
        top_p_scope="vocab",
        seed=seed,
    )


def candle_gumbel_softmax(temperature: float, seed: int = 0) -> SamplerSettings:
    """candle `Sampling::GumbelSoftmax { temperature }`, but seeded (candle ignores it)."""
    return SamplerSettings(temperature=temperature, draw="gumbel", seed=seed)


def candle_new(seed: int, temperature: float | None, top_p: float | None) -> SamplerSettings:
    """candle's legacy `LogitsProcessor::new(seed, temperature, top_p)`.

    No temperature or one below 1e-7 is ArgMax; otherwise TopP when top_p is given,
    else All.
    """
    if temperature is None or temperature < _CANDLE_GREEDY_BELOW:
        return candle_argmax(seed)
    if top_p is None:
        return candle_all(temperature, seed)
    return candle_top_p(top_p, temperature, seed)


def runc(temperature: float = 0.0, top_k: int = 40, seed: int = 12345) -> SamplerSettings:
    """run.c's `-t -k -s` (its defaults: greedy, k 40, seed 12345).

    xorshift128 seeded as run.c seeds it, top-k then a roulette in token-id order.
    """
    return SamplerSettings(
        temperature=temperature, top_k=max(top_k, 0), seed=seed & 0xFFFFFFFF, rng="xorshift128"
    )
