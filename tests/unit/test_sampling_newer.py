"""The newer samplers: golden tables by hand on seed 000's six logits, and properties.

LOGITS = [2, 1.5, 1, 0.5, 0, -1]; softmax p = [0.41970, 0.25456, 0.15440, 0.09365,
0.05680, 0.02090], surprise -ln p = 0.86822 + (2 - x), entropy H = 1.46669 nats.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sampling import Sampler, SamplerSettings, probabilities
from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SettingsError
from sampling.samplers.dry import dry_penalties
from sampling.samplers.mirostat import Mirostat
from sampling.settings import text as setting_text
from sampling.settings.text import parse_bias, parse_texts
from tests.golden import LOGITS, TOL, renormalised, softmax
from tests.hypothesis_profiles import examples


def next_mu(sampler: Sampler) -> float | None:
    """Mirostat's mu for the next step (None when mirostat is off)."""
    unit = sampler.chain.held.get("mirostat")
    return unit.mu if isinstance(unit, Mirostat) else None


P = softmax(LOGITS)
X = np.asarray(LOGITS)


def table_of(settings: SamplerSettings, history: list[int] | None = None) -> tuple[str, ...]:
    step = Sampler(settings, n_candidates=6).sample(X, history or [])
    assert step.table.token_ids.tolist() == [0, 1, 2, 3, 4, 5]
    assert step.table.kept.tolist() == [name == "" for name in step.table.removed_by]
    return (step.cut_by, *step.table.removed_by)


def test_xtc_removes_the_head_but_its_last_token() -> None:
    # p >= 0.1: tokens 0, 1, 2 are top choices; XTC keeps the last of them (2).
    settings = SamplerSettings(xtc_probability=1.0, xtc_threshold=0.1, samplers=("xtc",))
    np.testing.assert_allclose(probabilities(X, settings), renormalised(P, [2, 3, 4, 5]), atol=TOL)
    assert table_of(settings) == ("xtc", "xtc", "xtc", "", "", "", "")
    # p >= 0.3: token 0 alone is a top choice: nothing is removed.
    alone = settings.with_changes(xtc_threshold=0.3)
    np.testing.assert_allclose(probabilities(X, alone), P, atol=TOL)


def test_top_n_sigma_keeps_logits_within_n_deviations() -> None:
    # mean 2/3, std 0.98601: n = 1 keeps logits >= 1.01399 (tokens 0, 1).
    settings = SamplerSettings(top_n_sigma=1.0, samplers=("top_n_sigma",))
    np.testing.assert_allclose(probabilities(X, settings), renormalised(P, [0, 1]), atol=TOL)
    assert table_of(settings) == ("top_n_sigma", "", "", *["top_n_sigma"] * 4)


def test_typical_keeps_the_tokens_nearest_the_entropy() -> None:
    # |surprise - H| = 0.5985, 0.0985, 0.4015, 0.9015, ...: tokens 1 then 2 reach
    # 0.40896 > 0.3, so the most probable token is not typical.
    settings = SamplerSettings(typical_p=0.3, samplers=("typ_p",))
    np.testing.assert_allclose(probabilities(X, settings), renormalised(P, [1, 2]), atol=TOL)
    assert table_of(settings) == ("typ_p", "typ_p", "", "", "typ_p", "typ_p", "typ_p")
    # At 0.5 token 0 joins (0.82866 > 0.5).
    wider = settings.with_changes(typical_p=0.5)
    np.testing.assert_allclose(probabilities(X, wider), renormalised(P, [0, 1, 2]), atol=TOL)


def test_dynamic_temperature_follows_the_normalised_entropy() -> None:
    settings = SamplerSettings(temperature=1.0, dynatemp_range=0.5)
    entropy = -math.fsum(p * math.log(p) for p in P)
    dynamic = 0.5 + 1.0 * (entropy / math.log(6))
    assert dynamic == pytest.approx(1.31856, abs=1e-5)
    np.testing.assert_allclose(probabilities(X, settings), softmax(LOGITS, dynamic), atol=TOL)
    step = Sampler(settings).sample(X)
    assert step.temperature == pytest.approx(dynamic, abs=1e-12)


def test_logit_bias_bans_and_lifts() -> None:
    settings = SamplerSettings(logit_bias=((0, -math.inf), (5, 3.0)))
    biased = [-math.inf, 1.5, 1.0, 0.5, 0.0, 2.0]
    expected = [0.0, *softmax(biased[1:])]
    np.testing.assert_allclose(probabilities(X, settings), expected, atol=TOL)
    step = Sampler(settings, n_candidates=6).sample(X)
    assert step.cut_by == "logit_bias"
    assert step.table.token_ids.tolist() == [5, 1, 2, 3, 4, 0]
    assert step.table.removed_by == ("", "", "", "", "", "logit_bias")


def test_dry_penalises_the_token_that_extends_a_repeat() -> None:
    # History 1 2 3 1 2: "1 2" was followed by 3, a repeat of 2 tokens.
    assert dry_penalties([1, 2, 3, 1, 2], {}, 2) == {3: 2}
    assert dry_penalties([1, 2, 3, 1, 2], {}, 3) == {}
    settings = SamplerSettings(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=1)
    penalised = list(LOGITS)
    penalised[3] -= 0.8 * 1.75 ** (2 - 1)
    got = probabilities(X, settings, [1, 2, 3, 1, 2])
    np.testing.assert_allclose(got, softmax(penalised), atol=TOL)
    # A breaker (token 3 is one on its own) never gets the penalty, and cuts repeats.
    assert dry_penalties([1, 2, 3, 1, 2], {3: ((),)}, 1) == {}


def test_mirostat_2_keeps_surprise_up_to_mu_and_moves_mu() -> None:
    # tau 1: mu starts at 2 bits, so p >= 0.25 is kept: tokens 0 and 1.
    settings = SamplerSettings(mirostat=2, mirostat_tau=1.0, mirostat_eta=0.1, seed=3)
    np.testing.assert_allclose(probabilities(X, settings), renormalised(P, [0, 1]), atol=TOL)
    sampler = Sampler(settings, n_candidates=6)
    step = sampler.sample(X)
    assert step.figure("mirostat", "mu") == 2.0 and step.cut_by == "mirostat"
    assert step.table.removed_by == ("", "", *["mirostat"] * 4)
    assert next_mu(sampler) == pytest.approx(2.0 - 0.1 * (-math.log2(step.prob) - 1.0))
    sampler.reset()
    assert next_mu(sampler) == 2.0


def test_the_order_changes_what_xtc_sees() -> None:
    # top-k 2 first: XTC at 0.3 then sees 0.6225 and 0.3775, both top choices.
    first = SamplerSettings(top_k=2, xtc_probability=1.0, xtc_threshold=0.3)
    assert probabilities(X, first.with_changes(samplers=("top_k", "xtc"))).tolist() == [
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ]
    # XTC first (at 0.3 nothing is removed), then top-k.
    after = probabilities(X, first.with_changes(samplers=("xtc", "top_k")))
    np.testing.assert_allclose(after, renormalised(P, [0, 1]), atol=TOL)


# --- the text forms ------------------------------------------------------------------


def parse_order(text: str) -> tuple[str, ...]:
    """An order's text read against the registry's names."""
    return setting_text.parse_order(
        text, BUILT_IN_REGISTRY.sampler_names, BUILT_IN_REGISTRY.logits_samplers
    )


def test_orders_read_like_llama_cpp_samplers_flag() -> None:
    assert parse_order("top_k;temperature;min_p") == ("top_k", "temperature", "min_p")
    assert parse_order("top-k, temp ,nucleus,typ") == ("top_k", "temperature", "top_p", "typ_p")
    for bad, words in [("top_k;nope", "'nope' is not"), ("min_p;penalties", "before")]:
        with pytest.raises(ValueError, match=words):
            parse_order(bad)


def test_biases_and_breakers_read_back() -> None:
    assert parse_bias("42=+2;17=-inf") == ((17, -math.inf), (42, 2.0))
    with pytest.raises(ValueError, match="token 42 is given twice"):
        parse_bias("42=+2;17=-inf,42=1")
    with pytest.raises(ValueError, match="token text"):
        parse_bias("hello=-inf")
    with pytest.raises(ValueError, match="not a number"):
        parse_bias("42=lots")
    assert parse_texts("\\n,\\,,:") == ("\n", ",", ":")
    assert parse_texts('["a", "\\n"]') == ("a", "\n")
    assert parse_texts("none") == ()
    with pytest.raises(SettingsError, match="samplers"):
        SamplerSettings(samplers=("top_k", "top_k"))


# --- properties ----------------------------------------------------------------------

NEWER = st.fixed_dictionaries(
    {},
    optional={
        "typical_p": st.floats(0.05, 0.99),
        "top_n_sigma": st.floats(0.1, 3.0),
        "xtc_probability": st.sampled_from([0.5, 1.0]),
        "xtc_threshold": st.floats(0.01, 0.5),
        "dry_multiplier": st.floats(0.1, 2.0),
        "mirostat": st.sampled_from([1, 2]),
        "dynatemp_range": st.floats(0.1, 1.5),
        "top_k": st.integers(1, 20),
        "min_p": st.floats(0.01, 0.5),
        "temperature": st.floats(0.2, 2.0),
        "temperature_last": st.booleans(),
    },
)
VECTORS = arrays(np.float32, st.integers(2, 60), elements=st.floats(-20, 20, width=32))


@settings(max_examples=examples(150), deadline=None)
@given(VECTORS, NEWER, st.lists(st.integers(0, 1), max_size=12))
def test_any_newer_chain_sums_to_one_keeps_one_and_never_mutates(
    logits: np.ndarray, changes: dict[str, object], history: list[int]
) -> None:
    chosen = SamplerSettings(**changes)  # type: ignore[arg-type]
    before = logits.copy()
    probs = probabilities(logits, chosen, history)
    assert np.array_equal(logits, before)
    assert np.count_nonzero(probs) >= 1
    assert math.isclose(float(probs.sum()), 1.0, abs_tol=1e-9)
    runs = []
    for _ in range(2):
        sampler = Sampler(chosen.with_changes(seed=9))
        runs.append([sampler.sample(logits, history).token_id for _ in range(3)])
    assert runs[0] == runs[1]
    assert np.array_equal(logits, before)


@settings(max_examples=examples(60), deadline=None)
@given(VECTORS, st.sampled_from([1, 2]), st.floats(1.0, 6.0), st.floats(0.01, 0.5))
def test_mirostat_mu_follows_its_update_rule(
    logits: np.ndarray, version: int, tau: float, eta: float
) -> None:
    sampler = Sampler(SamplerSettings(mirostat=version, mirostat_tau=tau, mirostat_eta=eta))
    mu = 2.0 * tau
    for _ in range(4):
        step = sampler.sample(logits)
        assert step.figure("mirostat", "mu") == pytest.approx(mu)
        mu -= eta * (-math.log2(step.prob) - tau)
    assert next_mu(sampler) == pytest.approx(mu)


def test_each_classic_filter_is_named_on_the_rows_it_cut() -> None:
    # top-k 5 drops token 5; top-p 0.8 over the five keeps 0.4287 + 0.2600 + 0.1577;
    # min-p 0.4 keeps p >= 0.4 * p_max: tokens 0 and 1 (ratio 0.6065, then 0.3679).
    settings = SamplerSettings(top_k=5, top_p=0.8, min_p=0.4)
    assert table_of(settings) == ("min_p", "", "", "min_p", "top_p", "top_p", "top_k")
