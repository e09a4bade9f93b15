"""The thinking's own settings: the answer's, with the changes `think_set` names.

A thinking model's card often gives two sampler rows, one for the thinking and one
for the answer (Qwen3: thinking t 0.6, top-p 0.95, top-k 20, min-p 0; answer t 0.7,
top-p 0.8). The settings record holds the answer's; `think_set` holds the thinking's
changes from them, as key=value texts (`("t=0.6", "top_p=0.95")`, keys as `--set`
reads them). A step is sampled with the thinking's record while the thinking is open
before it (`sampling.sections`): from the token after a complete start tag up to and
including the token that completes the end tag.

Some settings belong to the reply, not to a section (`SHARED`): the generator (one
random stream for the whole reply), the grammar (it applies to the answer), the tags
and the reasoning budget. The units' state (the penalties' window, mirostat's mu,
DRY's history) runs on across sections: both read the whole history, as llama.cpp's
chain does.
"""

from __future__ import annotations

from typing import Any

from sampling.errors import SettingsError
from sampling.sections import DEFAULT_TAGS
from sampling.settings.record import SamplerSettings
from sampling.settings.spec import SettingSpec, SettingValue

THINK_SET = "think_set"
"""The setting that holds the thinking's changes."""

SHARED = frozenset(
    {
        "seed",
        "rng",
        "draw",
        "grammar",
        "json_schema",
        "grammar_triggers",
        "thinking_tags",
        THINK_SET,
        "reasoning_budget",
        "reasoning_budget_message",
    }
)
"""The settings both sections share (one generator, one grammar, one budget)."""

THINK_PREFIX = "think."
"""How `compare --set` and `sweep --grid` name a thinking setting ("think.t=0.6")."""


def _spec_of(settings: SamplerSettings, key: str) -> SettingSpec | None:
    """The setting a key names in the settings' registry: a short key, a name, or one
    with dashes."""
    for spec in settings.registry.settings:
        if key == spec.short_key:
            return spec
    return settings.registry.settings_by_name.get(key.replace("-", "_"))


def thinking_changes(settings: SamplerSettings) -> dict[str, Any]:
    """The thinking's changes the settings' `think_set` names, by setting name (a key
    named twice: the last wins).

    Raises:
        SettingsError: An entry is not key=value, names no setting or one both
            sections share, or its value cannot be read.
    """
    entries = settings.value(THINK_SET)
    assert isinstance(entries, tuple)
    changes: dict[str, Any] = {}
    for entry in entries:
        key, sep, text = str(entry).partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(THINK_SET, entries, f"key=value pairs ({entry!r} is not one)")
        spec = _spec_of(settings, key)
        if spec is None:
            raise SettingsError(THINK_SET, entries, f"settings' keys ({key!r} names none)")
        if spec.name in SHARED or not spec.per_column:
            raise SettingsError(
                THINK_SET,
                entries,
                f"settings of a section ({spec.name} is the whole reply's: give it once)",
            )
        try:
            changes[spec.name] = spec.coerce(text)
        except SettingsError as error:
            raise SettingsError(THINK_SET, entries, f"readable values ({error})") from None
    return changes


def thinking_record(settings: SamplerSettings) -> SamplerSettings | None:
    """The record the thinking is sampled with: the settings with their `think_set`
    changes applied (and no `think_set` of its own); None when it names none.

    Raises:
        SettingsError: `think_set` cannot be read, or a value is out of range.
    """
    if not _has(settings, THINK_SET) or not settings.value(THINK_SET):
        return None
    changes = thinking_changes(settings)
    try:
        return settings.with_changes(**changes, think_set=())
    except SettingsError as error:
        raise SettingsError(
            THINK_SET, settings.value(THINK_SET), f"values in range ({error})"
        ) from None


def with_thinking_change(
    settings: SamplerSettings, key: str, value: SettingValue
) -> SamplerSettings:
    """The settings with the thinking's `key` set to `value` (a sweep's point, a
    compare column's "think.t=0.6"), the answer's left as they are.

    Raises:
        SettingsError: The key names no setting, one both sections share, or the
            value is out of range.
    """
    spec = _spec_of(settings, key)
    if spec is None:
        raise SettingsError(THINK_SET, key, "a setting's key after 'think.'")
    text = value if isinstance(value, str) else spec.format(value)
    kept = [
        entry
        for entry in _entries(settings)
        if _spec_of(settings, str(entry).partition("=")[0].strip()) != spec
    ]
    changed = settings.with_changes(think_set=(*kept, f"{spec.name}={text}"))
    thinking_record(changed)  # checked now: a bad value is refused where it is given
    return changed


def _has(settings: SamplerSettings, name: str) -> bool:
    """Whether the settings' registry holds the setting `name`."""
    return name in settings.registry.settings_by_name


def _entries(settings: SamplerSettings) -> tuple[str, ...]:
    entries = settings.value(THINK_SET)
    assert isinstance(entries, tuple)
    return tuple(str(entry) for entry in entries)


def tags_in_force(
    settings: SamplerSettings, model_tags: tuple[str, ...]
) -> tuple[SamplerSettings, tuple[str, ...]]:
    """The thinking tags a sampler tracks, and the settings with the model's tags put
    in when they name none (what the steps record, so that a replay has them).

    The settings' `thinking_tags` win; else the model's (its chat template's); else
    `<think>` and `</think>` while a reasoning budget is on; else none.
    """
    if not _has(settings, "thinking_tags"):  # a registry without the thinking's unit
        return settings, ()
    tags = settings.value("thinking_tags")
    assert isinstance(tags, tuple)
    if tags:
        return settings, tuple(str(tag) for tag in tags)
    if model_tags:
        return settings.with_changes(thinking_tags=model_tags), model_tags
    if settings.value("reasoning_budget") != -1:
        return settings, DEFAULT_TAGS
    return settings, ()
