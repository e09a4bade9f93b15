"""llama.cpp's log goes to a file, never to the terminal (fds 1 and 2 untouched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.llama.log import default_log_path


def test_install_appends_and_switches(tmp_path: Path) -> None:
    from backend.llama.log import current_log_path, install_llama_log

    first = install_llama_log(tmp_path / "a.log")
    assert first == tmp_path / "a.log" and current_log_path() == first and first.exists()
    second = install_llama_log(tmp_path / "b.log")
    assert current_log_path() == second and second.exists()


def test_default_path_is_in_user_log_dir() -> None:
    path = default_log_path()
    assert path.name == "llama.log" and "samplescope" in str(path)


def test_a_directory_as_the_log_is_a_clear_error(tmp_path: Path) -> None:
    from backend.llama.log import LogFileError, install_llama_log

    with pytest.raises(LogFileError, match=f"cannot write llama.cpp's log to {tmp_path}"):
        install_llama_log(tmp_path)
    assert install_llama_log(tmp_path / "ok.log") == tmp_path / "ok.log"  # still usable
