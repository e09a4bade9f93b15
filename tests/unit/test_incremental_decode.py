"""The incremental UTF-8 decoder: characters split across tokens come out whole."""

from __future__ import annotations

import pytest

from backend.llama.utf8 import Utf8Stream

SAMPLES = [
    "😀",  # 4-byte emoji
    "👨‍👩‍👧‍👦",  # ZWJ family: 7 code points, 25 bytes
    "漢字かな",  # CJK, 3 bytes each
    "a😀b漢c",
    "é ñ ü",
]


def _decode_chunks(chunks: list[bytes]) -> tuple[list[str], Utf8Stream]:
    stream = Utf8Stream()
    out = [stream.feed(chunk) for chunk in chunks]
    out.append(stream.flush())
    return out, stream


@pytest.mark.parametrize("text", SAMPLES)
def test_every_single_split_point_gives_the_text_back_whole(text: str) -> None:
    data = text.encode("utf-8")
    for cut in range(len(data) + 1):
        out, stream = _decode_chunks([data[:cut], data[cut:]])
        assert "".join(out) == text
        assert "\ufffd" not in "".join(out)
        assert stream.invalid_bytes == 0


@pytest.mark.parametrize("text", SAMPLES)
def test_byte_by_byte_never_emits_a_partial_character(text: str) -> None:
    data = text.encode("utf-8")
    out, _ = _decode_chunks([data[i : i + 1] for i in range(len(data))])
    assert "".join(out) == text
    # Each emitted piece is whole characters: it re-encodes to a prefix-aligned run.
    assert all("\ufffd" not in piece for piece in out)


def test_every_pair_of_split_points_in_the_family_emoji() -> None:
    text = "x👨‍👩‍👧y"
    data = text.encode("utf-8")
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            out, _ = _decode_chunks([data[:i], data[i:j], data[j:]])
            assert "".join(out) == text


def test_text_is_released_as_soon_as_the_character_completes() -> None:
    stream = Utf8Stream()
    data = "漢".encode()
    assert stream.feed(data[:2]) == ""
    assert stream.pending == data[:2]
    assert stream.feed(data[2:] + b"!") == "漢!"
    assert stream.pending == b""


def test_invalid_bytes_become_replacement_characters_without_raising() -> None:
    stream = Utf8Stream()
    assert stream.feed(b"ok\xff") == "ok\ufffd"
    # The stream keeps working, and a split character after the bad byte still joins.
    euro = "€".encode()
    assert stream.feed(b"\xfe" + euro[:1]) == "\ufffd"
    assert stream.feed(euro[1:]) == "€"
    assert stream.invalid_bytes == 2


def test_a_dangling_partial_character_is_flushed_as_one_replacement() -> None:
    stream = Utf8Stream()
    assert stream.feed("😀".encode()[:3]) == ""
    assert stream.flush() == "\ufffd"
    assert stream.invalid_bytes == 3
