"""The pure-Python GGUF reader and validator: the real model, and broken files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import llama_cpp
import pytest

from backend.errors import ModelFileError
from backend.llama.gguf import read_gguf, validate_gguf
from tests.gguf_factory import error_of, write

F32, Q4_1, Q8_0 = 0, 3, 8
SMALL_META: dict[str, object] = {"general.architecture": "llama", "general.name": "tiny"}


# --- the real default model --------------------------------------------------------


def test_real_model_parses(default_model_path: Path) -> None:
    gguf = validate_gguf(default_model_path)
    assert gguf.version == 3
    assert gguf.architecture == "llama"
    assert gguf.metadata["tokenizer.ggml.model"] == "gpt2"
    tokens = gguf.metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, tuple) and len(tokens) == 49152
    assert tokens[:3] == ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
    assert gguf.metadata_types["tokenizer.ggml.tokens"] == "array[string]"
    types = gguf.metadata["tokenizer.ggml.token_type"]
    assert isinstance(types, tuple) and len(types) == 49152 and set(types) <= {1, 3}
    assert gguf.arch_value("context_length") == 8192
    assert gguf.arch_value("block_count") == 30
    assert isinstance(gguf.metadata["tokenizer.chat_template"], str)
    assert gguf.file_size == default_model_path.stat().st_size
    # The tensor data fills the file exactly: offsets and sizes are computed right.
    assert gguf.tensor_data_end == gguf.file_size
    assert gguf.data_offset % gguf.alignment == 0
    assert len(gguf.tensors) == 272
    assert Counter(t.type_name for t in gguf.tensors) == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    embd = next(t for t in gguf.tensors if t.name == "token_embd.weight")
    assert embd.shape == (576, 49152)


def test_metadata_matches_llama_cpp(default_model_path: Path) -> None:
    """Scalar metadata equals what llama.cpp itself reads (vocab-only load)."""
    gguf = read_gguf(default_model_path)
    llama = llama_cpp.Llama(str(default_model_path), vocab_only=True, verbose=False)
    theirs = llama.metadata
    assert theirs, "llama.cpp reported no metadata"
    for key, value in theirs.items():
        ours = gguf.metadata[key]
        if isinstance(ours, float):
            assert ours == pytest.approx(float(value), rel=1e-6), key
        elif isinstance(ours, bool):
            assert str(ours).lower() == value.lower(), key
        elif isinstance(ours, str | int):
            assert str(ours) == value, key


# --- files that are not GGUF -----------------------------------------------------------


# --- truncated real model ------------------------------------------------------------------


def truncated_copy(source: Path, tmp_path: Path, length: int) -> Path:
    with source.open("rb") as handle:
        return write(tmp_path / f"cut{length}.gguf", handle.read(length))


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("magic", "not a GGUF"),
        ("version", "header"),
        ("counts", "header"),
        ("first key", "metadata"),
        ("tokens array", "tokenizer.ggml.tokens"),
        ("merges array", "tokenizer.ggml.merges"),
        ("tensor table", "tensor table"),
        ("data start", "beyond the end"),
        ("data middle", "beyond the end"),
        ("last byte", "beyond the end"),
    ],
)
def test_truncated_real_model(
    default_model_path: Path, tmp_path: Path, where: str, expected: str
) -> None:
    gguf = read_gguf(default_model_path)
    with default_model_path.open("rb") as handle:
        header = handle.read(gguf.data_offset)
    cuts = {
        "magic": 2,
        "version": 6,
        "counts": 20,
        "first key": 30,
        "tokens array": header.index(b"<|im_end|>") + 5,
        "merges array": header.index("Ġt he".encode()) + 3,
        "tensor table": header.index(b"token_embd.weight") + 10,
        "data start": gguf.data_offset + 100,
        "data middle": gguf.file_size // 2,
        "last byte": gguf.file_size - 1,
    }
    path = truncated_copy(default_model_path, tmp_path, cuts[where])
    message = error_of(path)
    assert expected in message
    assert "truncated" in message or where == "magic"


def test_every_header_cut_is_a_clean_error(default_model_path: Path, tmp_path: Path) -> None:
    """Cutting the header anywhere (sampled densely in the first KB) is a ModelFileError."""
    with default_model_path.open("rb") as handle:
        head = handle.read(1024)
    path = tmp_path / "cut.gguf"
    for length in range(1024):
        path.write_bytes(head[:length])
        with pytest.raises(ModelFileError):
            validate_gguf(path)


# --- corrupt tables ------------------------------------------------------------------
