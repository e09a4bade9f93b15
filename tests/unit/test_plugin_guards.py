"""A plugin's failures at the boundary: any exception when loaded (sys.exit and
KeyboardInterrupt included) is one line naming the file; a setting whose flag clashes
with samplescope's options switches the plugin off with a notice, never a traceback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config.sampler_files import load_sampler_file
from sampling.plugins import PluginError, plugin_origins, unregister
from tests.unit.test_sampler_plugins import readme_plugin
from tui.cli.main import main


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The config folder's samplers/ (empty); every plugin unregistered after."""
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    folder = tmp_path / "config" / "samplers"
    folder.mkdir(parents=True)
    yield folder
    for name in list(plugin_origins()):
        unregister(name)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import sys\nsys.exit()\n", "it called sys.exit(None) when loaded"),
        ("import sys\nsys.exit(3)\n", "it called sys.exit(3) when loaded"),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("raise ValueError('bad\\nvalue')\n", "ValueError: bad value"),
    ],
)
def test_anything_a_plugin_raises_when_loaded_is_one_line_naming_it(
    config: Path, capsys: pytest.CaptureFixture[str], code: str, words: str
) -> None:
    path = config / "broken.py"
    path.write_text(code, encoding="utf-8")
    with pytest.raises(PluginError, match=re.escape(words)) as caught:
        load_sampler_file(path)
    assert str(path) in str(caught.value)
    for argv in (["samplers"], ["generate", "-h"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"samplescope: {caught.value}\n"


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        (("top_h", "max_tokens"), "--max-tokens"),
        (("top_h", "model"), "--model"),
        (("top_h", "help"), "--help"),
        (('label="top-h",', 'label="top-h", short_flag="-t",'), "-t"),
        (('label="top-h",', 'label="top-h", short_flag="t",'), "t"),
    ],
)
def test_a_plugin_whose_flag_clashes_is_switched_off_with_a_notice(
    config: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], flag: str
) -> None:
    path = config / "clash.py"
    path.write_text(readme_plugin().replace(*change), encoding="utf-8")
    assert main(["samplers", "--json"]) == 0
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    setting = "top_h" if "label" in change[0] else change[1]
    assert line.startswith(f"samplescope: sampler plugin {path}: its setting {setting!r}")
    assert f"({flag}) clashes with an option of samplescope" in line and "not loaded" in line
    assert f'"{setting}"' not in captured.out and not plugin_origins()
