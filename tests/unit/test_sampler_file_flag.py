"""`--sampler-file` is an option like the others: argv is read once, by an outline of the
full parser, and a word after `--` or given as another option's value never runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import readme_plugin
from tui.cli.commands.app import build_app_parser
from tui.cli.main import build_parser, main
from tui.cli.options.sampler_file import ArgvError, sampler_files_given


@pytest.fixture
def marked_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """The plugin of docs/plugins.md, writing a marker file when it runs, and that marker's path;
    no samplers folder of the user's own."""
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    marker = tmp_path / "ran"
    path = tmp_path / "top_h.py"
    mark = f"\nfrom pathlib import Path\n\nPath({str(marker)!r}).write_text('ran')\n"
    path.write_text(readme_plugin() + mark, encoding="utf-8")
    yield path, marker


@pytest.mark.parametrize(
    ("argv", "files"),
    [
        (["--sampler-file", "a.py", "generate", "hi", "--sampler-file=b.py", "-t", "0"], "a b"),
        (["generate", "--max-tokens", "1", "--", "--sampler-file=x.py"], ""),
        (["generate", "--max-tokens", "1", "--", "--sampler-file", "x.py"], ""),
        (["generate", "Hi", "--system=--sampler-file=x.py"], ""),
        (["generate", "Hi", "--unknown", "--sampler-file", "a.py"], "a"),
        (["compare", "hi", "--set", "t=1", "--sampler-file", "a.py", "--set", "k=2"], "a"),
        (["serve", "--port", "8001", "--", "--sampler-file", "x.py"], ""),
        (["serve", "--sampler-file", "a.py", "--", "--model", "m"], "a"),
        (["samplers", "--json"], ""),
    ],
)
def test_the_outline_reads_sampler_files_where_argparse_reads_options(
    argv: list[str], files: str
) -> None:
    given = sampler_files_given(build_parser(), argv)
    assert given == [Path(f"{name}.py") for name in files.split()]


def test_the_app_reads_its_sampler_files_the_same_way() -> None:
    parser = build_app_parser()
    given = sampler_files_given(parser, ["--model", "m", "--sampler-file", "a.py", "-t", "0"])
    assert given == [Path("a.py")]
    assert sampler_files_given(parser, ["--system=--sampler-file=x.py"]) == []


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["generate", "Hi", "--system", "--sampler-file=x.py"], "--system: expected one argument"),
        (["generate", "Hi", "--sampler-file"], "--sampler-file: expected one argument"),
        (["--sampler-file", "a.py", "nonsense"], "invalid choice: 'nonsense'"),
    ],
)
def test_an_option_without_its_value_is_an_error_before_any_file_runs(
    argv: list[str], words: str
) -> None:
    with pytest.raises(ArgvError, match=words):
        sampler_files_given(build_parser(), argv)


def test_a_sampler_file_given_as_an_options_value_does_not_run(
    marked_plugin: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path, marker = marked_plugin
    assert main(["generate", "Hi", "--system", f"--sampler-file={path}"]) == 2
    assert "--system: expected one argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: "unrecognized arguments"
        main(["samplers", "--json", "--", f"--sampler-file={path}"])
    assert not marker.exists()


def test_a_sampler_file_given_as_an_option_runs_and_its_flags_join_the_parser(
    marked_plugin: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path, marker = marked_plugin
    build_parser()  # the commands' modules are imported before the plugin loads
    assert main(["samplers", "--sampler-file", str(path)]) == 0
    assert marker.exists() and "top_h" in capsys.readouterr().out
    # In a run given the file, its flag joins the commands' parser and the app's.
    drawn = ["dist", "--draws", "10", "--top-h", "0.5", "--sampler-file", str(path)]
    assert main(drawn) == 0
    assert "top_h=0.5" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main(["--top-h", "0.25", "--sampler-file", str(path), "-h"])
    assert done.value.code == 0 and "--top-h" in capsys.readouterr().out
    # Outside a run, the parsers take the built-in units' flags alone.
    with pytest.raises(SystemExit):
        build_parser().parse_args(["generate", "hi", "--top-h", "0.5"])
    with pytest.raises(SystemExit):
        build_app_parser().parse_args(["--top-h", "0.25"])


def test_the_config_may_set_a_loaded_plugins_setting_for_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    (config / "samplers").mkdir(parents=True)
    (config / "samplers" / "top_h.py").write_text(readme_plugin(), encoding="utf-8")
    (config / "config.toml").write_text("[settings]\ntop_h = 0.3\n", encoding="utf-8")
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(config))
    assert main(["config"]) == 0
    shown = capsys.readouterr()
    assert "top_h = 0.3  # from the config file" in shown.out and shown.err == ""
    assert main(["preset", "export", "--format", "llama-server"]) == 0
    assert "top_h = 0.3 (a sampler plugin's setting)" in capsys.readouterr().err
