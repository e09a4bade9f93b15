"""The compare view's fields derive from the spec and take every kind of setting."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS, chat_defaults
from sampling.errors import SettingsError
from tests.helpers import write_bonus_plugin
from tests.registries import with_plugin
from tui.compare.columns import (
    coerce_value,
    compare_fields,
    format_value,
    varied_columns,
)
from tui.compare.command import command_entries


def test_every_setting_but_the_shared_seed_can_be_varied() -> None:
    editable, variable = compare_fields().editable, compare_fields().variable
    assert set(editable) == {spec.name for spec in BUILT_IN_REGISTRY.settings if spec.per_column}
    assert editable[: len(variable)] == variable  # the one-valued first
    assert "seed" not in editable
    for name in ("samplers", "logit_bias", "dry_sequence_breakers", "typical_p", "mirostat"):
        assert name in editable


def test_several_valued_settings_vary_from_their_text() -> None:
    base = DEFAULT_CHAT_SETTINGS
    order = varied_columns(base, "samplers", ["top_k;temperature;min_p", "min_p,xtc"])
    assert [c.settings.samplers for c in order] == [
        ("top_k", "temperature", "min_p"),
        ("min_p", "xtc"),
    ]
    assert [c.label for c in order] == ["samplers=top_k;temperature;min_p", "samplers=min_p;xtc"]
    (bias,) = varied_columns(base, "logit_bias", ["42=+2;3=-inf"])
    assert bias.settings.logit_bias == ((3, -math.inf), (42, 2.0))
    assert bias.label == "logit_bias=3=-inf;42=+2"
    (breakers,) = varied_columns(base, "dry_sequence_breakers", ['["\\n", "##"]'])
    assert breakers.settings.dry_sequence_breakers == ("\n", "##")
    with pytest.raises(SettingsError, match="samplers"):
        varied_columns(base, "samplers", ["top_k;penalties"])  # penalties after a filter


@pytest.mark.parametrize(
    "spec", [s for s in BUILT_IN_REGISTRY.settings if s.per_column], ids=lambda s: s.name
)
def test_each_fields_shown_value_reads_back(spec: object) -> None:
    name = spec.name  # type: ignore[attr-defined]
    value = getattr(DEFAULT_CHAT_SETTINGS, name)
    assert coerce_value(name, format_value(value, name)) == value


def test_a_plugins_setting_is_among_compares_keys_of_a_registry_that_holds_it(
    tmp_path: Path,
) -> None:
    built_in = compare_fields()
    assert "warmth" not in built_in.editable
    joined = with_plugin(write_bonus_plugin(tmp_path, "warmth", variations=(0.25, 0.5)))
    fields = compare_fields(joined)
    assert "warmth" in fields.variable and "warmth" in fields.editable
    assert fields.variations["warmth"] == (0.25, 0.5)
    assert compare_fields(joined) is fields  # derived once per registry
    assert ("Compare: vary warmth", "warmth") in [e[:2] for e in command_entries(joined)]
    columns = varied_columns(chat_defaults(joined), "warmth", ["0.25", 0.5])
    assert [c.label for c in columns] == ["warmth=0.25", "warmth=0.5"]
    assert [c.settings.value("warmth") for c in columns] == [0.25, 0.5]
    dropped = joined.without("warmth")
    assert compare_fields(dropped) == built_in
    assert "warmth" not in compare_fields(dropped).variations
    assert "warmth" not in [e[1] for e in command_entries(dropped)]
    with pytest.raises(SettingsError, match="warmth"):
        varied_columns(DEFAULT_CHAT_SETTINGS, "warmth", [0.25])
