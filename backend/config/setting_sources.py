"""Where each sampler setting came from: the defaults, the model, the user.

A setting is the built-in default until something sets it: the model file's own
settings (`backend.llama.model_sampling`), the config file's [settings], a preset
(which sets every setting), a command-line flag, a slider in the app. As llama.cpp
does (`user_sampling_config`), the model's value fills a setting only where the user
set none: config, preset, flag and slider all count as the user's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from backend.llama.model_sampling import ModelSampling
from sampling.errors import SettingsError
from sampling.settings.record import SamplerSettings

Source = Literal["default", "model", "config", "preset", "flag", "slider"]

USER_SOURCES: tuple[Source, ...] = ("config", "preset", "flag", "slider")
"""The sources that count as the user's: the model's value never replaces them."""


@dataclass(frozen=True, slots=True)
class SettingSources:
    """Each setting's source, by its name (a setting not named is the default).

    Attributes:
        named: The source of each setting not at the built-in default.
    """

    named: Mapping[str, Source] = field(default_factory=lambda: MappingProxyType({}))

    def of(self, name: str) -> Source:
        """Where the setting `name` came from."""
        return self.named.get(name, "default")

    def given(self, names: Iterable[str], source: Source) -> SettingSources:
        """These sources with `names` set by `source`."""
        named = dict(self.named)
        named.update(dict.fromkeys(names, source))
        return SettingSources(MappingProxyType(named))

    def without(self, names: Iterable[str]) -> SettingSources:
        """These sources with `names` back at the default."""
        left = set(names)
        return SettingSources(
            MappingProxyType({n: s for n, s in self.named.items() if n not in left})
        )

    def user_given(self, name: str) -> bool:
        """Whether the user set `name` (the config, a preset, a flag or a slider)."""
        return self.of(name) in USER_SOURCES

    def from_model(self) -> tuple[str, ...]:
        """The settings the model's own values fill."""
        return tuple(name for name, source in self.named.items() if source == "model")

    def to_json(self) -> dict[str, Source]:
        """Each setting not at the default, with its source (for --json)."""
        return dict(self.named)


NO_SOURCES = SettingSources()


def fill_from_model(
    settings: SamplerSettings, sources: SettingSources, model: ModelSampling
) -> tuple[SamplerSettings, SettingSources]:
    """`settings` with the model's own values in every setting the user did not set.

    Returns:
        The settings and their sources (the filled ones marked "model").
    """
    fills = {name: value for name, value in model.values if not sources.user_given(name)}
    if not fills:
        return settings, sources
    try:
        filled = settings.with_changes(**fills)
    except SettingsError:  # each value was checked alone; together they fail: fill each
        filled = settings
        for name in list(fills):
            try:
                filled = filled.with_changes(**{name: fills[name]})
            except SettingsError:
                del fills[name]
    return filled, sources.given(fills, "model")


def sources_line(settings: SamplerSettings, sources: SettingSources) -> str:
    """The settings not at their defaults, each with its source, on one line
    ("temperature=0.6 (model), top_k=20 (flag)"); "all defaults" when none is set."""
    parts = []
    for name, source in sources.named.items():
        spec = settings.registry.settings_by_name.get(name)
        value = settings.value(name)
        shown = spec.format(value) if spec is not None and not spec.is_scalar else value
        parts.append(f"{name}={shown} ({source})")
    return ", ".join(parts) if parts else "all defaults"
