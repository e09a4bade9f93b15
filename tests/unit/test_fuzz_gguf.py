"""Fuzzing the GGUF reader beyond test_gguf_reader.py's broken files: any metadata tree
reads back as written, any edit or cut of a valid file is a value or one line, and a
hostile file never stops model listing.

`validate_gguf` returns the file or raises `ModelFileError` naming it; `describe`
(what `models` lists) never raises; the app's tokenizer is built or refused in one
`ModelFileError`. Examples per run come from the hypothesis profile
(tests/conftest.py): four properties of 100 examples each.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config.model_catalog import describe
from backend.errors import ModelFileError
from backend.llama.gguf import GgufFile, read_gguf, validate_gguf
from backend.llama.gguf_reader import MAX_ARRAY_DEPTH, MetaValue
from backend.llama.ui_tokenizer import UiTokenizer
from tests.gguf_factory import Tensor, gguf_bytes, gguf_string

HEALTH = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

F32, Q8_0 = 0, 8
ARRAY = 9
FORMATS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
RANGES = {
    0: (0, 2**8 - 1), 1: (-(2**7), 2**7 - 1), 2: (0, 2**16 - 1), 3: (-(2**15), 2**15 - 1),
    4: (0, 2**32 - 1), 5: (-(2**31), 2**31 - 1), 10: (0, 2**64 - 1), 11: (-(2**63), 2**63 - 1),
}  # fmt: skip


@st.composite
def typed_values(draw: st.DrawFn, depth: int = 0) -> tuple[int, MetaValue, bytes]:
    """(type id, value as the reader gives it, payload) of any metadata type."""
    type_id = draw(st.sampled_from([*FORMATS, 8, ARRAY] if depth < 3 else [*FORMATS, 8]))
    if type_id == 8:
        text = draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
        return type_id, text, gguf_string(text)
    if type_id == ARRAY:
        item_type = draw(st.sampled_from([*FORMATS, 8, ARRAY]))
        items = draw(st.lists(typed_of(item_type, depth + 1), max_size=4))
        payload = struct.pack("<IQ", item_type, len(items)) + b"".join(p for _, p in items)
        return type_id, tuple(value for value, _ in items), payload
    value, payload = draw(typed_of(type_id, depth))
    return type_id, value, payload


@st.composite
def typed_of(draw: st.DrawFn, type_id: int, depth: int) -> tuple[MetaValue, bytes]:
    """(value, payload) of one type; an array's items carry no type id of their own."""
    if type_id == 8:
        text = draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
        return text, gguf_string(text)
    if type_id == ARRAY:
        if depth >= 3:
            return (), struct.pack("<IQ", 4, 0)
        _, value, payload = draw(typed_values(depth).filter(lambda drawn: drawn[0] == ARRAY))
        return value, payload
    fmt = FORMATS[type_id]
    if type_id == 7:
        flag = draw(st.booleans())
        return flag, struct.pack("<?", flag)
    if type_id in (6, 12):
        number = draw(st.floats(allow_nan=False, width=32 if type_id == 6 else 64))
        return number, struct.pack("<" + fmt, number)
    low, high = RANGES[type_id]
    integer = draw(st.integers(low, high))
    return integer, struct.pack("<" + fmt, integer)


def file_of(
    metadata: list[tuple[str, int, bytes]], tensors: bytes = b"", n_tensors: int = 0
) -> bytes:
    out = bytearray(b"GGUF") + struct.pack("<IQQ", 3, n_tensors, len(metadata))
    for key, type_id, payload in metadata:
        out += gguf_string(key) + struct.pack("<I", type_id) + payload
    out += tensors
    return bytes(out + b"\0" * (-len(out) % 32))


def work_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="samplescope-fuzz-gguf-"))


@pytest.fixture(scope="module")
def work() -> Path:
    return work_dir()


def checked(path: Path) -> GgufFile | None:
    """The file validated, or None after checking its one error line; `describe` (which
    reads the header only) never raises and says why a header cannot be read."""
    listed = describe("m", path, "folder")
    try:
        read_gguf(path)
    except ModelFileError as error:
        assert listed.problem == str(error)
    else:
        assert not listed.problem, listed.problem
    try:
        gguf = validate_gguf(path)
    except ModelFileError as error:
        message = str(error)
        assert message.startswith(f"{path}: ") and "\n" not in message, message
        return None
    return gguf


keys = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["general.architecture", "general.alignment", "general.file_type",
                     "llama.context_length", "tokenizer.ggml.model", "\x00", "a\nb"]),
)  # fmt: skip


@HEALTH
@given(st.dictionaries(keys, typed_values(), max_size=6))
def test_any_metadata_tree_reads_back_as_written(
    work: Path, entries: dict[str, tuple[int, MetaValue, bytes]]
) -> None:
    path = work / "meta.gguf"
    path.write_bytes(
        file_of([(key, type_id, payload) for key, (type_id, _, payload) in entries.items()])
    )
    try:
        gguf = read_gguf(path)
    except ModelFileError as error:
        assert "general.alignment" in str(error) and "\n" not in str(error)
        return
    assert dict(gguf.metadata) == {key: value for key, (_, value, _) in entries.items()}
    checked(path)


def rich_file() -> bytes:
    metadata: dict[str, object] = {
        "general.architecture": "llama",
        "llama.context_length": 64,
        "tokenizer.ggml.tokens": ["a", "b", "\x00"],
        "general.ids": [1, 2, 3],
        "general.name": "tiny",
    }
    tensors = [Tensor("a", (4, 2), F32, 0), Tensor("b", (32,), Q8_0, 32)]
    return gguf_bytes(metadata, tensors, 32 + 34)


RICH = rich_file()


@HEALTH
@given(
    st.lists(st.tuples(st.integers(0, len(RICH) - 1), st.integers(0, 255)), max_size=6),
    st.integers(0, len(RICH)),
)
def test_any_edit_or_cut_of_a_valid_file_is_a_file_or_one_line(
    work: Path, edits: list[tuple[int, int]], length: int
) -> None:
    data = bytearray(RICH)
    for position, byte in edits:
        data[position] = byte
    path = work / "edited.gguf"
    path.write_bytes(bytes(data[:length]))
    checked(path)


@HEALTH
@given(st.binary(max_size=64), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_a_header_with_any_counts_and_any_tail_is_one_line(
    work: Path, tail: bytes, n_tensors: int, n_kv: int
) -> None:
    path = work / "counts.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + tail)
    checked(path)


@HEALTH
@given(
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=4), max_size=8),
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=6),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8),
    st.sampled_from(["gpt2", "llama", "", "\x00"]),
    st.text(max_size=8),
)
def test_the_apps_tokenizer_is_built_or_refused_in_one_line(
    work: Path, tokens: list[str], merges: list[str], types: list[int], model: str, pre: str
) -> None:
    metadata: list[tuple[str, int, bytes]] = [
        ("tokenizer.ggml.model", 8, gguf_string(model)),
        ("tokenizer.ggml.pre", 8, gguf_string(pre)),
        ("tokenizer.ggml.tokens", ARRAY,
         struct.pack("<IQ", 8, len(tokens)) + b"".join(gguf_string(t) for t in tokens)),
        ("tokenizer.ggml.merges", ARRAY,
         struct.pack("<IQ", 8, len(merges)) + b"".join(gguf_string(m) for m in merges)),
        ("tokenizer.ggml.token_type", ARRAY,
         struct.pack(f"<IQ{len(types)}i", 5, len(types), *types)),
    ]  # fmt: skip
    path = work / "vocab.gguf"
    path.write_bytes(file_of(metadata))
    gguf = read_gguf(path)
    try:
        tokenizer = UiTokenizer.from_gguf(gguf)
    except ModelFileError as error:
        assert "\n" not in str(error)
        return
    ids = tokenizer.encode("ab\x00 é")
    assert all(0 <= token < tokenizer.vocab_size for token in ids)


DEPTH = 100_000
ONE_STRING = struct.pack("<IQ", 8, 1) + gguf_string("x")


def nested_arrays(depth: int) -> bytes:
    return struct.pack("<IQ", ARRAY, 1) * depth + struct.pack("<IQ", 4, 0)


@pytest.mark.parametrize(
    ("name", "metadata"),
    [
        ("deep", [("x", ARRAY, nested_arrays(DEPTH))]),
        ("at-limit", [("x", ARRAY, nested_arrays(MAX_ARRAY_DEPTH))]),
        ("huge-string", [("x", 8, struct.pack("<Q", 2**63) + b"abc")]),
        ("huge-key", [("", 8, b"")]),
        ("huge-array", [("x", ARRAY, struct.pack("<IQ", 12, 2**61))]),
        ("huge-string-array", [("x", ARRAY, struct.pack("<IQ", 8, 2**60))]),
        ("non-utf8", [("\udcff", 8, struct.pack("<Q", 2) + b"\xff\xfe")]),
        ("arch-array", [("general.architecture", ARRAY, ONE_STRING)]),
        ("alignment-bool", [("general.alignment", 7, b"\x01")]),
        ("alignment-huge", [("general.alignment", 10, struct.pack("<Q", 2**63))]),
        ("file-type-string", [("general.file_type", 8, gguf_string("Q4_0"))]),
    ],
)  # fmt: skip
def test_hostile_metadata_is_a_file_or_one_line(
    tmp_path: Path, name: str, metadata: list[tuple[str, int, bytes]]
) -> None:
    path = tmp_path / f"{name}.gguf"
    raw = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata)))
    for key, type_id, payload in metadata:
        encoded = key.encode("utf-8", "surrogateescape")
        raw += struct.pack("<Q", len(encoded)) + encoded + struct.pack("<I", type_id) + payload
    if name == "huge-key":
        raw = bytearray(b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 2**64 - 1))
    path.write_bytes(bytes(raw))
    checked(path)
