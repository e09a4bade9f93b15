"""The compare view's fields derive from the spec and take every kind of setting."""

from __future__ import annotations

import math

import pytest

from sampling.errors import SettingsError
from sampling.registry import registry
from sampling.settings import DEFAULT_CHAT_SETTINGS
from tui.compare.columns import (
    EDITABLE_FIELDS,
    VARIABLE_FIELDS,
    coerce_value,
    format_value,
    varied_columns,
)


def test_every_setting_but_the_shared_seed_can_be_varied() -> None:
    assert set(EDITABLE_FIELDS) == {spec.name for spec in registry().settings if spec.per_column}
    assert EDITABLE_FIELDS[: len(VARIABLE_FIELDS)] == VARIABLE_FIELDS  # the one-valued first
    assert "seed" not in EDITABLE_FIELDS
    for name in ("samplers", "logit_bias", "dry_sequence_breakers", "typical_p", "mirostat"):
        assert name in EDITABLE_FIELDS


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
    "spec", [s for s in registry().settings if s.per_column], ids=lambda s: s.name
)
def test_each_fields_shown_value_reads_back(spec: object) -> None:
    name = spec.name  # type: ignore[attr-defined]
    value = getattr(DEFAULT_CHAT_SETTINGS, name)
    assert coerce_value(name, format_value(value, name)) == value
