"""Compare: columns under several settings, presets, first divergence."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chat.compare import first_divergence
from backend.chat.protocol import ChatMessage
from backend.config.presets import PresetError, load_presets
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.chain import build_chain
from sampling.settings.record import SamplerSettings
from tui.resources import shipped_presets

QUESTION = [ChatMessage("user", "Write one sentence about cats.")]


def test_first_divergence() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence([], []) is None
    assert first_divergence([], [4]) == 0


def test_the_shipped_presets_include_seed_000s_five_modes() -> None:
    presets = shipped_presets()
    assert presets["ArgMax"].greedy
    assert presets["All t=0.8"] == SamplerSettings(temperature=0.8)
    assert presets["All t=1.5"] == SamplerSettings(temperature=1.5)
    assert presets["TopK k=40 t=0.8"] == SamplerSettings(temperature=0.8, top_k=40)
    assert presets["TopP p=0.9 t=0.8"] == SamplerSettings(temperature=0.8, top_p=0.9)
    defaults = presets["llama.cpp defaults"]
    assert (defaults.temperature, defaults.top_k, defaults.top_p, defaults.min_p) == (
        0.8,
        40,
        0.95,
        0.05,
    )
    assert defaults.repeat_last_n == 64
    # Its chain too: llama.cpp's, which new chats name with the samplers it lacks (off).
    chat = DEFAULT_CHAT_SETTINGS.with_changes(seed=0)
    assert defaults == chat.with_changes(samplers=defaults.samplers)
    assert build_chain(defaults).names == build_chain(chat).names
    assert len(presets) >= 8


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('["x"]\ntemprature = 1.0\n', "preset 'x': invalid temprature"),
        ('["hot"]\ntemperature = -1.0\n', "preset 'hot': invalid temperature=-1.0"),
        ('["k"]\ntop_k = "many"\n', "preset 'k': invalid top_k='many'"),
        ("not toml = = 1", "not valid TOML"),
        ("name = 3\n", "preset 'name' must be a table"),
        ("", "holds no presets"),
    ],
)
def test_a_bad_presets_file_names_the_preset_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "presets.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PresetError) as error:
        load_presets(path)
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_a_missing_presets_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PresetError, match="cannot read the presets file"):
        load_presets(tmp_path / "nope.toml")
