"""Hostile base log-probability files (`kld --base-logits`): random bytes, headers
whose counts are anything an int32 holds, and rows whose scale and floor are any
float32 bits give a layout and finite rows or one `BaseFileError` line naming the
file, never another exception, a hang or an allocation the file's size does not back.
Examples per run come from the hypothesis profile (tests/conftest.py).
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.score.base_file import BaseFileError, BaseFileLayout, BaseFileReader, BaseFileWriter
from sampling.analysis.logprob_codec import encode_rows, row_headers
from tests.helpers import SPECIAL_FILE_KINDS, special_file

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@pytest.fixture(scope="module")
def work() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-base-"))


def read_all(path: Path) -> None:
    """Open the file and read every chunk, as kld does: rows are finite or refused."""
    reader = BaseFileReader(path)
    try:
        for index in range(reader.layout.n_chunk):
            rows = reader.read_chunk(index)
            scale, floor = row_headers(rows)
            assert np.isfinite(scale).all() and np.isfinite(floor).all()
    finally:
        reader.close()


def refused_in_one_line(path: Path) -> None:
    try:
        read_all(path)
    except BaseFileError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)


@HEALTH
@given(st.binary(max_size=400), st.booleans())
def test_random_bytes_are_a_base_file_or_one_line(work: Path, data: bytes, magic: bool) -> None:
    path = work / "random.kld"
    path.write_bytes((b"_logits_" if magic else b"") + data)
    refused_in_one_line(path)


@HEALTH
@given(INT32, INT32, INT32, st.binary(max_size=200))
def test_any_header_counts_are_checked_against_the_size_first(
    work: Path, n_ctx: int, n_vocab: int, n_chunk: int, rest: bytes
) -> None:
    path = work / "header.kld"
    path.write_bytes(b"_logits_" + struct.pack("<3i", n_ctx, n_vocab, n_chunk) + rest)
    refused_in_one_line(path)


@HEALTH
@given(st.lists(st.binary(min_size=8, max_size=8), min_size=1, max_size=3), st.data())
def test_any_scale_and_floor_bits_are_finite_rows_or_one_line(
    work: Path, headers: list[bytes], data: st.DataObject
) -> None:
    tokens = tuple(range(8)) * 2
    layout = BaseFileLayout(8, 8, 2, tokens)
    path = work / "rows.kld"
    path.unlink(missing_ok=True)
    writer = BaseFileWriter(path, layout)
    rng = np.random.default_rng(0)
    for _ in range(layout.n_chunk):
        writer.write_chunk(encode_rows(rng.standard_normal((3, 8)).astype(np.float32)))
    writer.close()
    raw = bytearray(path.read_bytes())
    for bits in headers:
        row = data.draw(st.integers(0, layout.n_chunk * layout.rows_per_chunk - 1))
        at = layout.header_bytes + row * (layout.chunk_bytes // layout.rows_per_chunk)
        raw[at : at + 8] = bits
    path.write_bytes(bytes(raw))
    refused_in_one_line(path)


@pytest.mark.parametrize("kind", SPECIAL_FILE_KINDS)
def test_a_base_file_that_is_no_regular_file_is_one_line(tmp_path: Path, kind: str) -> None:
    path = special_file(tmp_path / "base.kld", kind)
    with pytest.raises(BaseFileError, match="not a regular file"):
        read_all(path)
