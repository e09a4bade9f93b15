"""llama-perplexity's --kl-divergence-base file, written and read (backend.score.base_file)."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from backend.score.base_file import (
    BaseFileError,
    BaseFileLayout,
    BaseFileReader,
    BaseFileWriter,
)
from sampling.analysis.logprob_codec import decode_rows, encode_rows, row_width
from tests.helpers import SPECIAL_FILE_KINDS, special_file

N_VOCAB = 7  # odd: each row ends with a pad


def layout(n_ctx: int = 8, n_chunk: int = 2) -> BaseFileLayout:
    tokens = tuple(int(t) for t in np.arange(n_ctx * n_chunk) % N_VOCAB)
    return BaseFileLayout(n_ctx, N_VOCAB, n_chunk, tokens)


def chunks(shape: BaseFileLayout, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((shape.rows_per_chunk, N_VOCAB)).astype(np.float32)
        for _ in range(shape.n_chunk)
    ]


def write(path: Path, shape: BaseFileLayout, logits: list[np.ndarray]) -> None:
    writer = BaseFileWriter(path, shape)
    for chunk in logits:
        writer.write_chunk(encode_rows(chunk))
    writer.close()


def test_layout_is_llama_perplexitys(tmp_path: Path) -> None:
    """The bytes: _logits_, int32 n_ctx, n_vocab, n_chunk, the tokens, then per chunk
    n_ctx - 1 - n_ctx/2 rows of 2*((n_vocab+1)/2)+4 uint16."""
    shape = layout()
    path = tmp_path / "base.kld"
    logits = chunks(shape)
    write(path, shape, logits)
    data = path.read_bytes()
    assert data[:8] == b"_logits_"
    assert struct.unpack("<3i", data[8:20]) == (8, N_VOCAB, 2)
    assert struct.unpack("<16i", data[20:84]) == shape.tokens
    rows = np.frombuffer(data[84:], dtype="<u2").reshape(2, 3, row_width(N_VOCAB))
    assert shape.rows_per_chunk == 3
    assert np.array_equal(rows[1], encode_rows(logits[1]))
    assert len(data) == shape.file_bytes


def test_round_trip(tmp_path: Path) -> None:
    shape = layout(n_ctx=10, n_chunk=3)
    path = tmp_path / "base.kld"
    logits = chunks(shape, seed=5)
    write(path, shape, logits)
    reader = BaseFileReader(path)
    try:
        assert reader.layout == shape
        for index, chunk in enumerate(logits):
            stored = reader.read_chunk(index)
            assert np.array_equal(stored, encode_rows(chunk))
            # Within the codec's precision of the log-softmax.
            x = chunk.astype(np.float64)
            exact = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
            assert decode_rows(stored, N_VOCAB) == pytest.approx(exact, abs=2e-4)
    finally:
        reader.close()


def test_unfinished_file_is_removed(tmp_path: Path) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    writer = BaseFileWriter(path, shape)
    writer.write_chunk(encode_rows(chunks(shape)[0]))
    writer.close()
    assert not path.exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: b"_notlog_" + data[8:], "does not begin with _logits_"),
        (lambda data: data[:12], "header is incomplete"),
        (lambda data: data[:40], "is 40 bytes where .* makes 228: it holds less than its tokens"),
        (lambda data: data[:-2], "is 226 bytes where .* makes 228"),
        (lambda data: data + b"\0\0", "is 230 bytes where .* makes 228"),
        (lambda data: data[:8] + struct.pack("<3i", 8, 0, 2) + data[20:], "impossible header"),
        (lambda data: data[:20] + struct.pack("<i", 99) + data[24:], "outside its vocabulary"),
    ],
)
def test_damaged_files_are_one_line_errors(tmp_path: Path, damage: object, message: str) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    write(path, shape, chunks(shape))
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(BaseFileError, match=message) as caught:
        BaseFileReader(path)
    assert "\n" not in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BaseFileError, match=r"cannot read .*nothing\.kld"):
        BaseFileReader(tmp_path / "nothing.kld")


@pytest.mark.parametrize(
    "counts",
    [
        (2**31 - 1, 7, 2**31 - 1),  # 2**62 tokens: an OverflowError once
        (4, 7, 2**29),  # 8 GiB of tokens: allocated once before the size was checked
        (2**20, 2**31 - 1, 1),  # rows of a huge vocabulary
        (2, 7, 1),  # no row scored
    ],
)
def test_a_header_with_huge_counts_is_refused_by_the_file_size_before_reading(
    tmp_path: Path, counts: tuple[int, int, int]
) -> None:
    path = tmp_path / "base.kld"
    path.write_bytes(b"_logits_" + struct.pack("<3i", *counts) + b"\0" * 64)
    n_ctx, n_vocab, n_chunk = counts
    rows = n_ctx - 1 - n_ctx // 2
    makes = 20 + 4 * n_ctx * n_chunk + n_chunk * rows * (2 * ((n_vocab + 1) // 2) + 4) * 2
    message = f"is 84 bytes where .* makes {makes}:" if rows else "impossible header"
    with pytest.raises(BaseFileError, match=message) as caught:
        BaseFileReader(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("header", "shown"),
    [((float("nan"), -3.0), "scale nan and floor -3"), ((0.5, float("-inf")), "floor -inf")],
)
def test_a_row_whose_scale_or_floor_is_not_finite_is_refused_naming_its_chunk(
    tmp_path: Path, header: tuple[float, float], shown: str
) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    write(path, shape, chunks(shape))
    data = bytearray(path.read_bytes())
    row = shape.header_bytes + shape.chunk_bytes + row_width(N_VOCAB) * 2  # chunk 2, row 2
    data[row : row + 8] = struct.pack("<2f", *header)
    path.write_bytes(bytes(data))
    reader = BaseFileReader(path)
    try:
        reader.read_chunk(0)
        with pytest.raises(BaseFileError, match=f"damaged in chunk 2: row 2 has .*{shown}"):
            reader.read_chunk(1)
    finally:
        reader.close()


@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_a_base_file_that_is_no_regular_file_is_refused_before_reading(
    tmp_path: Path, kind: str
) -> None:
    path = special_file(tmp_path / "base.kld", kind)
    with pytest.raises(BaseFileError, match="not a regular file") as caught:
        BaseFileReader(path)
    assert str(path) in str(caught.value)


def test_an_existing_file_is_kept_unless_forced_and_replaced_whole(tmp_path: Path) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    path.write_bytes(b"precious")
    with pytest.raises(BaseFileError, match=r"it exists \(--force replaces it\)"):
        BaseFileWriter(path, shape)
    writer = BaseFileWriter(path, shape, force=True)
    assert path.read_bytes() == b"precious"  # untouched until the last chunk is written
    for chunk in chunks(shape):
        writer.write_chunk(encode_rows(chunk))
    assert path.read_bytes() == b"precious"
    writer.close()
    assert len(path.read_bytes()) == shape.file_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.kld"]


def test_an_unfinished_forced_file_leaves_the_old_one_and_no_part(tmp_path: Path) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    path.write_bytes(b"precious")
    writer = BaseFileWriter(path, shape, force=True)
    writer.write_chunk(encode_rows(chunks(shape)[0]))
    writer.close()
    assert path.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.kld"]


@pytest.mark.parametrize("force", [False, True])
def test_a_device_is_never_written_nor_removed(force: bool) -> None:
    device = Path("/dev/full")
    if not device.exists():
        pytest.skip("no /dev/full here")
    with pytest.raises(BaseFileError, match="cannot write /dev/full: it exists and is not a"):
        BaseFileWriter(device, layout(), force=force)
    assert device.is_char_device()


def test_a_folder_that_cannot_be_written_is_one_line_and_removes_nothing() -> None:
    with pytest.raises(BaseFileError, match=r"^cannot write /proc/nothing\.kld: ") as caught:
        BaseFileWriter(Path("/proc/nothing.kld"), layout())
    assert "\n" not in str(caught.value)
    with pytest.raises(BaseFileError, match=r"^cannot write /proc/version: it exists"):
        BaseFileWriter(Path("/proc/version"), layout())
    assert Path("/proc/version").read_text()


def test_a_full_disk_is_one_line_naming_the_file_and_removes_only_the_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shape = layout()
    path = tmp_path / "base.kld"
    writer = BaseFileWriter(path, shape)

    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self) -> None:
            pass

    monkeypatch.setattr(writer, "_file", Full())
    with pytest.raises(BaseFileError) as caught:
        writer.write_chunk(encode_rows(chunks(shape)[0]))
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert list(tmp_path.iterdir()) == []
