"""An error nobody foresaw in the app: its traceback goes to the errors log and the app
ends with one line saying where (the chat is saved as it goes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_backend import FakeBackend
from tui.app import SamplescopeApp

pytestmark = pytest.mark.anyio


async def test_an_unexpected_error_is_logged_and_told_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    app = SamplescopeApp(FakeBackend(), cursor_blink=False)

    def broken() -> None:
        raise RuntimeError("nobody saw this coming")

    with pytest.raises(RuntimeError, match="nobody saw"):
        async with app.run_test(size=(100, 30)) as pilot:
            app.call_later(broken)
            await pilot.pause()
    log = tmp_path / "logs" / "errors.log"
    assert app._crash_line == (
        "samplescope: unexpected error: RuntimeError: nobody saw this coming (the traceback"
        f" is in {log}; the chat is saved)"
    )
    assert 'raise RuntimeError("nobody saw this coming")' in log.read_text(encoding="utf-8")
    assert app.return_code == 1
