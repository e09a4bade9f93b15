"""What other tools' presets have in common: the imported record, the fields left
out, and the chain orders they write.

Each tool's own field names live in its module (`sillytavern_format`,
`textgen_webui_format`, `koboldcpp_format`, `llama_server_format`); this module
holds what they share. An import never drops a field silently: every field with
no counterpart in `SamplerSettings` comes back in `ImportedPreset.unmapped`, and
an export lists the settings the target cannot hold the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sampling.built_in import BUILT_IN_REGISTRY
from sampling.errors import SamplescopeError
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry, registry_of
from sampling.settings.text import canonical_sampler

TEXT_UNITS_PER_PROBABILITY = 1e4
"""text-generation-webui and SillyTavern give epsilon and eta cutoffs in units of
1e-4 (their "3" is a probability of 0.0003); samplescope holds the probability."""


class PresetFormatError(SamplescopeError):
    """A preset file of another tool cannot be read; the message names the file."""


@dataclass(frozen=True, slots=True)
class Unmapped:
    """One field with no counterpart on the other side.

    Attributes:
        name: The field's name (the other tool's when importing, samplescope's when
            exporting).
        value: Its value, as it was.
        reason: Why it did not map.
    """

    name: str
    value: Any
    reason: str

    def describe(self) -> str:
        """One line: "rep_pen_slope = 1 (no counterpart)"."""
        return f"{self.name} = {self.value!r} ({self.reason})"


@dataclass(frozen=True, slots=True)
class ImportedPreset:
    """A preset read from another tool.

    Attributes:
        changes: The settings it sets, by `SamplerSettings` field name.
        unmapped: Every field it holds that samplescope has no counterpart for.
        tool: The tool that wrote it ("sillytavern", "text-generation-webui",
            "koboldcpp", "llama-server").
    """

    changes: Mapping[str, Any]
    unmapped: tuple[Unmapped, ...]
    tool: str


NO_COUNTERPART = "no counterpart in samplescope"


def leftover_fields(
    data: Mapping[str, Any], used: Iterable[str], reason: str = NO_COUNTERPART
) -> list[Unmapped]:
    """The fields of `data` not among `used`, each listed with `reason`, in file order."""
    taken = set(used)
    return [Unmapped(key, value, reason) for key, value in data.items() if key not in taken]


def plugin_leftovers(settings: SamplerSettings) -> list[Unmapped]:
    """The settings of sampler plugins (no other tool has them), those not at their
    default."""
    built_in = {spec.name for spec in registry_of(settings).built_in_settings}
    return [
        Unmapped(name, value, "a sampler plugin's setting")
        for name, value in settings.to_dict().items()
        if name not in built_in
    ]


def order_from_names(
    words: Iterable[str],
    aliases: Mapping[str, str | None],
    field: str,
    registry: Registry = BUILT_IN_REGISTRY,
) -> tuple[tuple[str, ...], list[Unmapped]]:
    """A chain order from another tool's sampler names.

    The samplers that rewrite the logits (penalties, DRY) lead samplescope's order;
    the other tools run them first whether their order names them or not, so those
    it leaves out are added after those it names.

    Args:
        words: The tool's names, in its order.
        aliases: The tool's names that differ from samplescope's; None for a stage
            samplescope runs outside the order (e.g. mirostat).
        field: The field's name, for the unmapped entries.
        registry: The samplers the order may name (another tool's preset names the
            built-in ones).

    Returns:
        The order, and one entry per name with no counterpart.

    Raises:
        PresetFormatError: The names are not a list of texts.
    """
    found: list[str] = []
    unmapped: list[Unmapped] = []
    if isinstance(words, str | bytes | dict) or not isinstance(words, Iterable):
        raise PresetFormatError(f"{field}: expected a list of sampler names, not {words!r:.60}")
    for word in words:
        if not isinstance(word, str):
            raise PresetFormatError(f"{field}: a sampler name is text, not {word!r:.60}")
        if word in aliases:
            name = aliases[word]
            if name is None:
                continue
        else:
            name = canonical_sampler(word, registry.sampler_names)
        if name is None:
            unmapped.append(Unmapped(f"{field}: {word}", word, "no such sampler in samplescope"))
        elif name not in found:
            found.append(name)
    leading = [name for name in found if name in registry.logits_samplers]
    leading += [name for name in registry.logits_samplers if name not in leading]
    rest = [name for name in found if name not in registry.logits_samplers]
    return (*leading, *rest), unmapped


def from_text_units(value: float) -> float:
    """A cutoff in text-generation-webui's units of 1e-4, as a probability."""
    return float(f"{value / TEXT_UNITS_PER_PROBABILITY:.12g}")


def to_text_units(value: float) -> float:
    """A probability cutoff in text-generation-webui's units of 1e-4."""
    return float(f"{value * TEXT_UNITS_PER_PROBABILITY:.12g}")


def plain_number(value: float) -> float | int:
    """A float that is whole as an int (1.0 → 1), as the tools write their files."""
    if math.isfinite(value) and value == int(value):
        return int(value)
    return value
