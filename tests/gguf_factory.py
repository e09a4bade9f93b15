"""Write small GGUF files for tests (a minimal writer of the format's header)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from backend.errors import ModelFileError
from backend.llama.gguf import validate_gguf
from sampling.errors import SamplescopeError

# GGUF value type ids.
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64 = 4, 5, 6, 7, 8, 9, 10


def gguf_string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def gguf_value(value: object) -> bytes:
    """Type id + payload of a value (str, bool, int as uint32, float, list of str/int)."""
    if isinstance(value, bool):
        return struct.pack("<I?", BOOL, value)
    if isinstance(value, int):
        return struct.pack("<II", UINT32, value)
    if isinstance(value, float):
        return struct.pack("<If", FLOAT32, value)
    if isinstance(value, str):
        return struct.pack("<I", STRING) + gguf_string(value)
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            body = b"".join(gguf_string(item) for item in value)
            return struct.pack("<IIQ", ARRAY, STRING, len(value)) + body
        return struct.pack(f"<IIQ{len(value)}i", ARRAY, INT32, len(value), *value)
    raise TypeError(value)


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    type_id: int
    offset: int


def gguf_bytes(
    metadata: dict[str, object],
    tensors: Sequence[Tensor],
    data_size: int,
    *,
    version: int = 3,
    alignment: int = 32,
) -> bytes:
    """A whole GGUF file: header, metadata, tensor table, padding, `data_size` zero bytes."""
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, value in metadata.items():
        out += gguf_string(key) + gguf_value(value)
    for tensor in tensors:
        out += gguf_string(tensor.name) + struct.pack("<I", len(tensor.shape))
        out += struct.pack(f"<{len(tensor.shape)}Q", *tensor.shape)
        out += struct.pack("<IQ", tensor.type_id, tensor.offset)
    out += b"\0" * (-len(out) % alignment)
    out += b"\0" * data_size
    return bytes(out)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ModelFileError) as caught:
        validate_gguf(path)
    assert isinstance(caught.value, SamplescopeError)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")  # every message names the file
    return message.removeprefix(f"{path}: ")  # the problem (tmp paths hold test names)
