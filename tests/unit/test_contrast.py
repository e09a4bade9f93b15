"""Contrast with a smaller model: the unit's scores (the decoding beside a real model
is tests/model/test_contrast.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import LogitsError, SettingsError
from sampling.sampler import Sampler, probabilities
from sampling.samplers.contrast import Contrast
from sampling.samplers.guidance_report import token_figures
from sampling.settings.record import SamplerSettings

RNG = np.random.default_rng(11)
BIG = RNG.normal(0.0, 3.0, 300).astype(np.float32)
SMALL = RNG.normal(0.0, 3.0, 300).astype(np.float32)


@pytest.mark.parametrize(("beta", "alpha"), [(0.5, 0.1), (1.0, 0.0), (2.0, 0.5)])
def test_the_score_is_the_papers(beta: float, alpha: float) -> None:
    settings = SamplerSettings(contrast_beta=beta, contrast_alpha=alpha)
    probs = probabilities(BIG, settings, small=SMALL)
    big = BIG.astype(np.float64)
    scores = (1 + beta) * big - beta * SMALL.astype(np.float64)
    if alpha > 0:
        scores[big < big.max() + math.log(alpha)] = -np.inf
    expected = np.exp(scores - scores.max())
    np.testing.assert_allclose(probs, expected / expected.sum(), rtol=1e-12, atol=1e-300)
    p_big = np.exp(big - big.max())
    assert np.all(probs[p_big < alpha * p_big.max()] == 0.0)


def test_beta_zero_is_off_and_without_a_small_model_nothing_changes() -> None:
    assert not Contrast.is_on(SamplerSettings(contrast_alpha=0.5))
    step = Sampler(SamplerSettings(temperature=0.0, contrast_beta=1.0)).sample(BIG)
    assert step.token_id == int(np.argmax(BIG))


def test_a_small_model_of_another_length_is_one_line() -> None:
    sampler = Sampler(SamplerSettings(contrast_beta=1.0))
    with pytest.raises(LogitsError, match="small model's logits have 10 values"):
        sampler.sample(BIG, small=SMALL[:10])


def test_settings_are_checked_and_in_the_registry() -> None:
    for bad in ({"contrast_beta": -1.0}, {"contrast_alpha": 1.5}, {"contrast_beta": math.nan}):
        with pytest.raises(SettingsError):
            SamplerSettings(**bad)
    specs = BUILT_IN_REGISTRY.settings_by_name
    assert specs["contrast_beta"].flag == "--contrast-beta"
    assert specs["contrast_alpha"].flag == "--contrast-alpha"
    names = [unit.name for unit in BUILT_IN_REGISTRY.units]
    assert names.index("guidance") < names.index("contrast") < names.index("logit_bias")


def test_each_step_reports_both_models_and_the_scores() -> None:
    step = Sampler(SamplerSettings(temperature=0.0, contrast_beta=1.0, contrast_alpha=0.5)).sample(
        BIG, small=SMALL
    )
    report = step.reports.get("contrast")
    assert report is not None and report["scale"] == 1.0 and "guidance" not in step.reports
    assert token_figures(report, "cond")[0][0] == int(np.argmax(BIG))
    assert token_figures(report, "uncond")[0][0] == int(np.argmax(SMALL))
    assert token_figures(report, "guided")[0][0] == step.token_id
    # the removed tokens left out
    assert all(prob > 0 for _, prob in token_figures(report, "guided"))
