"""The TOML config: parsing, precedence, and clear errors naming the line."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import pytest

from backend.config.config import (
    Config,
    ConfigError,
    effective_toml,
    find_line,
    load_config,
    load_config_or_default,
    settings_with_config,
)
from backend.config.paths import CONFIG_DIR_ENV, default_config_path
from backend.session.phrase_bans import PhraseBans
from sampling.built_in import BUILT_IN_REGISTRY, DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.options.settings import add_settings_flags, settings_from_args

GOOD = """\
# my config
model = "~/models/tiny.gguf"
theme = "gruvbox"

[settings]
temperature = 0.5
top_k = 10
seed = 18446744073709551615

[keys]
quit = "ctrl+q"
"new chat" = "ctrl+n"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_good_config_is_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert config.model == "~/models/tiny.gguf"
    assert config.theme == "gruvbox"
    assert config.settings_overrides == {"temperature": 0.5, "top_k": 10, "seed": 2**64 - 1}
    assert config.key_overrides == {"quit": "ctrl+q", "new chat": "ctrl+n"}


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "nope.toml") == Config()
    assert load_config_or_default(tmp_path / "nope.toml") == (Config(), None)


def test_default_path_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path))
    assert default_config_path() == tmp_path / "config.toml"
    write(tmp_path, 'theme = "nord"\n')
    assert load_config().theme == "nord"


def test_flags_override_config_which_overrides_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, BUILT_IN_REGISTRY)
    args = parser.parse_args(["--top-k", "3"])
    settings = settings_from_args(args, settings_with_config(DEFAULT_CHAT_SETTINGS, config))
    assert settings.top_k == 3  # flag
    assert settings.temperature == 0.5  # config
    assert settings.top_p == DEFAULT_CHAT_SETTINGS.top_p  # built-in default
    assert settings_with_config(SamplerSettings(), Config()) == SamplerSettings()


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('model = "m.gguf"\ncolour = "red"\n', 2, "colour: unknown key"),
        ("\n[settings]\ntemperature = 0.5\ntop_kk = 3\n", 4, "settings.top_kk: unknown setting"),
        ("[settings]\n\ntemperature = -1\n", 3, "invalid temperature=-1"),
        ("[settings]\ntop_k = 2.5\n", 2, "invalid top_k=2.5"),
        ('[settings]\ntop_p = 0.9\n  "min_p" = 1.5\n', 3, "invalid min_p=1.5"),
        ('settings.draw = "dice"\n', 1, "invalid draw='dice'"),
        ('settings = { rng = "mt" }\n', 1, "invalid rng='mt'"),
        ("theme = 3\n", 1, "theme: expected a theme name"),
        ('model = ""\n', 1, "model: expected a file path"),
        ("settings = 3\n", 1, "settings: expected a table"),
        ('[keys]\nquit = ""\n', 2, "keys.quit: expected a key"),
        ("[keys]\n\nquit = 1\n", 3, "keys.quit: expected a key"),
        ("[colours]\nbg = 1\n", 1, "colours: unknown key"),
    ],
)
def test_bad_values_name_the_file_and_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert f"line {line}:" in message
    assert words in message


def test_bad_toml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "a"\n[settings]\ntemperature = = 1\n')
    with pytest.raises(ConfigError, match=r"not valid TOML.*line 3") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_deeply_nested_toml_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "x = " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(ConfigError, match="nests tables or arrays too deeply") as info:
        load_config(path)
    assert str(path) in str(info.value)
    config, problem = load_config_or_default(path)  # the app starts on defaults
    assert config == Config() and problem is not None


def test_broken_config_falls_back_to_defaults_with_the_message(tmp_path: Path) -> None:
    path = write(tmp_path, "[settings]\ntemperature = 'hot'\n")
    config, problem = load_config_or_default(path)
    assert config == Config()
    assert problem is not None and "line 2" in problem and str(path) in problem
    assert "using the defaults" in problem


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"\xff\xfe bad")
    with pytest.raises(ConfigError, match=r"cannot read the config file.*not valid UTF-8"):
        load_config(path)


def test_find_line_ignores_same_key_in_other_tables() -> None:
    text = "[keys]\nseed = 'x'\n[settings]\nseed = 2\n"
    assert find_line(text, "settings", "seed") == 4
    assert find_line(text, "keys", "seed") == 2
    assert find_line(text, "settings", "top_k") is None


def test_effective_toml_is_valid_and_complete(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    text = effective_toml(config, model="/abs/tiny.gguf")
    data = tomllib.loads(text)
    assert data["model"] == "/abs/tiny.gguf" and data["theme"] == "gruvbox"
    assert SamplerSettings.from_dict(
        {k: BUILT_IN_REGISTRY.settings_by_name[k].coerce(v) for k, v in data["settings"].items()}
    ) == settings_with_config(DEFAULT_CHAT_SETTINGS, config)
    assert data["keys"] == {"quit": "ctrl+q", "new chat": "ctrl+n"}
    assert str(tmp_path / "config.toml") in text


def test_commands_load_the_config_files_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli.main import main

    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("SAMPLESCOPE_MODEL", raising=False)
    missing = tmp_path / "configured.gguf"
    (tmp_path / "config.toml").write_text(f'model = "{missing}"\n')
    # `info` (and every command that loads a model) uses the config's model...
    assert main(["info"]) == 2
    assert f"{missing}: model file not found" in capsys.readouterr().err
    # ...and --model still beats it.
    assert main(["encode", "hi", "--model", str(tmp_path / "flag.gguf")]) == 2
    assert "flag.gguf: model file not found" in capsys.readouterr().err


def test_the_bans_table_gives_the_phrase_bans(tmp_path: Path) -> None:
    text = '[bans]\nphrases = ["as an AI", "delve"]\nignore_case = true\ntries = 5\n'
    config = load_config(write(tmp_path, text))
    assert config.bans == PhraseBans(("as an AI", "delve"), ignore_case=True, tries=5)
    again = tomllib.loads(effective_toml(config, model="/m.gguf"))["bans"]
    assert again == {
        "phrases": ["as an AI", "delve"],
        "ignore_case": True,
        "regex": False,
        "tries": 5,
    }
    assert load_config(write(tmp_path, "")).bans == PhraseBans()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[bans]\nphrases = "x"\n', "bans.phrases: expected a list of texts"),
        ('[bans]\nphrases = ["("]\nregex = true\n', "bans.phrases: banned phrase '('"),
        ("[bans]\nregex = 1\n", "bans.regex: expected true or false"),
        ("[bans]\nwords = []\n", "bans.words: unknown key"),
        ("[bans]\ntries = 0\n", "invalid tries=0"),
    ],
)
def test_bad_bans_name_the_key(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        load_config(write(tmp_path, text))


def test_repack_is_true_or_false(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "repack = true\n")).repack is True
    assert load_config(write(tmp_path, "")).repack is False
    with pytest.raises(ConfigError, match=r"line 2: repack: expected true or false, got 'yes'"):
        load_config(write(tmp_path, '\nrepack = "yes"\n'))
    text = effective_toml(load_config(write(tmp_path, "repack = true\n")), model="m.gguf")
    assert tomllib.loads(text)["repack"] is True
