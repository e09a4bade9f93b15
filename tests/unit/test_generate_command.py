"""The `generate` line a compare column (or a sweep setting) offers: it parses back to
the very settings, the chain's order and the seed included."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from backend.chat.protocol import ChatMessage
from backend.config.paths import CONFIG_DIR_ENV
from sampling.built_in import DEFAULT_CHAT_SETTINGS
from sampling.settings.record import SamplerSettings
from tui.cli.main import build_parser
from tui.cli.options.settings import settings_from_args
from tui.generate_command import NotOneCommandError, generate_command
from tui.resources import shipped_presets

QUESTION = [ChatMessage("system", "Be brief."), ChatMessage("user", "Name a cat's toy.")]


@pytest.fixture(autouse=True)
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))


def parsed(line: str) -> tuple[list[str], SamplerSettings]:
    words = shlex.split(line)
    assert words[:2] == ["samplescope", "generate"]
    args = build_parser().parse_args(words[1:])
    return words, settings_from_args(args, DEFAULT_CHAT_SETTINGS)


@pytest.mark.parametrize("name", list(shipped_presets()))
def test_every_shipped_preset_reads_back_from_its_line(name: str) -> None:
    settings = shipped_presets()[name].with_changes(seed=7)
    line = generate_command(QUESTION, settings, max_tokens=64)
    words, back = parsed(line)
    # A grammar or a schema typed as a flag loses its surrounding blanks (nothing else).
    texts = {k: v.strip() for k, v in settings.to_dict().items() if isinstance(v, str)}
    assert back == settings.with_changes(**texts)
    assert words[2:6] == ["Name a cat's toy.", "--system", "Be brief.", "--max-tokens"]


def test_a_temperature_first_preset_names_its_order() -> None:
    settings = shipped_presets()["TopP p=0.9 t=0.8"].with_changes(seed=42)
    words, back = parsed(generate_command(QUESTION, settings, max_tokens=8))
    assert "--samplers" in words and back.order == settings.order
    assert back.order.index("temperature") < back.order.index("top_p")


def test_the_chats_own_settings_give_only_the_seed() -> None:
    hello = [ChatMessage("user", "Hello there")]
    line = generate_command(hello, DEFAULT_CHAT_SETTINGS, max_tokens=8, mode="completion")
    assert line == "samplescope generate 'Hello there' --mode completion --max-tokens 8 --seed 42"


def test_a_setting_the_config_changed_is_given_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[settings]\ntop_k = 7\n")
    monkeypatch.setenv(CONFIG_DIR_ENV, str(config))
    words, back = parsed(generate_command(QUESTION, DEFAULT_CHAT_SETTINGS, max_tokens=8))
    assert words[words.index("--top-k") + 1] == "40"
    assert back == DEFAULT_CHAT_SETTINGS


def test_a_longer_chat_has_no_line() -> None:
    chat = [*QUESTION, ChatMessage("assistant", "A ball."), ChatMessage("user", "Another?")]
    with pytest.raises(NotOneCommandError, match="takes one message"):
        generate_command(chat, DEFAULT_CHAT_SETTINGS, max_tokens=8)


def test_generate_refuses_an_unknown_preset(capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli.main import main

    assert main(["generate", "hi", "--preset", "Nope"]) == 2
    error = capsys.readouterr().err
    assert "invalid preset='Nope': expected one of 'ArgMax'" in error
    assert error.count("\n") == 1


def test_a_setting_at_llama_cpps_default_is_given_where_the_model_has_its_own() -> None:
    from backend.llama.model_sampling import model_sampling
    from tui.generate_command import settings_flags

    own = model_sampling(
        {"general.sampling.top_k": 20, "general.sampling.temp": 0.6}, DEFAULT_CHAT_SETTINGS
    )
    # The model's values are what generate takes anyway; llama.cpp's top-k must be said.
    settings = DEFAULT_CHAT_SETTINGS.with_changes(temperature=0.6)
    assert settings_flags(settings, own) == ["--top-k", "40", "--seed", "42"]
    assert settings_flags(settings) == ["--temperature", "0.6", "--seed", "42"]


def test_a_branch_line_gives_each_setting_unlike_the_steps_own() -> None:
    from tui.generate_command import branch_command

    own = SamplerSettings(top_k=3, min_p=0.2, seed=42)  # the step's, which branch starts from
    wanted = DEFAULT_CHAT_SETTINGS.with_changes(temperature=1.1, seed=7)
    line = branch_command(5, 2, 9, 4, 123, wanted, own, max_tokens=30)
    words = shlex.split(line)
    assert words[:3] == ["samplescope", "branch", "5"]
    args = build_parser().parse_args(words[1:])
    assert (args.reply, args.branch, args.at, args.token, args.max_tokens) == (2, 9, 4, 123, 30)
    # top_k and min_p back to llama.cpp's defaults are flags too: branch starts from own
    assert settings_from_args(args, own) == wanted
