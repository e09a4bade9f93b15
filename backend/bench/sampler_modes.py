"""The rows of `samplescope bench --only sampler`: our settings and the native chain.

Each llama.cpp sampler is timed against its native counterpart. The samplers
llama.cpp's chain lacks (top-a, tail-free, epsilon and eta cutoff, smoothing,
min_tokens) are timed against llama.cpp's top-p 0.9 on the same logits, the cost
they must stay within; adaptive-p against llama.cpp's own.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llama_cpp

from sampling import SamplerSettings


@dataclass(frozen=True, slots=True)
class BenchMode:
    """One row: our settings and the native chain that samples the same way.

    Attributes:
        name: The row's name.
        settings: Our sampler's settings.
        native: Builds the llama_sampler chain, given the model's vocabulary pointer.
        history: Tokens both sides have seen (DRY's repeats); the native chain
            accepts them once, ours gets them each step.
    """

    name: str
    settings: SamplerSettings
    native: Callable[[Any], Any]
    history: tuple[int, ...] = ()


def _chain(*samplers: Any) -> Any:
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    for sampler in samplers:
        llama_cpp.llama_sampler_chain_add(chain, sampler)
    return chain


def _temp_dist(*filters: Any) -> Callable[[Any], Any]:
    return lambda _vocab: _chain(
        *[make() for make in filters],
        llama_cpp.llama_sampler_init_temp(0.8),
        llama_cpp.llama_sampler_init_dist(42),
    )


def _then_dist(*makers: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda vocab: _chain(
        *[make(vocab) for make in makers], llama_cpp.llama_sampler_init_dist(42)
    )


def _native_dry(vocab: Any) -> Any:
    breakers = [text.encode() for text in ("\n", ":", '"', "*")]
    pointers = (ctypes.c_char_p * len(breakers))(*breakers)
    return llama_cpp.llama_sampler_init_dry(vocab, 0.8, 1.75, 2, 64, pointers, len(breakers))


def _native_bias(vocab: Any) -> Any:
    pairs = (llama_cpp.llama_logit_bias * 2)(
        llama_cpp.llama_logit_bias(0, float("-inf")), llama_cpp.llama_logit_bias(42, 2.0)
    )
    return llama_cpp.llama_sampler_init_logit_bias(llama_cpp.llama_vocab_n_tokens(vocab), 2, pairs)


# A history that repeats, for DRY: "1 2 3 4 5" three times then "1 2 3".
_REPEATS = (*range(1, 6), *range(1, 6), *range(1, 6), 1, 2, 3)


LLAMA_CPP_MODES: tuple[BenchMode, ...] = (
    BenchMode(
        "argmax",
        SamplerSettings(temperature=0.0),
        lambda _vocab: _chain(llama_cpp.llama_sampler_init_greedy()),
    ),
    BenchMode("all t=0.8", SamplerSettings(temperature=0.8, seed=42), _temp_dist()),
    BenchMode(
        "top-k 40",
        SamplerSettings(temperature=0.8, top_k=40, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_top_k(40)),
    ),
    BenchMode(
        "top-p 0.9",
        SamplerSettings(temperature=0.8, top_p=0.9, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_top_p(0.9, 1)),
    ),
    BenchMode(
        "top-k 40 + top-p 0.9",
        SamplerSettings(temperature=0.8, top_k=40, top_p=0.9, seed=42),
        _temp_dist(
            lambda: llama_cpp.llama_sampler_init_top_k(40),
            lambda: llama_cpp.llama_sampler_init_top_p(0.9, 1),
        ),
    ),
    BenchMode(
        "min-p 0.05",
        SamplerSettings(temperature=0.8, min_p=0.05, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_min_p(0.05, 1)),
    ),
    # llama.cpp has no Gumbel sampler: its peer is its own full-distribution draw.
    BenchMode(
        "gumbel (native: all)", SamplerSettings(temperature=0.8, draw="gumbel"), _temp_dist()
    ),
    BenchMode(
        "typical-p 0.9",
        SamplerSettings(temperature=0.8, typical_p=0.9, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_typical(0.9, 0)),
    ),
    BenchMode(
        "top-n-sigma 1",
        SamplerSettings(temperature=0.8, top_n_sigma=1.0, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_top_n_sigma(1.0)),
    ),
    BenchMode(
        "xtc 1.0/0.1",
        SamplerSettings(temperature=0.8, xtc_probability=1.0, xtc_threshold=0.1, seed=42),
        _temp_dist(lambda: llama_cpp.llama_sampler_init_xtc(1.0, 0.1, 0, 42)),
    ),
    BenchMode(
        "dry 0.8",
        SamplerSettings(temperature=0.8, dry_multiplier=0.8, seed=42),
        _then_dist(_native_dry, lambda _v: llama_cpp.llama_sampler_init_temp(0.8)),
        _REPEATS,
    ),
    BenchMode(
        "mirostat 1",
        SamplerSettings(temperature=0.8, mirostat=1, seed=42),
        lambda _vocab: _chain(
            llama_cpp.llama_sampler_init_temp(0.8),
            llama_cpp.llama_sampler_init_mirostat(
                llama_cpp.llama_vocab_n_tokens(_vocab), 42, 5.0, 0.1, 100
            ),
        ),
    ),
    BenchMode(
        "mirostat 2",
        SamplerSettings(temperature=0.8, mirostat=2, seed=42),
        lambda _vocab: _chain(
            llama_cpp.llama_sampler_init_temp(0.8),
            llama_cpp.llama_sampler_init_mirostat_v2(42, 5.0, 0.1),
        ),
    ),
    BenchMode(
        "dynatemp 0.8+-0.5",
        SamplerSettings(temperature=0.8, dynatemp_range=0.5, seed=42),
        _then_dist(lambda _v: llama_cpp.llama_sampler_init_temp_ext(0.8, 0.5, 1.0)),
    ),
    BenchMode(
        "logit bias",
        SamplerSettings(temperature=0.8, logit_bias=((0, float("-inf")), (42, 2.0)), seed=42),
        _then_dist(_native_bias, lambda _v: llama_cpp.llama_sampler_init_temp(0.8)),
    ),
)


def _native_adaptive(*filters: Callable[[], Any]) -> Callable[[Any], Any]:
    return lambda _vocab: _chain(
        *[make() for make in filters],
        llama_cpp.llama_sampler_init_temp(0.8),
        llama_cpp.llama_sampler_init_adaptive_p(0.5, 0.9, 42),
    )


_TOP_P = _temp_dist(lambda: llama_cpp.llama_sampler_init_top_p(0.9, 1))
"""llama.cpp's top-p 0.9: what a sampler it lacks is timed against."""

_T = SamplerSettings(temperature=0.8, seed=42)

NEW_MODES: tuple[BenchMode, ...] = (
    BenchMode(
        "adaptive-p 0.5",
        _T.with_changes(adaptive_target=0.5, samplers=("temperature", "adaptive_p")),
        _native_adaptive(),
    ),
    BenchMode(
        "min-p+adaptive-p",
        _T.with_changes(
            min_p=0.05, adaptive_target=0.5, samplers=("min_p", "temperature", "adaptive_p")
        ),
        _native_adaptive(lambda: llama_cpp.llama_sampler_init_min_p(0.05, 1)),
    ),
    BenchMode("top-a 0.2 vs top-p", _T.with_changes(top_a=0.2), _TOP_P),
    BenchMode("tfs 0.95 vs top-p", _T.with_changes(tfs=0.95), _TOP_P),
    BenchMode("epsilon 3e-4 vs top-p", _T.with_changes(epsilon_cutoff=3e-4), _TOP_P),
    BenchMode("eta 2e-3 vs top-p", _T.with_changes(eta_cutoff=2e-3), _TOP_P),
    BenchMode("smoothing 0.5 vs top-p", _T.with_changes(smoothing_factor=0.5), _TOP_P),
    BenchMode("min_tokens vs top-p", _T.with_changes(min_tokens=1_000_000), _TOP_P),
)
"""The samplers llama.cpp's default chain lacks (each alone after the temperature)."""

MODES: tuple[BenchMode, ...] = (*LLAMA_CPP_MODES, *NEW_MODES)
"""Every row, in the order the table prints them."""
