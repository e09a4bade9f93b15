"""llama-perplexity's --kl-divergence-base file, written and read (backend.score.base_file)."""

from __future__ import annotations

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
from sampling.logprob_codec import decode_rows, encode_rows, row_width

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
        (lambda data: data[:40], "names 16 tokens, it holds 5"),
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
