"""A reply's stored settings read back, even when a sampler plug-in they name is gone.

The settings JSON holds the plug-ins' settings and order entries by name. When the
plug-in is not loaded here, its values cannot be typed: they are kept aside as
unknown (name and stored JSON, shown as such by the read-only views) and the rest is
read as usual. Such a reply cannot run again (replayed, continued from, branched):
`StoredSettings.problem` says why, in one line naming the plug-in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from backend.store.records import SAMPLER_FILES_KEY, StoreError
from sampling.errors import SettingsError
from sampling.plugins import files_problem
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry

UnknownValues = tuple[tuple[str, str], ...]
"""Stored settings no loaded code knows: (name, its stored JSON), by name."""


@dataclass(frozen=True, slots=True)
class StoredSettings:
    """One stored settings record, read.

    Attributes:
        settings: The settings this process can type (a missing plug-in's left out).
        unknown: The values of sampler plug-ins that are not loaded.
        problem: Why a reply with these settings cannot run again here, or None.
    """

    settings: SamplerSettings
    unknown: UnknownValues = ()
    problem: str | None = None


def parse_stored_settings(
    path: Path, text: str, reply_id: int, registry: Registry
) -> StoredSettings:
    """Read one stored settings record of reply `reply_id` (see the module doc), made
    with `registry` (the store's: the front door's units and plugins).

    Raises:
        StoreError: The record is no settings object, or a value a loaded setting
            refuses (not a missing plug-in's).
    """
    try:
        values = json.loads(text)
        if not isinstance(values, dict):
            raise ValueError("not a JSON object")
        used = values.pop(SAMPLER_FILES_KEY, {})
        problem = (
            files_problem(used, registry)
            if isinstance(used, dict)
            else "its record of sampler plug-in files is unreadable"
        )
        unknown = _take_unknown(values, registry)
        if problem is None and unknown:
            names = ", ".join(name for name, _ in unknown)
            problem = (
                f"it used {names} of a sampler plug-in that is not loaded: put its file in"
                " the config folder's samplers/ or give --sampler-file PATH"
            )
        return StoredSettings(SamplerSettings.from_dict(values, registry), unknown, problem)
    except (ValueError, TypeError, SettingsError) as error:
        raise StoreError(
            f"chat database {path}: reply {reply_id} has unreadable settings: {error}"
        ) from error


def _take_unknown(values: dict[str, object], registry: Registry) -> UnknownValues:
    """Take the keys and order entries no loaded code knows out of `values`."""
    known = set(registry.settings_by_name) | set(registry.plugin_settings)
    unknown = {name: values.pop(name) for name in sorted(set(values) - known)}
    order = values.get("samplers")
    if isinstance(order, list):
        names = registry.settings_by_name["samplers"].choice_values
        kept = [name for name in order if name in names]
        if len(kept) < len(order):
            unknown["samplers"] = order
            values["samplers"] = kept
    return tuple((name, json.dumps(value)) for name, value in sorted(unknown.items()))
