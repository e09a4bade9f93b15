"""Adaptive-p against llama.cpp's own over a sequence of steps, state included.

The native sampler is `llama_cpp.llama_sampler_init_adaptive_p(float target, float
decay, uint32_t seed)`; llama-cpp-python 0.3.36's prototype
([c_float, c_float, c_uint32] -> llama_sampler_p) was checked against the bundled
llama.h, as were `llama_token_data` {int32 id; float logit; float p} and
`llama_token_data_array` {data*, size_t size, int64 selected, bool sorted}.

Each step hands both sides the same candidates (the kept set of the samplers before
it), compares the reshaped distribution, then gives both the token llama.cpp's
apply drew as the draw and accepts a token: the drawn one, or at some steps
another. llama.cpp moves its moving average only when the accepted token is the one
its own apply drew; a mismatch anywhere shows at the next step.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt
import pytest

from backend.bench.sampler import capture_real_logits
from sampling import SamplerSettings
from sampling.candidates import Candidates
from sampling.chain import Chain, build_chain
from sampling.logits import checked_logits
from sampling.samplers.adaptive_p import AdaptiveP
from sampling.workspace import Workspace

Logits = npt.NDArray[np.float32]
STEPS = 12
OTHER_TOKEN_AT = (3, 4, 8)
"""Steps at which the sequence takes a token other than the one the draw chose."""


@pytest.fixture(scope="module")
def real_logits(default_model_path: Path) -> Iterator[list[Logits]]:
    llm = llama_cpp.Llama(str(default_model_path), n_ctx=256, n_threads=1, verbose=False)
    try:
        yield capture_real_logits(llm, STEPS)
    finally:
        llm.close()


class Native:
    """llama.cpp's samplers before adaptive-p, then adaptive-p, on one token array."""

    def __init__(self, before: list[Any], target: float, decay: float) -> None:
        self.before = before
        self.adaptive = llama_cpp.llama_sampler_init_adaptive_p(target, decay, 1234)

    def step(self, logits: Logits) -> tuple[npt.NDArray[np.float64], int]:
        """The reshaped distribution over the vocabulary, and the token it drew."""
        size = logits.shape[0]
        data = (llama_cpp.llama_token_data * size)()
        for token in range(size):
            data[token].id = token
            data[token].logit = float(logits[token])
            data[token].p = 0.0
        array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(data, llama_cpp.llama_token_data_p),
            size=size,
            selected=-1,
            sorted=False,
        )
        for sampler in [*self.before, self.adaptive]:
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        probs = np.zeros(size)
        for i in range(array.size):
            probs[array.data[i].id] = array.data[i].p
        return probs, int(array.data[array.selected].id)

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self.adaptive, token)

    def free(self) -> None:
        for sampler in [*self.before, self.adaptive]:
            llama_cpp.llama_sampler_free(sampler)


def ours_step(chain: Chain, logits: Logits, workspace: Workspace) -> npt.NDArray[np.float64]:
    """Our chain's final distribution (adaptive-p's reshape), over the vocabulary."""
    candidates = Candidates(*checked_logits(logits), (), workspace)
    kept = chain.run(candidates)
    if kept.ids is None:
        return kept.probs.copy()
    probs = np.zeros(logits.shape[0])
    probs[kept.ids] = kept.probs
    return probs


def float32_first_step(logits: Logits, target: float) -> npt.NDArray[np.float32]:
    """llama.cpp's first step as it computes it: float32 throughout, sums in turn."""
    weights = np.exp(logits - logits.max())
    probs = weights / np.cumsum(weights, dtype=np.float32)[-1]
    distance = np.abs((probs - np.float32(target)) * np.float32(1.0 / 0.3))
    shaped = np.float32(5.0) - np.float32(10.0) * distance * distance / (np.float32(1.0) + distance)
    weights = np.exp(shaped - shaped.max())
    result: npt.NDArray[np.float32] = weights / np.cumsum(weights, dtype=np.float32)[-1]
    return result


def adaptive_of(chain: Chain) -> AdaptiveP:
    """The chain's adaptive-p unit (it keeps the state from step to step)."""
    adaptive = chain.held.get("adaptive_p")
    assert isinstance(adaptive, AdaptiveP)
    return adaptive


CHAINS: list[tuple[str, SamplerSettings, Any]] = [
    (
        "whole vocabulary, target 0.5",
        SamplerSettings(adaptive_target=0.5, adaptive_decay=0.9, samplers=("adaptive_p",)),
        list,
    ),
    (
        "min-p 0.05 first (llama.cpp's advice), target 0.3, decay 0.7",
        SamplerSettings(
            adaptive_target=0.3, adaptive_decay=0.7, min_p=0.05, samplers=("min_p", "adaptive_p")
        ),
        lambda: [llama_cpp.llama_sampler_init_min_p(0.05, 1)],
    ),
    (
        "top-k 40 and temperature 0.8, target 0.15, decay 0.5",
        SamplerSettings(
            temperature=0.8,
            top_k=40,
            adaptive_target=0.15,
            adaptive_decay=0.5,
            samplers=("top_k", "temperature", "adaptive_p"),
        ),
        lambda: [
            llama_cpp.llama_sampler_init_top_k(40),
            llama_cpp.llama_sampler_init_temp(0.8),
        ],
    ),
]


@pytest.mark.parametrize(("name", "settings", "before"), CHAINS, ids=[c[0] for c in CHAINS])
def test_adaptive_p_matches_llama_cpp_step_by_step(
    real_logits: list[Logits], name: str, settings: SamplerSettings, before: Any
) -> None:
    native = Native(before(), settings.adaptive_target, settings.adaptive_decay)
    chain = build_chain(settings)
    ours = adaptive_of(chain)
    workspace = Workspace()
    moved = 0
    # Over a whole vocabulary llama.cpp sums 49152 float32 terms in turn, twice: its
    # normalisers are off by ~1e-4, and the reshape amplifies that near the target.
    whole = settings.samplers == ("adaptive_p",)
    rtol = 2e-3 if whole else 2e-4
    try:
        for index, logits in enumerate(real_logits):
            expected, drawn = native.step(logits)
            actual = ours_step(chain, logits, workspace)
            assert np.array_equal(np.flatnonzero(actual), np.flatnonzero(expected)), index
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-7, err_msg=f"{index}")
            if whole and index == 0:  # the whole difference is llama.cpp's float32 rounding
                replica = float32_first_step(logits, settings.adaptive_target)
                np.testing.assert_allclose(replica, expected, rtol=1e-5)
            ours.accept(drawn, float(expected[drawn]))  # the draw: remembered, pending
            taken = drawn
            if index in OTHER_TOKEN_AT:  # forced: any other token
                taken = (drawn + 1) % logits.shape[0]
            before_accept = ours.current_target
            native.accept(taken)
            ours.take(taken)
            if taken != drawn:
                assert ours.current_target == before_accept
            moved += ours.current_target != before_accept
    finally:
        native.free()
    assert moved == STEPS - len(OTHER_TOKEN_AT)


def test_llama_cpp_ignores_an_accepted_token_it_did_not_draw(real_logits: list[Logits]) -> None:
    """The measured semantics: a forced token leaves llama.cpp's average unmoved.

    Were the average to take the forced token, the next step's distribution would
    differ from llama.cpp's (checked here against a state that does so).
    """
    settings = CHAINS[1][1]
    native = Native(CHAINS[1][2](), settings.adaptive_target, settings.adaptive_decay)
    ours_chain, wrong_chain = build_chain(settings), build_chain(settings)
    ours, wrong = adaptive_of(ours_chain), adaptive_of(wrong_chain)
    workspace = Workspace()
    try:
        expected, drawn = native.step(real_logits[0])
        for chain in (ours_chain, wrong_chain):
            ours_step(chain, real_logits[0], workspace)
        forced = (
            int(np.argsort(-expected)[1])
            if int(np.argmax(expected)) == drawn
            else int(np.argmax(expected))
        )
        ours.accept(drawn, float(expected[drawn]))
        wrong.accept(forced, float(expected[forced]))  # as if it took any accepted token
        native.accept(forced)
        ours.take(forced)
        wrong.take(forced)
        expected, _ = native.step(real_logits[1])
        np.testing.assert_allclose(
            ours_step(ours_chain, real_logits[1], workspace), expected, rtol=2e-4, atol=1e-7
        )
        assert not np.allclose(
            ours_step(wrong_chain, real_logits[1], workspace), expected, rtol=2e-4, atol=1e-7
        )
    finally:
        native.free()
