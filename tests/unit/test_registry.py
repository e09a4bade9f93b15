"""A registry is built from the units given: a test can build one of fewer built-in
units, a settings record keeps the registry it was made with, and the settings are
listed in the order the units declare."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pytest

from sampling import Sampler, SamplerSettings, settings_summary
from sampling.built_in import BUILT_IN_REGISTRY, BUILT_IN_UNITS
from sampling.chain import build_chain
from sampling.errors import SettingsError
from sampling.samplers.temperature import Temperature
from sampling.samplers.top_k import TopK
from sampling.samplers.unit import Stateless, UnitKind
from sampling.settings.params import setting, specs_of
from sampling.settings.placement import IN_ORDER, Placement
from sampling.settings.record import built_in_registry, provide_built_in_registry
from sampling.settings.registry import build_registry
from sampling.settings.spec import SettingSpec

if TYPE_CHECKING:
    from sampling.candidates import Candidates


@dataclass(frozen=True, slots=True)
class WarmthParams:
    """A test unit's one setting, declared to list between the temperature and top-k."""

    warmth: float = setting(
        SettingSpec(
            "warmth",
            "float",
            rank=15,
            default=0.0,
            off=0.0,
            label="warmth",
            help="a test unit's setting",
            minimum=0.0,
        )
    )


class Warmth(Stateless):
    """A unit that changes nothing, declaring its setting's rank."""

    name: ClassVar[str] = "warmth"
    kind: ClassVar[UnitKind] = "candidates"
    placement: ClassVar[Placement] = IN_ORDER
    params: ClassVar[type[WarmthParams]] = WarmthParams
    specs: ClassVar[tuple[SettingSpec, ...]] = specs_of(WarmthParams)
    group_titles: ClassVar[Mapping[str, str]] = {}
    label: ClassVar[str] = "warmth"
    row_label: ClassVar[str] = "warmth"

    @classmethod
    def is_on(cls, settings: SamplerSettings) -> bool:
        """On above 0."""
        return settings.of(WarmthParams).warmth > 0

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Warmth | None:
        """Built when on."""
        return cls() if cls.is_on(settings) else None

    def apply(self, candidates: Candidates) -> None:
        """Nothing."""
        del candidates


def test_a_registry_of_two_built_in_units_holds_theirs_alone() -> None:
    small = build_registry((TopK, Temperature))
    assert small.sampler_names == ("top_k", "temperature")
    assert small.chat_order == ("top_k", "temperature")
    assert small.default_order == ("temperature", "top_k")
    names = [spec.name for spec in small.settings]
    assert names == [
        "temperature",
        "top_k",
        "temperature_last",
        "draw",
        "rng",
        "seed",
        "dynatemp_range",
        "dynatemp_exponent",
        "samplers",
    ]
    settings = SamplerSettings(small, top_k=2, temperature=0.5, seed=1)
    assert settings.registry is small and settings.samplers == ("temperature", "top_k")
    assert list(settings.to_dict()) == names
    assert settings_summary(settings) == "t=0.5 k=2"
    with pytest.raises(SettingsError, match="min_p"):
        settings.with_changes(min_p=0.1)
    with pytest.raises(SettingsError, match="min_p"):
        SamplerSettings(small, samplers="min_p;temperature")
    step = Sampler(settings).sample(np.array([3.0, 2.0, 1.0, 0.0], dtype=np.float32))
    assert step.token_id in (0, 1)
    assert build_chain(settings).names == ("temperature", "top_k")


def test_a_record_keeps_its_registry_and_one_made_without_takes_the_built_in_one() -> None:
    small = build_registry((TopK, Temperature))
    made_small = SamplerSettings(small, top_k=3)
    assert made_small.registry is small
    assert SamplerSettings().registry is BUILT_IN_REGISTRY
    changed = made_small.with_changes(temperature=0.7)
    assert changed.registry is small
    with pytest.raises(SettingsError, match="min_p"):
        changed.with_changes(min_p=0.1)
    assert SamplerSettings(min_p=0.1).registry is BUILT_IN_REGISTRY
    assert copy.deepcopy(changed).registry is small and copy.copy(changed).registry is small
    # The same values made with another registry: equal settings.
    assert changed.made_with(BUILT_IN_REGISTRY) == changed
    assert changed.made_with(BUILT_IN_REGISTRY).registry is BUILT_IN_REGISTRY


def test_the_built_in_registry_is_given_once() -> None:
    assert built_in_registry() is BUILT_IN_REGISTRY
    provide_built_in_registry(BUILT_IN_REGISTRY)  # the same one again: nothing changes
    with pytest.raises(RuntimeError, match="given once"):
        provide_built_in_registry(build_registry((TopK, Temperature)))
    assert SamplerSettings().registry is BUILT_IN_REGISTRY


def test_settings_are_listed_in_the_order_their_units_declare() -> None:
    tables = build_registry((TopK, Temperature, Warmth))
    assert [spec.name for spec in tables.settings][:3] == ["temperature", "warmth", "top_k"]
    # A unit that declares no rank lists its settings after those that do.
    p_less = [spec.name for spec in BUILT_IN_REGISTRY.settings].index("p_less")
    ranked = [spec for spec in BUILT_IN_REGISTRY.settings if spec.rank is not None]
    assert p_less == len(ranked) and BUILT_IN_REGISTRY.settings[-1].name == "samplers"
    assert all(spec.rank is None for spec in BUILT_IN_REGISTRY.settings[p_less:])
    assert [spec.rank for spec in ranked] == sorted(spec.rank for spec in ranked)


def test_a_registry_refuses_two_units_of_one_name() -> None:
    with pytest.raises(RuntimeError, match="share a name"):
        build_registry((TopK, TopK))
    assert len(BUILT_IN_REGISTRY.built_in) == len(BUILT_IN_UNITS)
