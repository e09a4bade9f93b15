"""The config file's [settings] apply to the headless commands as they do to the app."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config.paths import CONFIG_DIR_ENV
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.options.setting_sets import parse_set
from tui.cli.options.settings import settings_with_user_config


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    path = tmp_path / "config.toml"
    path.write_text("[settings]\ntemperature = 0.3\ntop_k = 7\n", encoding="utf-8")
    return path


def test_generate_starts_from_the_config_settings(configured: Path) -> None:
    assert settings_with_user_config(DEFAULT_CHAT_SETTINGS) == DEFAULT_CHAT_SETTINGS.with_changes(
        temperature=0.3, top_k=7
    )


def test_a_compare_column_starts_from_the_config_settings(configured: Path) -> None:
    assert parse_set("p=0.9") == SamplerSettings(temperature=0.3, top_k=7, top_p=0.9)


def test_a_broken_config_leaves_the_defaults(configured: Path) -> None:
    configured.write_text("[settings]\ntemperature = -1\n", encoding="utf-8")
    assert settings_with_user_config(DEFAULT_CHAT_SETTINGS) == DEFAULT_CHAT_SETTINGS
