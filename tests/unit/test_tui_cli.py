"""The front door: `samplescope [app options]` opens the app, subcommands run headless."""

from __future__ import annotations

import pytest

from sampling.built_in import DEFAULT_CHAT_SETTINGS
from tui.cli.commands.app import build_app_parser, run_app
from tui.cli.main import _opens_app, build_parser
from tui.cli.options.settings import settings_from_args


@pytest.mark.parametrize(
    ("argv", "opens"),
    [
        ([], True),
        (["--model", "x.gguf"], True),
        (["-t", "0", "--threads", "1"], True),
        (["-h"], False),
        (["bench", "--steps", "1"], False),
    ],
)
def test_argv_without_a_subcommand_opens_the_app(argv: list[str], opens: bool) -> None:
    assert _opens_app(build_parser(), argv) is opens


def test_app_options_and_sampling_flags_parse() -> None:
    model = ["--model", "m.gguf", "--threads", "3", "--ctx", "1024", "--batch", "64"]
    sampling = ["--gpu-layers", "2", "-t", "0.5", "-k", "7", "--seed", "9", "--draw", "gumbel"]
    args = build_app_parser().parse_args([*model, *sampling])
    assert (args.model, args.threads, args.ctx, args.batch, args.gpu_layers) == (
        "m.gguf",
        3,
        1024,
        64,
        2,
    )
    settings = settings_from_args(args, DEFAULT_CHAT_SETTINGS)
    assert (settings.temperature, settings.top_k, settings.seed, settings.draw) == (
        0.5,
        7,
        9,
        "gumbel",
    )
    assert settings.top_p == DEFAULT_CHAT_SETTINGS.top_p


def test_a_bad_setting_is_refused_before_the_app_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(["--top-p", "0"]) == 2
    assert "top_p" in capsys.readouterr().err
