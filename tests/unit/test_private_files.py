"""The chats and the errors log are their owner's alone: the data and log folders are
made 0700, the database (with its -wal and -shm files) and the log 0600, whatever the
umask; an older file others could read is narrowed; an existing folder others can
read gets a one-line warning. The errors log is bounded: past its size it is turned
over, the newest tracebacks kept."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend import error_log
from backend.store.store import ChatStore
from tui.cli.main import main


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most systems start with: files 0644, folders 0755 unless asked."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The data and log folders of a first run (not there yet)."""
    data, logs = tmp_path / "home" / "data", tmp_path / "home" / "logs"
    monkeypatch.setenv("SAMPLESCOPE_DATA_DIR", str(data))
    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(logs))
    monkeypatch.setenv("SAMPLESCOPE_CONFIG_DIR", str(tmp_path / "config"))
    return data, logs


def test_a_first_run_makes_the_chats_folder_and_database_private(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, _logs = folders
    assert main(["history"]) == 0
    assert capsys.readouterr().err == ""
    assert mode(data) == 0o700 and mode(data.parent) == 0o700
    assert mode(data / "chats.sqlite3") == 0o600


def test_the_write_ahead_log_and_its_index_are_private_too(folders: tuple[Path, Path]) -> None:
    data, _logs = folders
    with ChatStore(data / "chats.sqlite3") as store:
        store.new_chat("a private question", None)
        companions = [data / "chats.sqlite3-wal", data / "chats.sqlite3-shm"]
        assert all(path.exists() for path in companions)
        assert [mode(path) for path in companions] == [0o600, 0o600]


def test_an_older_open_database_is_narrowed_and_its_folder_warned_about(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, _logs = folders
    data.mkdir(parents=True, mode=0o755)
    with ChatStore(data / "chats.sqlite3"):
        pass
    os.chmod(data / "chats.sqlite3", 0o644)  # as an earlier samplescope left it
    assert main(["history"]) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"samplescope: {data} (holding your chats) can be read by other users:"
        f" `chmod 700 {data}` makes it yours alone"
    )
    assert mode(data / "chats.sqlite3") == 0o600
    assert mode(data) == 0o755  # a folder is the user's to change: told, not changed


def test_older_open_write_ahead_files_are_narrowed_when_the_database_opens(
    folders: tuple[Path, Path],
) -> None:
    data, _logs = folders
    path = data / "chats.sqlite3"
    with ChatStore(path) as first:  # its -wal and -shm stay while it is open
        first.new_chat("a private question", None)
        companions = [data / "chats.sqlite3-wal", data / "chats.sqlite3-shm"]
        for companion in [path, *companions]:
            os.chmod(companion, 0o644)  # as an earlier samplescope left them
        with ChatStore(path):
            assert [mode(p) for p in [path, *companions]] == [0o600] * 3


def broken(args: argparse.Namespace) -> int:
    raise RuntimeError("boom")


def test_the_errors_log_is_private(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _data, logs = folders
    monkeypatch.setattr("tui.cli.commands.samplers.run", broken)
    assert main(["samplers"]) == 1
    assert mode(logs) == 0o700 and mode(logs / "errors.log") == 0o600


def test_the_errors_log_is_turned_over_past_its_size_keeping_the_newest(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _data, logs = folders
    logs.mkdir(parents=True)
    log = logs / "errors.log"
    old = "--- an old traceback\n" * (error_log.MAX_LOG_BYTES // 20)
    log.write_text(old, encoding="utf-8")
    os.chmod(log, 0o644)
    monkeypatch.setattr("tui.cli.commands.samplers.run", broken)
    assert main(["samplers"]) == 1
    assert f"(the traceback is in {log})" in capsys.readouterr().err
    newest = log.read_text(encoding="utf-8")
    assert "samplescope samplers" in newest and "an old traceback" not in newest
    assert (logs / "errors.log.1").read_text(encoding="utf-8") == old
    assert mode(log) == 0o600 and mode(logs / "errors.log.1") == 0o600


def test_the_errors_log_stays_bounded_however_many_errors(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _data, logs = folders
    monkeypatch.setattr(error_log, "MAX_LOG_BYTES", 8192)
    monkeypatch.setattr("tui.cli.commands.samplers.run", broken)
    for _ in range(40):
        assert main(["samplers"]) == 1
    capsys.readouterr()
    files = sorted(path.name for path in logs.iterdir())
    assert files == ["errors.log", "errors.log.1"]
    entry = len((logs / "errors.log").read_text(encoding="utf-8").split("\n--- ")[0])
    for path in logs.iterdir():
        assert path.stat().st_size < 8192 + entry
    assert (logs / "errors.log").read_text(encoding="utf-8").count("samplescope samplers") >= 1


def test_the_app_says_so_in_a_notice_when_its_folders_are_open(
    folders: tuple[Path, Path],
) -> None:
    from tui.cli.commands.app import build_app, build_app_parser

    data, logs = folders
    data.mkdir(parents=True, mode=0o755)
    logs.mkdir(mode=0o750)
    app = build_app(build_app_parser().parse_args([]))
    try:
        assert [line for line in app._notices if "other users" in line] == [
            f"{data} (holding your chats) can be read by other users:"
            f" `chmod 700 {data}` makes it yours alone",
            f"{logs} (holding the errors log) can be read by other users:"
            f" `chmod 700 {logs}` makes it yours alone",
        ]
    finally:
        assert app.store is not None
        app.store.close()


def test_llama_cpps_log_beside_the_errors_log_is_private_too(tmp_path: Path) -> None:
    from backend.llama.log import install_llama_log

    log = install_llama_log(tmp_path / "logs" / "llama.log")
    assert mode(log.parent) == 0o700 and mode(log) == 0o600


def test_llama_log_goes_to_the_log_folder_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp's log lives beside errors.log, in SAMPLESCOPE_LOG_DIR when it is set."""
    from backend.llama.log import default_log_path

    monkeypatch.setenv("SAMPLESCOPE_LOG_DIR", str(tmp_path / "logs"))
    assert default_log_path() == tmp_path / "logs" / "llama.log"
