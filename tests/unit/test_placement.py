"""Each unit declares where it runs and when it is on; the order stored is the order run."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

from sampling import SamplerSettings, SettingsError, probabilities
from sampling.built_in import (
    BUILT_IN_REGISTRY,
    BUILT_IN_UNITS,
    CHAT_ORDER,
    DEFAULT_CHAT_SETTINGS,
    TEMPERATURE_FIRST_ORDER,
)
from sampling.candidates import Candidates
from sampling.chain import build_chain
from sampling.samplers.unit import SamplerUnit, Stateless, UnitKind
from sampling.settings.placement import CUTOFF, Placement, arranged
from sampling.settings.registry import check_declarations
from sampling.settings.spec import SettingSpec

LOGITS = [2.0, 1.5, 1.0, 0.5, 0.0, -1.0]


def softmax(values: list[float]) -> list[float]:
    top = max(values)
    weights = [math.exp(v - top) for v in values]
    total = sum(weights)
    return [w / total for w in weights]


def test_an_order_runs_as_given_smoothing_before_the_temperature() -> None:
    """The held-out defect: "smoothing;temperature" stored that order but ran the
    temperature first."""
    first = SamplerSettings(samplers="smoothing;temperature", smoothing_factor=0.3, temperature=0.7)
    after = SamplerSettings(samplers="temperature;smoothing", smoothing_factor=0.3, temperature=0.7)
    assert first.samplers == first.order == build_chain(first).names == ("smoothing", "temperature")
    assert build_chain(after).names == ("temperature", "smoothing")
    # By hand: smoothing at temperature 1 (logits h - 0.3 d², d = x - h), then / 0.7.
    smoothed = [2.0 - 0.3 * (x - 2.0) ** 2 for x in LOGITS]
    expected_first = softmax([s / 0.7 for s in smoothed])
    # The temperature first: d = (x - h) / 0.7, weights exp(-0.3 d²).
    expected_after = softmax([-0.3 * ((x - 2.0) / 0.7) ** 2 for x in LOGITS])
    got_first = probabilities(np.array(LOGITS), first)
    got_after = probabilities(np.array(LOGITS), after)
    np.testing.assert_allclose(got_first, expected_first, rtol=1e-12)
    np.testing.assert_allclose(got_after, expected_after, rtol=1e-12)
    assert not np.allclose(got_first, got_after, rtol=1e-3)


def test_a_unit_placed_last_that_is_on_must_end_the_order() -> None:
    with pytest.raises(
        SettingsError, match=r"adaptive_p last while it is on .* not before temperature"
    ):
        SamplerSettings(samplers="adaptive_p;temperature", adaptive_target=0.3)
    # Off, it may stand anywhere (it does not run).
    assert SamplerSettings(samplers="adaptive_p;temperature").samplers == (
        "adaptive_p",
        "temperature",
    )
    # A chain built from another order is refused alike.
    on = SamplerSettings(adaptive_target=0.3)
    with pytest.raises(SettingsError, match="adaptive_p last"):
        build_chain(on, ("adaptive_p", "temperature"))


def test_a_unit_switched_on_joins_where_its_placement_says() -> None:
    given = SamplerSettings(
        samplers="top_k;min_p;temperature",
        top_k=20,
        min_p=0.05,
        top_a=0.2,
        tfs=0.9,
        smoothing_factor=0.2,
        adaptive_target=0.3,
    )
    expected = ("top_k", "tfs", "top_a", "min_p", "temperature", "smoothing", "adaptive_p")
    assert given.samplers == expected
    assert build_chain(given).names == expected  # stored and run: the same list
    # A name already in the order keeps its place.
    named = SamplerSettings(samplers="top_a;top_k;temperature", top_a=0.2)
    assert named.samplers == ("top_a", "top_k", "temperature")
    # The cutoffs join before min-p, else XTC, else the temperature, else at the end.
    assert CUTOFF.joins_before == ("min_p", "xtc", "temperature")
    assert SamplerSettings(samplers="top_k", eta_cutoff=0.1).samplers == ("top_k", "eta_cutoff")


def test_temperature_last_moves_the_temperature_with_smoothing_ahead_of_adaptive_p() -> None:
    settings = SamplerSettings(
        samplers=TEMPERATURE_FIRST_ORDER,
        temperature_last=True,
        smoothing_factor=0.5,
        adaptive_target=0.3,
        top_k=5,
    )
    assert settings.order[-3:] == ("temperature", "smoothing", "adaptive_p")
    assert build_chain(settings).names == ("top_k", "temperature", "smoothing", "adaptive_p")


def test_every_default_order_names_every_unit_of_the_order_where_it_runs() -> None:
    for order in (CHAT_ORDER, TEMPERATURE_FIRST_ORDER):
        assert sorted(order) == sorted(BUILT_IN_REGISTRY.sampler_names)
        assert order[-1] == "adaptive_p"
        assert order[order.index("temperature") + 1] == "smoothing"
    assert DEFAULT_CHAT_SETTINGS.samplers == CHAT_ORDER
    assert SamplerSettings().samplers == TEMPERATURE_FIRST_ORDER


def settings_around(unit: type[SamplerUnit]) -> Iterator[SamplerSettings]:
    """Settings with each of the unit's settings at its default, its off value and
    across its slider, one at a time (the others at their defaults)."""
    yield SamplerSettings()
    yield DEFAULT_CHAT_SETTINGS
    for spec in unit.specs:
        values: list[Any] = [spec.default]
        if spec.off is not None:
            values.append(spec.off)
        if spec.slider is not None:
            low, high = spec.slider.soft_min, spec.slider.soft_max
            values += [low, high, (low + high) / 2.0, spec.slider.hard_max]
        if spec.kind == "bias":
            values.append(((1, 2.0),))
        if spec.kind == "text":
            values.append('root ::= "a"')
        for value in values:
            if spec.kind == "int":
                value = int(value)
            try:
                yield SamplerSettings().with_changes(**{spec.name: value})
            except SettingsError:
                continue


@pytest.mark.parametrize("unit", BUILT_IN_UNITS, ids=[unit.name for unit in BUILT_IN_UNITS])
def test_each_unit_s_on_rule_is_when_it_is_built(unit: type[SamplerUnit]) -> None:
    for settings in settings_around(unit):
        assert unit.is_on(settings) == (unit.from_settings(settings) is not None), settings


def test_every_built_in_unit_declares_its_placement_and_on_rule() -> None:
    check_declarations(BUILT_IN_UNITS)
    assert {unit.name: unit.placement for unit in BUILT_IN_UNITS} == BUILT_IN_REGISTRY.placements

    class NewCutoff(Stateless):
        """A cutoff added without saying where it runs or when it is on."""

        name: ClassVar[str] = "new_cutoff"
        kind: ClassVar[UnitKind] = "candidates"
        specs: ClassVar[tuple[SettingSpec, ...]] = ()
        group_titles: ClassVar[dict[str, str]] = {}
        label: ClassVar[str] = "new"
        row_label: ClassVar[str] = "new"

        @classmethod
        def from_settings(cls, settings: SamplerSettings) -> NewCutoff | None:
            del settings
            return None

        def apply(self, candidates: Candidates) -> None:
            del candidates

    with pytest.raises(RuntimeError, match="new_cutoff must declare its placement"):
        check_declarations((*BUILT_IN_UNITS, NewCutoff))  # type: ignore[arg-type]
    NewCutoff.placement = CUTOFF  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match=r"new_cutoff has no switch .*: declare is_on"):
        check_declarations((*BUILT_IN_UNITS, NewCutoff))  # type: ignore[arg-type]
    # A setting with an off value is a switch: the on-rule follows from it.
    switch = SettingSpec("new_cutoff", "float", default=0.0, off=0.0, label="new", help="new")
    NewCutoff.specs = (switch,)
    check_declarations((*BUILT_IN_UNITS, NewCutoff))  # type: ignore[arg-type]


def test_only_units_with_a_rule_of_their_own_declare_is_on() -> None:
    """The rest take it from their settings' off values (`UnitBase.is_on`)."""
    own = {unit.name for unit in BUILT_IN_UNITS if "is_on" in vars(unit)}
    # reasoning_budget: its tags and the thinking's settings alone leave it off;
    # control: the model applies the strength, the chain never holds it.
    assert own == {
        "penalties",
        "dry",
        "xtc",
        "temperature",
        "grammar",
        "reasoning_budget",
        "control",
    }


class Named:
    """A unit as the builder sees it."""

    def __init__(self, name: str, kind: str, placement: Placement) -> None:
        self.name = name
        self.kind = kind
        self.placement = placement


def test_the_builder_puts_the_units_outside_the_order_where_they_run() -> None:
    held = {
        unit.name: unit
        for unit in (
            Named("grammar", "candidates", BUILT_IN_REGISTRY.placements["grammar"]),
            Named("top_k", "candidates", BUILT_IN_REGISTRY.placements["top_k"]),
            Named("min_tokens", "logits", BUILT_IN_REGISTRY.placements["min_tokens"]),
            Named("penalties", "logits", BUILT_IN_REGISTRY.placements["penalties"]),
            Named("logit_bias", "logits", BUILT_IN_REGISTRY.placements["logit_bias"]),
            Named("temperature", "candidates", BUILT_IN_REGISTRY.placements["temperature"]),
        )
    }
    order = ("penalties", "temperature", "top_k")
    names = [unit.name for unit in arranged(order, held, greedy=False)]
    assert names == ["logit_bias", "penalties", "min_tokens", "grammar", "temperature", "top_k"]
    greedy = [unit.name for unit in arranged(order, held, greedy=True)]
    assert greedy == ["logit_bias", "penalties", "min_tokens", "grammar"]
    held["mirostat"] = Named("mirostat", "candidates", BUILT_IN_REGISTRY.placements["mirostat"])
    replaced = [unit.name for unit in arranged(order, held, greedy=False)]
    assert replaced == ["logit_bias", "min_tokens", "grammar", "mirostat"]
