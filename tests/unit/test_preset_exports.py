"""`preset export` and the app's Export commands write each form by the same code:
the CLI offers exactly the app's forms and prints exactly what the app copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config.preset_exports import EXPORTS, exported_text
from sampling.built_in import BUILT_IN_REGISTRY, chat_defaults
from tui.cli.main import main


@pytest.mark.parametrize("form", list(EXPORTS))
def test_the_cli_prints_each_form_as_the_app_copies_it(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path))
    assert main(["preset", "export", "--format", form, "--top-k", "7"]) == 0
    expected, _ = exported_text(chat_defaults(BUILT_IN_REGISTRY).with_changes(top_k=7), form)
    assert capsys.readouterr().out == expected + "\n"


def test_the_cli_offers_the_forms_the_app_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["preset", "export", "--format", "nonsense"])
    offered = capsys.readouterr().err
    assert all(repr(form) in offered for form in EXPORTS)
