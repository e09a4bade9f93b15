"""Low-level GGUF reading: metadata value types, a bounds-checked little-endian reader.

Every read checks the file's size first, so a truncated or corrupt file is a clear
`ModelFileError` naming what was being read, never an IndexError or a crash.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
import sys
from array import array
from pathlib import Path
from typing import Union

from backend.errors import ModelFileError

# GGUF metadata value types: id -> (name, struct format or None for string/array).
STRING_TYPE = 8
ARRAY_TYPE = 9
VALUE_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("uint8", "B"),
    1: ("int8", "b"),
    2: ("uint16", "H"),
    3: ("int16", "h"),
    4: ("uint32", "I"),
    5: ("int32", "i"),
    6: ("float32", "f"),
    7: ("bool", "?"),
    STRING_TYPE: ("string", None),
    ARRAY_TYPE: ("array", None),
    10: ("uint64", "Q"),
    11: ("int64", "q"),
    12: ("float64", "d"),
}

Scalar = Union[int, float, bool, str]  # noqa: UP007 (a runtime alias)
MetaValue = Union[Scalar, tuple["MetaValue", ...]]  # noqa: UP007


MAX_ARRAY_DEPTH = 32
"""The deepest nesting of metadata arrays read (llama.cpp's own files nest none)."""


class ValueReader:
    """Reads little-endian GGUF values from a buffer, reporting truncation clearly.

    Args:
        buffer: The file's bytes.
        path: The file (named in errors).
        size: The file's size.
        arrays: Build array values; False: an array is walked and bounds-checked item
            by item but read as an empty tuple (a vocabulary's 50,000 strings are never
            made: a check that needs none of them holds no memory for them).
    """

    def __init__(self, buffer: mmap.mmap, path: Path, size: int, *, arrays: bool = True) -> None:
        self.buffer = buffer
        self.path = path
        self.size = size
        self.arrays = arrays
        self.pos = 0
        self.where = "header"  # what is being read, for error messages

    def fail(self, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.path}: {problem}")

    def need(self, count: int) -> None:
        if count < 0 or self.pos + count > self.size:
            raise self.fail(
                f"truncated GGUF file: the {self.where} needs bytes up to offset "
                f"{self.pos + count}, but the file has only {self.size} bytes"
            )

    def unpack(self, fmt: str) -> int | float | bool:
        size = struct.calcsize("<" + fmt)
        self.need(size)
        (value,) = struct.unpack_from("<" + fmt, self.buffer, self.pos)
        self.pos += size
        return value  # type: ignore[no-any-return]

    def u32(self) -> int:
        return int(self.unpack("I"))

    def u64(self) -> int:
        return int(self.unpack("Q"))

    def string(self) -> str:
        length = self.u64()
        self.need(length)
        raw = self.buffer[self.pos : self.pos + length]
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def value(self, type_id: int) -> tuple[MetaValue, str]:
        if type_id not in VALUE_TYPES:
            raise self.fail(f"corrupt GGUF file: unknown value type {type_id} in the {self.where}")
        name, fmt = VALUE_TYPES[type_id]
        if type_id == STRING_TYPE:
            return self.string(), name
        if type_id == ARRAY_TYPE:
            return self.array()
        assert fmt is not None
        return self.unpack(fmt), name

    def array(self, depth: int = 0) -> tuple[tuple[MetaValue, ...], str]:
        item_type = self.u32()
        count = self.u64()
        if item_type not in VALUE_TYPES:
            raise self.fail(
                f"corrupt GGUF file: unknown array item type {item_type} in the {self.where}"
            )
        item_name, fmt = VALUE_TYPES[item_type]
        if fmt is not None:  # numbers: one bulk conversion
            item_size = struct.calcsize("<" + fmt)
            self.need(count * item_size)
            start = self.pos
            self.pos += count * item_size
            if not self.arrays:
                return (), f"array[{item_name}]"
            raw = self.buffer[start : self.pos]
            if fmt == "?":
                return tuple(byte != 0 for byte in raw), f"array[{item_name}]"
            values = array(fmt)
            if values.itemsize != item_size:  # platform sizes differ: per-item unpacking
                items = struct.unpack(f"<{count}{fmt}", raw)
                return tuple(items), f"array[{item_name}]"
            values.frombytes(raw)
            if sys.byteorder == "big":
                values.byteswap()
            return tuple(values.tolist()), f"array[{item_name}]"
        if item_type == STRING_TYPE:
            # Each string takes at least its 8-byte length: a count beyond that is a lie.
            self.need(count * 8)
            if not self.arrays:
                self._skip_strings(count)
                return (), "array[string]"
            return tuple(self._strings(count)), "array[string]"
        self.need(count * 12)  # a nested array has at least a type and a count
        if depth >= MAX_ARRAY_DEPTH:
            raise self.fail(
                f"corrupt GGUF file: arrays nested deeper than {MAX_ARRAY_DEPTH}"
                f" in the {self.where}"
            )
        if not self.arrays:
            for _ in range(count):
                self.array(depth + 1)
            return (), "array[array]"
        items_list = [self.array(depth + 1)[0] for _ in range(count)]
        return tuple(items_list), "array[array]"

    def _strings(self, count: int) -> list[str]:
        buffer, pos, size = self.buffer, self.pos, self.size
        unpack_from = struct.Struct("<Q").unpack_from
        out: list[str] = []
        append = out.append
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                self.need(8)
            (length,) = unpack_from(buffer, pos)
            pos += 8
            end = pos + length
            if end > size:
                self.pos = pos
                self.need(length)
            append(buffer[pos:end].decode("utf-8", errors="replace"))
            pos = end
        self.pos = pos
        return out

    def _skip_strings(self, count: int) -> None:
        """Move past `count` strings, checking each one's bounds as `_strings` does."""
        pos, size = self.pos, self.size
        unpack_from = struct.Struct("<Q").unpack_from
        buffer = self.buffer
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                self.need(8)
            (length,) = unpack_from(buffer, pos)
            pos += 8
            if pos + length > size:
                self.pos = pos
                self.need(length)
            pos += length
        self.pos = pos


def open_checked(path: Path) -> tuple[int, int]:
    """Open `path` for reading; returns (fd, size) or raises a clear error."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: model file not found") from None
    except OSError as error:
        raise ModelFileError(f"{path}: cannot read the model file: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ModelFileError(f"{path}: is a directory, not a GGUF model file")
    if not stat.S_ISREG(info.st_mode):
        # A FIFO or device could block or never end; llama.cpp needs a regular file.
        raise ModelFileError(f"{path}: not a regular file, so not a GGUF model file")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as error:
        raise ModelFileError(f"{path}: cannot read the model file: {error.strerror}") from None
    return fd, os.fstat(fd).st_size
