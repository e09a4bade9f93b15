"""Visible token pieces: every character of a token can be seen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backend.llama.pieces import visible_bytes, visible_piece


def test_whitespace_glyphs() -> None:
    assert visible_piece(" the") == "␣the"
    assert visible_piece("\n\n") == "↵↵"
    assert visible_piece("\tx\r") == "→x␍"
    assert visible_piece("") == ""


def test_controls_and_invisibles() -> None:
    assert visible_piece("\x00\x1b\x7f") == "␀␛␡"
    assert visible_piece("a\u00a0b") == "a⟨U+00A0⟩b"
    assert visible_piece("\u200d") == "⟨U+200D⟩"
    assert visible_piece("\ufeff\u2028") == "⟨U+FEFF⟩⟨U+2028⟩"


def test_visible_text_unchanged() -> None:
    for text in ("hello", "中文", "🙂", "é", "<|im_end|>", "x²", "\ufffd"):
        assert visible_piece(text) == text


def test_bytes() -> None:
    wave = " 👋".encode()
    assert visible_bytes(wave) == "␣👋"
    assert visible_bytes(wave[:3]) == "␣⟨0xF0⟩⟨0x9F⟩"
    assert visible_bytes(b"\xff\n") == "⟨0xFF⟩↵"


@given(st.text())
def test_no_invisible_output(text: str) -> None:
    shown = visible_piece(text)
    assert not any(char in shown for char in " \n\t\r\x00\u200d\u00a0")
    assert visible_piece(text[:3]) + visible_piece(text[3:]) == shown  # per character


@given(st.binary())
def test_bytes_never_raise(data: bytes) -> None:
    shown = visible_bytes(data)
    assert "\n" not in shown and " " not in shown
