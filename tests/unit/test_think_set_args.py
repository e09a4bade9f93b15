"""The thinking's settings on the command line: `--set "think.t=0.6"` (compare) and
`--grid think.temperature=…` (sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config.preset_files import save_user_preset
from backend.config.presets import PresetError, load_presets
from sampling.settings.record import SamplerSettings
from sampling.thinking_settings import thinking_changes
from tui.cli.commands.sweep.args import SweepArgumentError, grid_settings, parse_grid
from tui.cli.options.setting_sets import SetArgumentError, parse_set


def test_a_set_names_the_thinkings_settings_after_think() -> None:
    settings = parse_set("t=0.7,top_p=0.8,think.t=0.6,think.top_p=0.95,think.k=20")
    assert settings.value("temperature") == 0.7 and settings.value("top_p") == 0.8
    assert thinking_changes(settings) == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


@pytest.mark.parametrize("bad", ["think.seed=3", "think.nope=1", "think.t=-2"])
def test_a_bad_thinking_key_in_a_set_is_one_line(bad: str) -> None:
    with pytest.raises(SetArgumentError, match="think"):
        parse_set(bad)


def test_a_grid_over_the_thinkings_temperature_leaves_the_answers() -> None:
    assert parse_grid("think.temperature=0.2,0.6") == ("think.temperature", [0.2, 0.6])
    settings = grid_settings(["t=0.9"], ["think.t=0.2,0.6"], "last")
    assert [s.settings.value("temperature") for s in settings] == [0.9, 0.9]
    assert [thinking_changes(s.settings) for s in settings] == [
        {"temperature": 0.2},
        {"temperature": 0.6},
    ]


def test_a_grid_refuses_a_shared_thinking_setting() -> None:
    with pytest.raises(SweepArgumentError, match="whole reply"):
        parse_grid("think.reasoning_budget=1,2")


def test_a_preset_keeps_the_thinkings_settings(tmp_path: Path) -> None:
    settings = SamplerSettings(temperature=0.7, think_set=("t=0.6", "top_p=0.95"))
    path = tmp_path / "presets.toml"
    save_user_preset(path, "qwen3", settings)
    assert load_presets(path)["qwen3"] == settings


def test_a_preset_with_a_bad_thinking_setting_is_refused_when_read(tmp_path: Path) -> None:
    path = tmp_path / "presets.toml"
    path.write_text('[odd]\nthink_set = ["seed=3"]\n', encoding="utf-8")
    with pytest.raises(PresetError, match="think_set"):
        load_presets(path)
