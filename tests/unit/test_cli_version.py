"""`samplescope --version` (or -V) prints samplescope's version and its libraries'."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tui.cli.main import main


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_versions_and_exits(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([flag])
    assert exited.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"samplescope {version('samplescope')} (")
    assert f"llama-cpp-python {version('llama-cpp-python')}" in out
    assert "\n" not in out
