"""Each unit keeps its state inside; the sampler snapshots and restores all of it.

A snapshot (`Sampler.state`) holds the settings, each generator's position and each
unit's state; restoring it and sampling on gives exactly what sampling on from the
snapshot gave. Live settings changes keep a unit's state; the stream of draws
depends on the settings alone (XTC rolls its coin whether or not the order runs it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sampling import Sampler, SamplerSettings
from sampling.candidates import Candidates
from sampling.chain import build_chain
from sampling.logits import checked_logits
from sampling.rng import make_source
from sampling.samplers.mirostat import Mirostat, MirostatState
from sampling.samplers.unit import StepContext
from sampling.samplers.xtc import Xtc
from sampling.workspace import Workspace
from tests.hypothesis_profiles import examples


def next_mu(sampler: Sampler) -> float | None:
    """Mirostat's mu for the next step (None when mirostat is off)."""
    unit = sampler.chain.held.get("mirostat")
    return unit.mu if isinstance(unit, Mirostat) else None


RNG = np.random.default_rng(7)
LOGITS = [RNG.normal(0.0, 3.0, 512).astype(np.float32) for _ in range(12)]

STATEFUL = [
    SamplerSettings(temperature=0.9, top_k=40, seed=11),
    SamplerSettings(mirostat=2, mirostat_tau=3.0, mirostat_eta=0.2, seed=5),
    SamplerSettings(mirostat=1, mirostat_tau=4.0, seed=5, rng="xorshift128"),
    SamplerSettings(xtc_probability=0.5, xtc_threshold=0.05, top_p=0.95, seed=9),
    SamplerSettings(draw="gumbel", top_k=50, min_p=0.02, seed=3),
    SamplerSettings(
        repeat_penalty=1.3, repeat_last_n=8, typical_p=0.9, xtc_probability=0.3, seed=2**64 - 1
    ),
]


def tokens(sampler: Sampler, logits: list[np.ndarray], history: list[int]) -> list[int]:
    """Sample one token per logits vector, each appended to `history`."""
    drawn = []
    for step_logits in logits:
        step = sampler.sample(step_logits, history)
        history.append(step.token_id)
        drawn.append(step.token_id)
    return drawn


@pytest.mark.parametrize("start", STATEFUL, ids=lambda s: s.rng + str(s.mirostat) + s.draw)
def test_restore_then_sample_equals_never_having_moved_on(start: SamplerSettings) -> None:
    sampler = Sampler(start)
    history: list[int] = []
    tokens(sampler, LOGITS[:4], history)
    snapshot = sampler.state()
    mu = next_mu(sampler)
    expected = tokens(sampler, LOGITS[4:], list(history))
    # Wander off: more tokens, other settings, another generator.
    tokens(sampler, LOGITS[:5], list(history))
    sampler.settings = start.with_changes(rng="xorshift128", mirostat=0, seed=99)
    tokens(sampler, LOGITS[:3], list(history))
    sampler.restore(snapshot)
    assert sampler.settings == start
    assert next_mu(sampler) == mu
    assert tokens(sampler, LOGITS[4:], list(history)) == expected
    # The snapshot is a value: restoring it twice gives the same again.
    sampler.restore(snapshot)
    assert tokens(sampler, LOGITS[4:], list(history)) == expected
    assert sampler.state() != snapshot


def test_a_snapshot_is_frozen_and_holds_each_generator_and_unit() -> None:
    sampler = Sampler(SamplerSettings(mirostat=2, seed=1))
    before = sampler.state()
    assert before.sources == () and before.units == (("mirostat", MirostatState(2, None)),)
    sampler.sample(LOGITS[0])
    after = sampler.state()
    assert [kind for kind, _, _ in after.sources] == ["pcg64"]
    ((name, state),) = after.units
    assert name == "mirostat" and isinstance(state, MirostatState) and state.mu is not None
    hash(after)  # every part is an immutable value


@pytest.mark.parametrize("kind", ["pcg64", "xorshift128"])
def test_a_generator_seeks_back_to_a_position(kind: str) -> None:
    source = make_source(kind, 42)
    source.uniform()
    position = source.position
    ahead = [source.uniform() for _ in range(5)]
    source.uniforms(7)
    source.seek(position)
    assert [source.uniform() for _ in range(5)] == ahead


def test_mirostat_keeps_mu_across_tau_and_eta_and_restarts_on_another_version() -> None:
    settings = SamplerSettings(mirostat=2, mirostat_tau=3.0, seed=4)
    sampler = Sampler(settings)
    step = sampler.sample(LOGITS[0])
    moved = 6.0 - 0.1 * (-math.log2(step.prob) - 3.0)
    assert next_mu(sampler) == pytest.approx(moved)
    sampler.settings = settings.with_changes(mirostat_tau=4.0, mirostat_eta=0.3, top_k=5)
    assert next_mu(sampler) == pytest.approx(moved)
    sampler.settings = settings.with_changes(temperature=0.0)  # greedy: mu waits
    sampler.sample(LOGITS[1])
    assert next_mu(sampler) == pytest.approx(moved)
    sampler.settings = settings.with_changes(mirostat=1)
    assert next_mu(sampler) == 6.0
    sampler.settings = settings.with_changes(mirostat=0)
    assert next_mu(sampler) is None


def test_xtc_rolls_its_coin_whether_or_not_the_order_runs_it() -> None:
    # The stream depends on the settings alone: one coin per step while XTC is on
    # with a chance below 1, then one uniform per draw.
    on = SamplerSettings(xtc_probability=0.5, xtc_threshold=0.1, seed=8)
    for settings_ in (
        on,
        on.with_changes(samplers=("top_k", "temperature")),
        on.with_changes(mirostat=2),
    ):
        sampler = Sampler(settings_)
        reference = make_source("pcg64", 8)
        for step_logits in LOGITS[:3]:
            coin = reference.uniform()
            step = sampler.sample(step_logits)
            assert step.draw == reference.uniform(), coin
    greedy = Sampler(on.with_changes(temperature=0.0))
    greedy.sample(LOGITS[0])
    assert greedy.state().sources[0][2] != make_source("pcg64", 8).position


def test_xtc_applies_unless_its_coin_is_above_the_chance() -> None:
    unit = Xtc(0.5, 0.1)
    assert unit.roll == 0.0  # no generator handed: it applies (as `probabilities` does)

    class Fixed:
        def __init__(self, value: float) -> None:
            self.value = value

        def uniform(self) -> float:
            return self.value

    logits = np.array([3.0, 2.9, 2.8, 0.0, -1.0], dtype=np.float32)
    for roll, applies in ((0.4, True), (0.6, False)):
        unit.begin(StepContext(Fixed(roll)))  # type: ignore[arg-type]
        candidates = Candidates(*checked_logits(logits), (), Workspace())
        unit.apply(candidates)
        assert (candidates.cut_by == "xtc") == applies
    always = Xtc(1.0, 0.1)
    always.begin(StepContext(Fixed(0.99)))  # type: ignore[arg-type]
    assert always.roll == 0.0


def test_units_restore_what_still_holds() -> None:
    mirostat = Mirostat(2, 5.0, 0.1)
    mirostat.restore(MirostatState(2, 7.5))
    assert mirostat.mu == 7.5
    mirostat.restore(MirostatState(1, 3.0))
    assert mirostat.mu == 10.0
    mirostat.restore(None)
    assert mirostat.state == MirostatState(2, None)
    chain = build_chain(SamplerSettings(mirostat=2, top_k=3, xtc_probability=0.5))
    assert set(chain.held) == {"top_k", "temperature", "xtc", "mirostat"}
    assert [unit.name for unit in chain.drawing] == ["xtc"]
    # Mirostat runs instead of the order, at its own plain temperature.
    assert chain.names == ("mirostat",)
    assert isinstance(chain.units[0], Mirostat) and chain.units[0].temperature == 1.0


# --- one view: the same unit on either representation of the kept set -------------

VECTORS = arrays(
    np.float32,
    st.integers(2, 80),
    elements=st.floats(-20.0, 20.0, width=32, allow_nan=False, allow_infinity=False),
)


def both_views(logits: np.ndarray) -> tuple[Candidates, Candidates]:
    """Fresh candidates, and the same with every token kept as ids in order."""
    whole = Candidates(*checked_logits(logits), (), Workspace())
    listed = Candidates(*checked_logits(logits), (), Workspace())
    listed.ids = listed.ordered()
    return whole, listed


@settings(max_examples=examples(80), deadline=None)
@given(
    VECTORS,
    st.sampled_from(
        [
            SamplerSettings(top_k=3),
            SamplerSettings(min_p=0.2),
            SamplerSettings(min_p=0.2, temperature=0.5),
            SamplerSettings(mirostat=2, mirostat_tau=1.5),
            SamplerSettings(typical_p=0.5),
        ]
    ),
)
def test_a_unit_keeps_the_same_tokens_on_either_view(
    logits: np.ndarray, chosen: SamplerSettings
) -> None:
    units = build_chain(chosen).units
    whole, listed = both_views(logits)
    for unit in units:
        unit.apply(whole)
        unit.apply(listed)
    assert whole.size == listed.size
    assert sorted(whole.ordered().tolist()) == sorted(listed.ordered().tolist())
    np.testing.assert_allclose(dense(whole), dense(listed), rtol=0, atol=1e-12)


def dense(candidates: Candidates) -> np.ndarray:
    """The distribution the candidates end with, indexed by token id."""
    kept = candidates.distribution()
    if kept.ids is None:
        return kept.probs.copy()
    result = np.zeros(candidates.logits.shape[0])
    result[kept.ids] = kept.probs
    return result
