"""p-less sampling (arXiv 2509.23234): keep the tokens with p >= sum(p²)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from backend.config.preset_files import preset_toml
from sampling import SamplerSettings, probabilities, settings_summary
from sampling.built_in import BUILT_IN_REGISTRY, CHAT_ORDER, TEMPERATURE_FIRST_ORDER
from sampling.chain import build_chain
from sampling.samplers.p_less import PLess, p_less_threshold
from tui.cli.options.settings import add_settings_flags, settings_from_args

LOGITS = [2.0, 1.5, 1.0, 0.5, 0.0, -1.0]


def reference(logits: np.ndarray, temperature: float) -> np.ndarray:
    """The paper's rule written out with numpy: softmax, keep p >= sum(p²), renormalise."""
    scaled = logits.astype(np.float64) / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    kept = np.where(probs >= np.sum(probs * probs), probs, 0.0)
    result: np.ndarray = kept / kept.sum()
    return result


def test_p_less_matches_a_numpy_reference_on_1000_random_logit_vectors() -> None:
    rng = np.random.default_rng(2509_23234)
    for index in range(1000):
        size = int(rng.integers(2, 400))
        logits = (rng.normal(size=size) * rng.choice([0.5, 2.0, 5.0])).astype(
            rng.choice([np.float32, np.float64])
        )
        temperature = float(rng.choice([1.0, 0.7, 1.5]))
        settings = SamplerSettings(
            p_less=True, temperature=temperature, samplers=("temperature", "p_less")
        )
        expected = reference(logits, temperature)
        actual = probabilities(logits, settings)
        assert np.array_equal(np.flatnonzero(actual), np.flatnonzero(expected)), index
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-300, err_msg=str(index))
        assert actual[int(np.argmax(logits))] > 0.0, index  # the argmax is always kept


def test_the_argmax_and_its_ties_are_always_kept() -> None:
    flat = np.zeros(50)
    settings = SamplerSettings(p_less=True, samplers=("p_less",))
    np.testing.assert_array_equal(probabilities(flat, settings), np.full(50, 1 / 50))
    peaked = np.array([30.0, 0.0, 0.0, -1.0])
    np.testing.assert_array_equal(probabilities(peaked, settings), [1.0, 0.0, 0.0, 0.0])
    ties = np.array([3.0, 3.0, -5.0, -5.0, -5.0])
    np.testing.assert_allclose(probabilities(ties, settings), [0.5, 0.5, 0.0, 0.0, 0.0])


def test_p_less_golden_table() -> None:
    # softmax(LOGITS) = 0.4197 0.2546 0.1544 0.0936 0.0568 0.0209; sum(p²) = 0.2772:
    # the argmax alone reaches it.
    softmax = np.exp(np.array(LOGITS) - 2.0) / np.exp(np.array(LOGITS) - 2.0).sum()
    assert [round(float(p), 4) for p in softmax] == [0.4197, 0.2546, 0.1544, 0.0936, 0.0568, 0.0209]
    assert round(p_less_threshold(softmax), 4) == 0.2772
    settings = SamplerSettings(p_less=True, samplers=("p_less",))
    got = probabilities(np.array(LOGITS), settings)
    assert [round(float(p), 4) for p in got] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert build_chain(settings).names == ("p_less",)
    # At temperature 2: 0.2900 0.2258 0.1759 ...; sum(p²) = 0.2003: two tokens stay.
    warm = SamplerSettings(p_less=True, temperature=2.0, samplers=("temperature", "p_less"))
    got = probabilities(np.array(LOGITS), warm)
    assert [round(float(p), 4) for p in got] == [0.5622, 0.4378, 0.0, 0.0, 0.0, 0.0]
    # A flat head: 0.2831 0.2561 0.2318 0.2097 0.0141 0.0052; sum(p²) = 0.2437.
    flat_head = np.array([1.0, 0.9, 0.8, 0.7, -2.0, -3.0])
    got = probabilities(flat_head, settings)
    assert [round(float(p), 4) for p in got] == [0.525, 0.475, 0.0, 0.0, 0.0, 0.0]


def test_p_less_comes_from_the_registry_everywhere() -> None:
    assert BUILT_IN_REGISTRY.samplers["p_less"] is PLess
    spec = BUILT_IN_REGISTRY.settings_by_name["p_less"]
    assert (
        spec.flag == "--p-less" and BUILT_IN_REGISTRY.find_setting("p_less") is spec
    )  # compare key
    assert (
        spec in BUILT_IN_REGISTRY.display_order and "p_less" in BUILT_IN_REGISTRY.groups
    )  # the panel's toggle and group
    # Switched on, it joins the orders before min-p, as the other cutoffs.
    for order in (CHAT_ORDER, TEMPERATURE_FIRST_ORDER):
        assert order[order.index("min_p") - 1] == "p_less"
    joined = SamplerSettings(samplers="top_k;min_p;temperature", p_less=True)
    assert joined.samplers == ("top_k", "p_less", "min_p", "temperature")
    # The flag, the summary and a preset.
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    on = settings_from_args(parser.parse_args(["--p-less"]), SamplerSettings())
    assert on.p_less and not settings_from_args(parser.parse_args(["--no-p-less"]), on).p_less
    assert "p-less" in settings_summary(on)
    assert "p_less = true" in preset_toml("mine", on)
    assert SamplerSettings.from_dict(on.to_dict()) == on


@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_the_record_names_p_less_as_the_cut(temperature: float) -> None:
    from sampling import Sampler

    settings = SamplerSettings(
        p_less=True, temperature=temperature, samplers=("temperature", "p_less")
    )
    step = Sampler(settings, n_candidates=6).sample(np.array(LOGITS))
    removed = [c.removed_by for c in step.candidates if c.prob_after == 0.0]
    assert removed and set(removed) == {"p_less"}
    assert step.n_kept == len(step.candidates) - len(removed)
