"""A plug-in's settings reach what a command reads through the run's registry, handed
down from the front door: the app options `serve` checks, a sweep's saved result,
another tool's preset naming it in its order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.config.preset_files import imported_settings, read_preset_file
from backend.session.sweep import SweepPlan, SweepSetting
from backend.session.sweep_result import SweepFileError, SweepResult
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import Registry
from tests.helpers import readme_plugin, write_bonus_plugin
from tests.registries import with_plugin
from tui.cli.commands.serve import ServeError, checked_app_args
from tui.cli.commands.sweep import read_result
from tui.cli.main import build_parser
from tui.cli.options.sampler_registry import registry_of_args


@pytest.fixture
def top_h(tmp_path: Path) -> Registry:
    """The built-in registry with the plugin of docs/plugins.md."""
    path = tmp_path / "top_h.py"
    path.write_text(readme_plugin(), encoding="utf-8")
    return with_plugin(path)


def test_serve_checks_the_apps_options_with_the_runs_plugins(top_h: Registry) -> None:
    assert checked_app_args(["--", "--top-h", "0.4"], top_h) == ["--top-h", "0.4"]
    with pytest.raises(ServeError, match="not an option of the app: --top-h"):
        checked_app_args(["--", "--top-h", "0.4"])  # the built-in units alone


def test_a_saved_sweep_of_a_plugins_setting_reads_back_with_it(
    top_h: Registry, tmp_path: Path
) -> None:
    settings = SamplerSettings(top_h, samplers="top_k;top_h;temperature").with_changes(top_h=0.4)
    plan = SweepPlan(("p0",), (SweepSetting("top_h=0.4", settings),), 1, seed=7)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(SweepResult("model.gguf", plan, ()).to_json()), encoding="utf-8")
    (read,) = read_result(path, top_h).plan.settings
    assert read.settings == settings and read.settings.registry is top_h
    with pytest.raises(SweepFileError):
        read_result(path)  # the built-in units alone: top_h is no setting


def test_another_tools_preset_may_name_a_loaded_plugin_in_its_order(
    top_h: Registry, tmp_path: Path
) -> None:
    path = tmp_path / "server.json"
    body = {"samplers": ["top_k", "top_h", "temperature"], "repeat_penalty": 1.1}
    path.write_text(json.dumps(body), encoding="utf-8")
    imported = read_preset_file(path, "llama-server", top_h)
    assert imported.changes["samplers"][-3:] == ("top_k", "top_h", "temperature")
    assert not [entry for entry in imported.unmapped if "top_h" in entry.describe()]
    assert imported_settings(imported, top_h).order[-3:] == ("top_k", "top_h", "temperature")
    alone = read_preset_file(path, "llama-server")  # the built-in units alone
    assert "top_h" not in alone.changes["samplers"]
    assert [entry.describe() for entry in alone.unmapped if "top_h" in entry.describe()]


def test_a_plugin_setting_named_like_the_options_registry_does_not_replace_it(
    tmp_path: Path,
) -> None:
    path = write_bonus_plugin(tmp_path, "registry")
    joined = with_plugin(path)
    args = build_parser(joined).parse_args(["dist", "--registry", "0.5"])
    assert registry_of_args(args) is joined and args.registry == 0.5
