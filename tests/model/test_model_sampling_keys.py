"""A model's own sampler settings (`general.sampling.*`) on the real default model.

A copy of SmolLM2 holding Qwen3's thinking row as `general.sampling.*` keys
(`tests/sampling_models.py`): its values fill every setting the user did not give, a
flag, the config file or a preset beats them, `generate -v`/`--json` and `info` say
where each setting came from, and a bad value is one line, ignored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from backend.config.paths import CONFIG_DIR_ENV
from tests.helpers import chat_of, send_message, wait_until
from tests.sampling_models import QWEN3_LIKE, sampling_copy
from tui.cli.main import main

MODEL_FLAGS = ["--threads", "1", "--ctx", "512"]

BAD_KEYS: dict[str, float | int | str | bool] = {
    "general.sampling.temp": math.nan,
    "general.sampling.top_p": 1.5,
    "general.sampling.top_k": 2.5,
    "general.sampling.min_p": "0.1",
    "general.sampling.mirostat": True,
    "general.sampling.penalty_repeat": 1.1,
}


@pytest.fixture(scope="module")
def sampling_model(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 with Qwen3's thinking row and its own chain order as its own settings."""
    keys = {**QWEN3_LIKE, "general.sampling.sequence": "top_k;top_p;min_p;temp"}
    return sampling_copy(default_model_path, tmp_path_factory.mktemp("sampling"), keys)


@pytest.fixture(scope="module")
def bad_model(default_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 whose `general.sampling.*` keys are wrong but one."""
    return sampling_copy(default_model_path, tmp_path_factory.mktemp("bad"), BAD_KEYS, "bad")


@pytest.fixture(autouse=True)
def own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty config folder of the test's own (the user's config is not read)."""
    folder = tmp_path / "config"
    folder.mkdir()
    monkeypatch.setenv(CONFIG_DIR_ENV, str(folder))
    return folder


def run_generate(
    capsys: pytest.CaptureFixture[str], model: Path, *flags: str
) -> tuple[dict[str, object], str]:
    argv = ["generate", "Hi", "--max-tokens", "4", "--json", "-v", "--model", str(model)]
    assert main([*argv, *MODEL_FLAGS, *flags]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_the_models_values_fill_the_settings_not_given(
    sampling_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, err = run_generate(capsys, sampling_model)
    settings = result["settings"]
    assert isinstance(settings, dict)
    assert settings["temperature"] == 0.6
    assert settings["top_k"] == 20
    assert settings["top_p"] == 0.95
    assert settings["min_p"] == 0.0
    assert settings["samplers"] == ["top_k", "top_p", "min_p", "temperature"]
    assert result["setting_sources"] == {
        "samplers": "model",
        "top_k": "model",
        "top_p": "model",
        "min_p": "model",
        "temperature": "model",
    }
    assert "settings: samplers=top_k;top_p;min_p;temperature (model), top_k=20 (model)" in err


def test_a_flag_the_config_and_a_preset_beat_the_model(
    sampling_model: Path, own_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (own_config / "config.toml").write_text("[settings]\ntop_k = 7\n", encoding="utf-8")
    result, err = run_generate(capsys, sampling_model, "-t", "0.9")
    settings, sources = result["settings"], result["setting_sources"]
    assert isinstance(settings, dict) and isinstance(sources, dict)
    assert (settings["temperature"], sources["temperature"]) == (0.9, "flag")
    assert (settings["top_k"], sources["top_k"]) == (7, "config")
    assert (settings["top_p"], sources["top_p"]) == (0.95, "model")
    assert "temperature=0.9 (flag)" in err and "top_k=7 (config)" in err

    result, _ = run_generate(capsys, sampling_model, "--preset", "llama.cpp defaults")
    settings, sources = result["settings"], result["setting_sources"]
    assert isinstance(settings, dict) and isinstance(sources, dict)
    assert "model" not in sources.values()
    assert (settings["top_k"], sources["top_k"]) == (40, "preset")


def test_the_default_model_asks_for_nothing(
    default_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, err = run_generate(capsys, default_model_path, "-t", "0")
    assert result["setting_sources"] == {"temperature": "flag"}
    assert "(model)" not in err


def test_info_names_each_settings_source(
    sampling_model: Path, own_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (own_config / "config.toml").write_text("[settings]\ntop_k = 7\n", encoding="utf-8")
    assert main(["info", str(sampling_model)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("sampling "))
    shown = "\n".join(lines[start : start + 6])
    assert "temperature     0.6        from the model (general.sampling.temp)" in shown
    assert "top_k           20         the config file's 7 is used (general.sampling.top_k)" in (
        shown
    )
    assert "samplers        top_k;top_p;min_p;temperature from the model" in shown


def test_bad_values_are_one_line_each_and_ignored(
    bad_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, err = run_generate(capsys, bad_model)
    assert result["setting_sources"] == {"repeat_penalty": "model"}
    ignored = [line for line in err.splitlines() if "is ignored" in line]
    assert len(ignored) == 5
    assert "Traceback" not in err
    assert any("general.sampling.temp = nan is ignored: not a finite number" in x for x in ignored)
    assert main(["info", str(bad_model)]) == 0
    out = capsys.readouterr().out
    assert sum("is ignored" in line for line in out.splitlines()) == 5


@pytest.mark.anyio
async def test_the_app_takes_the_models_settings_and_a_slider_beats_them(
    sampling_model: Path,
) -> None:
    from backend.session.llama_backend import LlamaBackend
    from tui.app import SamplescopeApp
    from tui.panel.sampling_panel import SamplingPanel

    app = SamplescopeApp(
        backend_factory=lambda: LlamaBackend.load(
            sampling_model, n_ctx=512, n_batch=64, n_threads=1
        ),
        max_tokens=3,
        cursor_blink=False,
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: chat_of(app).ready, 120)
        assert app.live.current.value("temperature") == 0.6
        assert app.live.current.value("top_k") == 20
        panel = app.chat.query_one(SamplingPanel)
        assert panel.border_subtitle == "model: order, top-k, top-p, min-p, temperature"
        assert app.apply_setting("top_k", 5)
        assert app.origins.sources.of("top_k") == "slider"
        assert panel.border_subtitle == "model: order, top-p, min-p, temperature"
        reply = await send_message(pilot, app, "Hi")
        assert reply.token_ids
        app.reset_settings()
        assert app.live.current.value("top_k") == 20
        assert app.origins.sources.of("top_k") == "model"


def test_a_generate_line_gives_what_the_model_would_fill_otherwise(sampling_model: Path) -> None:
    from backend.chat.protocol import ChatMessage
    from sampling.built_in import DEFAULT_CHAT_SETTINGS
    from tui.generate_command import generate_command

    line = generate_command(
        [ChatMessage("user", "Hi")], DEFAULT_CHAT_SETTINGS, max_tokens=4, model=sampling_model
    )
    for flag in ("--top-k 40", "--min-p 0.05", "--temperature 0.8", "--samplers"):
        assert flag in line
    assert "--top-p" not in line  # the model's 0.95 is llama.cpp's too
