"""The files `samplescope kld` reads and writes. `--save-base FILE` never writes over
what the run reads nor over anything else unasked: the text and the models are
refused, an existing file is kept unless --force, a file that is not a regular file is
never replaced or removed, and the file appears under its name only once whole.
`--base-logits FILE` that is no regular file, or holds a row whose scale or floor is
not finite, is one line (never a hang, nor NaN in --json). Run on a tiny model (the
rules are the command's, not the model's)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from backend.score.base_file import BaseFileReader
from tests.helpers import SPECIAL_FILE_KINDS, special_file
from tests.tiny_models import spm_vocab, write_tiny_llama
from tui.cli.main import main

CTX = "32"
KINDS = {"fifo": "a FIFO", "directory": "a directory", "device": "a device"}


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path]:
    """A tiny model and a text of several chunks of CTX."""
    model = write_tiny_llama(tmp_path / "tiny.gguf", spm_vocab(600), seed=3)
    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat and then " * 40, encoding="utf-8")
    return model, text


def kld(model: Path, text: Path, save: str, *more: str) -> int:
    return main(
        ["kld", str(text), "--model", str(model), "--base", str(model), "--ctx", CTX,
         "--threads", "1", "--save-base", save, *more]
    )  # fmt: skip


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()], err
    return err.strip()


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_the_text_and_the_models_are_never_written(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path], force: tuple[str, ...]
) -> None:
    model, text = run
    before = {path: path.read_bytes() for path in run}
    for target in (model, text):
        assert kld(model, text, str(target), *force) == 2
        line = one_line(capsys)
        assert line.startswith(f"samplescope: cannot write {target}: it is ")
        assert "which this run reads" in line
    assert {path: path.read_bytes() for path in run} == before


def test_an_existing_file_is_replaced_only_with_force_and_whole(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path], tmp_path: Path
) -> None:
    model, text = run
    saved = tmp_path / "base.kld"
    saved.write_bytes(b"somebody's file")
    assert kld(model, text, str(saved)) == 2
    assert one_line(capsys) == f"samplescope: cannot write {saved}: it exists (--force replaces it)"
    assert saved.read_bytes() == b"somebody's file"
    assert kld(model, text, str(saved), "--force") == 0
    capsys.readouterr()
    reader = BaseFileReader(saved)
    assert reader.layout.n_ctx == int(CTX)
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.kld", "text.txt", "tiny.gguf"]


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_a_device_is_refused_and_kept(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path], force: tuple[str, ...]
) -> None:
    if not Path("/dev/full").is_char_device():
        pytest.skip("no /dev/full here")
    assert kld(*run, "/dev/full", *force) == 2
    assert one_line(capsys) == (
        "samplescope: cannot write /dev/full: it exists and is not a regular file"
    )
    assert Path("/dev/full").is_char_device()


def test_a_folder_that_takes_no_file_is_one_line(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path]
) -> None:
    assert kld(*run, "/proc/version") == 2
    assert (
        one_line(capsys)
        == "samplescope: cannot write /proc/version: it exists (--force replaces it)"
    )
    assert kld(*run, "/proc/version", "--force") == 2
    line = one_line(capsys)
    assert line.startswith("samplescope: cannot write /proc/version: cannot create a file in /proc")
    assert Path("/proc/version").read_text()


@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_base_logits_that_are_no_regular_file_are_one_line(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    model, text = run
    path = special_file(tmp_path / "base.kld", kind)
    code = main(["kld", str(text), "--model", str(model), "--base-logits", str(path), "--json"])
    assert code == 2
    assert one_line(capsys) == f"samplescope: cannot read {path}: {KINDS[kind]}, not a regular file"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_base_logits_with_a_scale_that_is_not_finite_are_refused_naming_the_chunk(
    capsys: pytest.CaptureFixture[str], run: tuple[Path, Path], tmp_path: Path, value: float
) -> None:
    model, text = run
    saved = tmp_path / "base.kld"
    assert kld(model, text, str(saved), "--json") == 0
    capsys.readouterr()
    reader = BaseFileReader(saved)
    layout = reader.layout
    reader.close()
    data = bytearray(saved.read_bytes())
    at = layout.header_bytes + 2 * layout.chunk_bytes  # chunk 3, row 1: its scale
    data[at : at + 4] = struct.pack("<f", value)
    saved.write_bytes(bytes(data))
    code = main(
        ["kld", str(text), "--model", str(model), "--base-logits", str(saved), "--json",
         "--threads", "1"]
    )  # fmt: skip
    assert code == 2
    line = one_line(capsys)
    assert f"{saved} is damaged in chunk 3: row 1 has scale {value:g}" in line
