"""A pure-Python GGUF reader and validator (no llama.cpp involved).

`read_gguf` parses a GGUF file's header, metadata and tensor table without reading
tensor data (the file is memory-mapped; only the first pages are touched), and
`validate_gguf` also checks that every tensor's data lies inside the file, so that a
truncated or corrupt file is a clear `ModelFileError` before llama.cpp reads it.

The format (little-endian; versions 2 and 3): the magic ``GGUF``, a uint32 version,
uint64 tensor and metadata counts, the metadata key/value pairs, the tensor table
(name, dimensions, ggml type, offset relative to the data section), padding to
`general.alignment` (default 32), then the tensor data.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from backend.errors import ModelFileError
from backend.llama.gguf_reader import MetaValue as MetaValue  # re-exported: part of GgufFile
from backend.llama.gguf_reader import ValueReader, open_checked

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
GGML_MAX_DIMS = 4

#: ggml type id -> (name, elements per block, bytes per block), as reported by
#: libggml's `ggml_type_name`, `ggml_blck_size` and `ggml_type_size` (the tests compare
#: this table with the library shipped in llama-cpp-python). Ids 4, 5, 31-33 and 36-38
#: are types ggml has removed.
GGML_TYPES: Mapping[int, tuple[str, int, int]] = MappingProxyType(
    {
        0: ("F32", 1, 4),
        1: ("F16", 1, 2),
        2: ("Q4_0", 32, 18),
        3: ("Q4_1", 32, 20),
        6: ("Q5_0", 32, 22),
        7: ("Q5_1", 32, 24),
        8: ("Q8_0", 32, 34),
        9: ("Q8_1", 32, 36),
        10: ("Q2_K", 256, 84),
        11: ("Q3_K", 256, 110),
        12: ("Q4_K", 256, 144),
        13: ("Q5_K", 256, 176),
        14: ("Q6_K", 256, 210),
        15: ("Q8_K", 256, 292),
        16: ("IQ2_XXS", 256, 66),
        17: ("IQ2_XS", 256, 74),
        18: ("IQ3_XXS", 256, 98),
        19: ("IQ1_S", 256, 50),
        20: ("IQ4_NL", 32, 18),
        21: ("IQ3_S", 256, 110),
        22: ("IQ2_S", 256, 82),
        23: ("IQ4_XS", 256, 136),
        24: ("I8", 1, 1),
        25: ("I16", 1, 2),
        26: ("I32", 1, 4),
        27: ("I64", 1, 8),
        28: ("F64", 1, 8),
        29: ("IQ1_M", 256, 56),
        30: ("BF16", 1, 2),
        34: ("TQ1_0", 256, 54),
        35: ("TQ2_0", 256, 66),
        39: ("MXFP4", 32, 17),
        40: ("NVFP4", 64, 36),
        41: ("Q1_0", 128, 18),
        42: ("Q2_0", 64, 18),
    }
)


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One entry of the tensor table.

    Attributes:
        name: The tensor's name, e.g. ``blk.0.attn_q.weight``.
        shape: Dimensions as stored (fastest-varying first, like ggml's ``ne``).
        type_name: The ggml type, e.g. ``Q4_1``.
        offset: Start of its data, relative to `GgufFile.data_offset`.
        nbytes: Size of its data in bytes.
    """

    name: str
    shape: tuple[int, ...]
    type_name: str
    offset: int
    nbytes: int

    @property
    def n_elements(self) -> int:
        """The number of values in the tensor."""
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True, slots=True)
class GgufFile:
    """What a GGUF file holds besides the tensor data.

    Attributes:
        path: The file.
        version: The GGUF version (2 or 3).
        metadata: Key -> value; arrays are tuples (tokens, merges, scores, ...).
        metadata_types: Key -> value type, e.g. ``uint32`` or ``array[string]``.
        tensors: The tensor table, in file order.
        data_offset: Absolute offset of the tensor data section.
        alignment: Alignment of tensor data (``general.alignment``, default 32).
        file_size: Size of the file in bytes.
    """

    path: Path
    version: int
    metadata: Mapping[str, MetaValue]
    metadata_types: Mapping[str, str]
    tensors: tuple[TensorInfo, ...]
    data_offset: int
    alignment: int
    file_size: int

    @property
    def architecture(self) -> str:
        """``general.architecture`` (empty if missing)."""
        value = self.metadata.get("general.architecture", "")
        return value if isinstance(value, str) else ""

    def arch_value(self, suffix: str) -> MetaValue | None:
        """The architecture-specific value ``<arch>.<suffix>``, e.g. ``context_length``."""
        return self.metadata.get(f"{self.architecture}.{suffix}")

    @property
    def tensor_data_end(self) -> int:
        """The absolute offset just past the last tensor's data."""
        ends = [self.data_offset + t.offset + t.nbytes for t in self.tensors]
        return max(ends, default=self.data_offset)


def read_gguf(path: str | os.PathLike[str], *, arrays: bool = True) -> GgufFile:
    """Parse a GGUF file's header, metadata and tensor table.

    Tensor data is not read. Tensor offsets are not checked against the file size
    (see `validate_gguf`).

    Args:
        path: The GGUF file.
        arrays: Read array values (the vocabulary, merges, scores ...); False: every
            array is checked as thoroughly but its value is an empty tuple.

    Returns:
        The parsed file.

    Raises:
        ModelFileError: The file is missing, a directory, unreadable, not GGUF, of an
            unsupported version, truncated before the end of its tensor table, or has
            a tensor of an unknown ggml type or a malformed shape.
    """
    file_path = Path(path)
    fd, size = open_checked(file_path)
    try:
        if size == 0:
            raise ModelFileError(f"{file_path}: not a GGUF model file (the file is empty)")
        # Mapping touches only the pages the header is read from, not the tensor data.
        buffer = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        try:
            return _parse(ValueReader(buffer, file_path, size, arrays=arrays))
        finally:
            buffer.close()
    except (OSError, ValueError) as error:
        raise ModelFileError(f"{file_path}: cannot read the model file: {error}") from None
    finally:
        os.close(fd)


def _parse(reader: ValueReader) -> GgufFile:
    path, size = reader.path, reader.size
    magic = bytes(reader.buffer[:4])
    if magic != GGUF_MAGIC:
        raise reader.fail(
            "not a GGUF model file (a GGUF file starts with the bytes GGUF, this one does not)"
        )
    reader.pos = 4
    version = reader.u32()
    if version not in SUPPORTED_VERSIONS:
        if version > 0xFFFF and int.from_bytes(version.to_bytes(4, "little"), "big") in (2, 3):
            raise reader.fail("big-endian GGUF files are not supported")
        raise reader.fail(
            f"unsupported GGUF version {version} (supported: "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))})"
        )
    n_tensors = reader.u64()
    n_kv = reader.u64()
    # Each entry takes more than a byte: larger counts are garbage, not truncation.
    if n_tensors > size or n_kv > size:
        raise reader.fail(
            f"truncated or corrupt GGUF header: it claims {n_tensors} tensors and {n_kv} metadata "
            f"entries, more than a {size}-byte file can hold"
        )

    metadata: dict[str, MetaValue] = {}
    types: dict[str, str] = {}
    for index in range(n_kv):
        reader.where = f"metadata (entry {index + 1} of {n_kv})"
        key = reader.string()
        reader.where = f"metadata value of {key!r}"
        type_id = reader.u32()
        value, type_name = reader.value(type_id)
        metadata[key] = value
        types[key] = type_name

    alignment_value = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment_value, int)
        or isinstance(alignment_value, bool)
        or alignment_value <= 0
        or alignment_value & (alignment_value - 1)
    ):
        raise reader.fail(
            f"corrupt GGUF metadata: general.alignment={alignment_value!r} is not a power of two"
        )
    alignment = alignment_value

    tensors: list[TensorInfo] = []
    names: set[str] = set()
    for index in range(n_tensors):
        reader.where = f"tensor table (tensor {index + 1} of {n_tensors})"
        name = reader.string()
        reader.where = f"tensor table entry of {name!r}"
        if name in names:
            raise reader.fail(f"corrupt GGUF file: tensor {name!r} appears twice")
        names.add(name)
        n_dims = reader.u32()
        if not 1 <= n_dims <= GGML_MAX_DIMS:
            raise reader.fail(
                f"corrupt GGUF file: tensor {name!r} has {n_dims} dimensions "
                f"(ggml allows 1 to {GGML_MAX_DIMS})"
            )
        shape = tuple(reader.u64() for _ in range(n_dims))
        type_id = reader.u32()
        offset = reader.u64()
        tensors.append(_tensor_info(reader, name, shape, type_id, offset))

    reader.where = "tensor table"
    data_offset = -(-reader.pos // alignment) * alignment
    return GgufFile(
        path=path,
        version=version,
        metadata=MappingProxyType(metadata),
        metadata_types=MappingProxyType(types),
        tensors=tuple(tensors),
        data_offset=data_offset,
        alignment=alignment,
        file_size=size,
    )


def _tensor_info(
    reader: ValueReader, name: str, shape: tuple[int, ...], type_id: int, offset: int
) -> TensorInfo:
    known = GGML_TYPES.get(type_id)
    if known is None:
        raise reader.fail(
            f"tensor {name!r} has ggml type {type_id}, which this version of samplescope "
            "does not know (the file may need a newer llama.cpp, or be corrupt)"
        )
    type_name, block_size, type_size = known
    n_elements = 1
    for dim in shape:
        n_elements *= dim
    if n_elements >= 2**63:
        raise reader.fail(f"corrupt GGUF file: tensor {name!r} has an impossible shape {shape}")
    if shape[0] % block_size:
        raise reader.fail(
            f"corrupt GGUF file: tensor {name!r} of type {type_name} has a first dimension "
            f"of {shape[0]}, not a multiple of its block size {block_size}"
        )
    return TensorInfo(name, shape, type_name, offset, n_elements // block_size * type_size)


def validate_gguf(path: str | os.PathLike[str], *, arrays: bool = True) -> GgufFile:
    """Parse a GGUF file and check that llama.cpp can safely read it.

    Besides what `read_gguf` checks: every tensor's data starts at an aligned offset
    and ends inside the file, and the file has at least one tensor.

    Args:
        path: The GGUF file.
        arrays: Read array values (see `read_gguf`); False for a check alone: a
            vocabulary's strings are then never made (11 MB at once for SmolLM2's,
            3.4 MB of it kept by the allocator afterwards).

    Returns:
        The parsed file.

    Raises:
        ModelFileError: A message naming the file and the problem.
    """
    gguf = read_gguf(path, arrays=arrays)
    if not gguf.tensors:
        raise ModelFileError(f"{gguf.path}: the GGUF file has no tensors (not a model)")
    if gguf.data_offset > gguf.file_size:
        raise ModelFileError(
            f"{gguf.path}: truncated GGUF file: the tensor data should start at offset "
            f"{gguf.data_offset}, but the file has only {gguf.file_size} bytes"
        )
    for tensor in gguf.tensors:
        if tensor.offset % gguf.alignment:
            raise ModelFileError(
                f"{gguf.path}: corrupt GGUF file: tensor {tensor.name!r} starts at data offset "
                f"{tensor.offset}, not a multiple of the alignment {gguf.alignment}"
            )
        end = gguf.data_offset + tensor.offset + tensor.nbytes
        if end > gguf.file_size:
            raise ModelFileError(
                f"{gguf.path}: truncated or corrupt GGUF file: the data of tensor "
                f"{tensor.name!r} ({tensor.type_name}, {tensor.nbytes} bytes) ends at offset "
                f"{end}, beyond the end of the file ({gguf.file_size} bytes)"
            )
    return gguf
