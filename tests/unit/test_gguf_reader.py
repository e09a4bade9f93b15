"""The pure-Python GGUF reader and validator: the real model, and broken files."""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

import llama_cpp
import pytest

from backend.errors import ModelFileError
from backend.llama.gguf import GGML_TYPES, read_gguf, validate_gguf
from tests.gguf_factory import Tensor, error_of, gguf_bytes, gguf_string, write

F32, Q4_1, Q8_0 = 0, 3, 8
SMALL_META: dict[str, object] = {"general.architecture": "llama", "general.name": "tiny"}


def small_file(tmp_path: Path, **changes: object) -> Path:
    """A valid GGUF with two tensors (F32 4x2 = 32 bytes, Q8_0 32x1 = 34 bytes)."""
    tensors = changes.pop("tensors", [Tensor("a", (4, 2), F32, 0), Tensor("b", (32,), Q8_0, 32)])
    data_size = changes.pop("data_size", 32 + 34)
    return write(
        tmp_path / "small.gguf",
        gguf_bytes(SMALL_META, tensors, data_size, **changes),  # type: ignore[arg-type]
    )


def test_type_table_matches_libggml() -> None:
    """Block sizes and type sizes equal those of the libggml shipped with llama-cpp-python."""
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    candidates = sorted(lib_dir.glob("libggml-base.*")) + sorted(lib_dir.glob("ggml-base.*"))
    assert candidates, f"no libggml-base in {lib_dir}"
    lib = ctypes.CDLL(str(candidates[0]))
    lib.ggml_type_name.restype = ctypes.c_char_p
    lib.ggml_blck_size.restype = ctypes.c_int64
    lib.ggml_type_size.restype = ctypes.c_size_t
    live = 0
    for type_id in range(llama_cpp.GGML_TYPE_COUNT):
        block, size = lib.ggml_blck_size(type_id), lib.ggml_type_size(type_id)
        if block == 0:  # a removed type
            assert type_id not in GGML_TYPES
            continue
        live += 1
        name = lib.ggml_type_name(type_id).decode()
        assert GGML_TYPES[type_id] == (name.upper(), block, size)
    assert live == len(GGML_TYPES)
    for name in ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
                 "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ4_XS",
                 "I8", "I16", "I32", "I64", "F64"):  # fmt: skip
        assert name in {entry[0] for entry in GGML_TYPES.values()}


def test_small_valid_file(tmp_path: Path) -> None:
    gguf = validate_gguf(small_file(tmp_path))
    assert [(t.name, t.shape, t.type_name, t.offset, t.nbytes) for t in gguf.tensors] == [
        ("a", (4, 2), "F32", 0, 32),
        ("b", (32,), "Q8_0", 32, 34),
    ]
    assert gguf.metadata == SMALL_META
    assert gguf.tensor_data_end == gguf.file_size


def test_missing_file(tmp_path: Path) -> None:
    assert "not found" in error_of(tmp_path / "nope.gguf")


def test_directory(tmp_path: Path) -> None:
    assert "directory" in error_of(tmp_path)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    assert "not a regular file" in error_of(fifo)


def test_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = small_file(tmp_path)

    def refuse(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    # chmod cannot make a file unreadable for root, so refuse the open itself.
    monkeypatch.setattr("backend.llama.gguf.os.open", refuse)
    assert "cannot read" in error_of(path) and "Permission denied" in error_of(path)


def test_empty_file(tmp_path: Path) -> None:
    assert "empty" in error_of(write(tmp_path / "empty.gguf", b""))


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes(tmp_path: Path, seed: int) -> None:
    import random

    data = random.Random(seed).randbytes(1000 + seed * 997)
    assert "not a GGUF" in error_of(write(tmp_path / "random.gguf", data))


def test_text_file_is_refused_without_showing_its_bytes(tmp_path: Path) -> None:
    """A served app's second-model box would otherwise show any file's first bytes."""
    message = error_of(write(tmp_path / "notes.gguf", b"hello, this is not a model\n"))
    assert "not a GGUF" in message and "starts with the bytes GGUF" in message
    assert "hell" not in message


@pytest.mark.parametrize("version", [1, 4, 99])
def test_unsupported_version(tmp_path: Path, version: int) -> None:
    assert f"version {version}" in error_of(small_file(tmp_path, version=version))


def test_big_endian(tmp_path: Path) -> None:
    data = bytearray(small_file(tmp_path).read_bytes())
    data[4:8] = struct.pack(">I", 3)
    assert "big-endian" in error_of(write(tmp_path / "be.gguf", bytes(data)))


def test_tensor_offset_beyond_end(tmp_path: Path) -> None:
    tensors = [Tensor("a", (4, 2), F32, 0), Tensor("far", (32,), Q8_0, 1 << 40)]
    message = error_of(small_file(tmp_path, tensors=tensors))
    assert "'far'" in message and "beyond the end" in message


def test_tensor_data_overruns_end(tmp_path: Path) -> None:
    message = error_of(small_file(tmp_path, data_size=32 + 33))  # one byte short
    assert "'b'" in message and "Q8_0, 34 bytes" in message


def test_read_gguf_does_not_check_data(tmp_path: Path) -> None:
    tensors = [Tensor("far", (32,), Q8_0, 1 << 40)]
    gguf = read_gguf(small_file(tmp_path, tensors=tensors))
    assert gguf.tensors[0].offset == 1 << 40


def test_unknown_tensor_type(tmp_path: Path) -> None:
    message = error_of(small_file(tmp_path, tensors=[Tensor("odd", (32,), 4, 0)]))
    assert "ggml type 4" in message and "'odd'" in message


def test_misaligned_tensor(tmp_path: Path) -> None:
    message = error_of(small_file(tmp_path, tensors=[Tensor("a", (4,), F32, 4)], data_size=64))
    assert "alignment" in message


def test_block_size_mismatch(tmp_path: Path) -> None:
    message = error_of(small_file(tmp_path, tensors=[Tensor("q", (33,), Q4_1, 0)]))
    assert "block size 32" in message


def test_too_many_dimensions(tmp_path: Path) -> None:
    message = error_of(small_file(tmp_path, tensors=[Tensor("t", (1, 1, 1, 1, 1), F32, 0)]))
    assert "5 dimensions" in message


def test_duplicate_tensor(tmp_path: Path) -> None:
    tensors = [Tensor("a", (4,), F32, 0), Tensor("a", (4,), F32, 32)]
    assert "twice" in error_of(small_file(tmp_path, tensors=tensors))


def test_no_tensors(tmp_path: Path) -> None:
    assert "no tensors" in error_of(small_file(tmp_path, tensors=[], data_size=0))


def test_absurd_counts(tmp_path: Path) -> None:
    data = bytearray(small_file(tmp_path).read_bytes())
    data[8:16] = struct.pack("<Q", 1 << 60)
    assert "more than" in error_of(write(tmp_path / "huge.gguf", bytes(data)))


def test_absurd_array_length_is_truncation_not_memory_error(tmp_path: Path) -> None:
    good = gguf_bytes({"tokens": ["a", "b"]}, [Tensor("a", (4,), F32, 0)], 16)
    count_at = good.index(b"tokens") + len(b"tokens") + 8  # after the type ids
    data = bytearray(good)
    data[count_at : count_at + 8] = struct.pack("<Q", 1 << 50)
    message = error_of(write(tmp_path / "arr.gguf", bytes(data)))
    assert "truncated" in message and "'tokens'" in message


def test_unknown_value_type(tmp_path: Path) -> None:
    good = gguf_bytes({"k": 7}, [Tensor("a", (4,), F32, 0)], 16)
    at = good.index(b"k\x04\x00\x00\x00") + 1
    data = bytearray(good)
    data[at : at + 4] = struct.pack("<I", 77)
    assert "unknown value type 77" in error_of(write(tmp_path / "vt.gguf", bytes(data)))


def test_bad_alignment(tmp_path: Path) -> None:
    path = write(
        tmp_path / "al.gguf",
        gguf_bytes({"general.alignment": 24}, [Tensor("a", (4,), F32, 0)], 16),
    )
    assert "power of two" in error_of(path)


def arrays_file() -> bytes:
    """A valid GGUF whose metadata holds arrays of strings, of ints and of arrays."""
    nested = struct.pack("<IIQ", 9, 9, 2)  # ARRAY of 2 ARRAYs
    nested += struct.pack("<IQ", 8, 2) + gguf_string("x") + gguf_string("yz")  # 2 strings
    nested += struct.pack("<IQ2i", 5, 2, 7, -7)  # 2 int32
    meta: dict[str, object] = {
        "general.architecture": "llama",
        "tokenizer.ggml.tokens": ["<s>", "hello", "wörld", ""],
        "tokenizer.ggml.token_type": [1, 2, 3, 4],
        "nested": "_" * (len(nested) - 12),  # a string as long, replaced below
    }
    data = gguf_bytes(meta, [Tensor("a", (4,), F32, 0)], 16)
    placeholder = struct.pack("<I", 8) + gguf_string(str(meta["nested"]))
    assert len(placeholder) == len(nested) and data.count(placeholder) == 1
    return data.replace(placeholder, nested)


def test_a_check_without_arrays_reads_everything_else(tmp_path: Path) -> None:
    path = write(tmp_path / "arrays.gguf", arrays_file())
    full, bare = validate_gguf(path), validate_gguf(path, arrays=False)
    assert full.metadata["tokenizer.ggml.tokens"] == ("<s>", "hello", "wörld", "")
    assert full.metadata["nested"] == (("x", "yz"), (7, -7))
    arrays = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "nested"}
    assert {key for key, value in bare.metadata.items() if value == ()} == arrays
    assert {k: v for k, v in bare.metadata.items() if k not in arrays} == {
        "general.architecture": "llama"
    }
    assert bare.metadata_types == full.metadata_types
    assert (bare.tensors, bare.data_offset, bare.file_size) == (
        full.tensors,
        full.data_offset,
        full.file_size,
    )


def test_a_check_without_arrays_fails_where_reading_them_fails(tmp_path: Path) -> None:
    """Every prefix of the file, and every 8-byte field set to a huge count or length:
    the same error (or none) whether the arrays are read or only walked."""
    data = arrays_file()
    variants = [data[:cut] for cut in range(len(data))]
    for at in range(len(data) - 8):
        variant = bytearray(data)
        variant[at : at + 8] = struct.pack("<Q", 1 << 40)
        variants.append(bytes(variant))
    path = tmp_path / "variant.gguf"
    for variant in variants:
        outcomes = []
        for arrays in (True, False):
            write(path, variant)
            try:
                validate_gguf(path, arrays=arrays)
                outcomes.append("")
            except ModelFileError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], variant
    assert sum(1 for v in variants if v) > len(data)  # the variants were built
