"""Show a token's text so that every character of it can be seen.

One convention for the whole app (the TUI, `samplescope encode`, the backend's
debug output):

=========================  ==========================================
in the token               shown as
=========================  ==========================================
space ``" "``              ``␣`` (U+2423 OPEN BOX)
newline ``"\\n"``          ``↵`` (U+21B5)
tab ``"\\t"``              ``→`` (U+2192)
carriage return ``"\\r"``  ``␍`` (U+240D)
other C0 controls, DEL     their Control Pictures glyph (``␀`` … ``␟``, ``␡``)
other invisible chars      ``⟨U+XXXX⟩`` (no-break and other spaces, zero-width
                           joiner, BOM, C1 controls, line/paragraph separators)
U+FFFD                     ``�`` (left as is)
=========================  ==========================================

`visible_bytes` shows raw token bytes the same way, with each byte that is not part
of a complete UTF-8 character (a token holding part of an emoji) as ``⟨0xF0⟩``.

Everything else (letters, digits, punctuation, emoji, CJK) is shown unchanged. The
mapping is per character, so ``visible_piece(a + b) == visible_piece(a) +
visible_piece(b)``.
"""

from __future__ import annotations

import unicodedata

SPACE_GLYPH = "␣"
NEWLINE_GLYPH = "↵"
TAB_GLYPH = "→"
CR_GLYPH = "␍"

_FIXED: dict[str, str] = {
    " ": SPACE_GLYPH,
    "\n": NEWLINE_GLYPH,
    "\t": TAB_GLYPH,
    "\r": CR_GLYPH,
    "\x7f": "␡",
}

# Unicode categories with no visible glyph of their own: controls, format characters
# (zero-width joiner, BOM, bidi marks), separators other than the plain space.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cn", "Cs"})


def _visible_char(char: str) -> str:
    fixed = _FIXED.get(char)
    if fixed is not None:
        return fixed
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (from surrogateescape)
        return f"⟨0x{code - 0xDC00:02X}⟩"
    if code < 0x20:
        return chr(0x2400 + code)  # Control Pictures block: ␀ for NUL, ␁ for SOH, ...
    if char == "\ufffd" or unicodedata.category(char) not in _INVISIBLE_CATEGORIES:
        return char
    return f"⟨U+{code:04X}⟩"


def visible_piece(text: str) -> str:
    """The text of a token with its whitespace and invisible characters made visible.

    Args:
        text: A token's text (or any string).

    Returns:
        `text` with a space as ``␣``, a newline as ``↵``, a tab as ``→``, a carriage
        return as ``␍``, other control characters as their Control Pictures glyph and
        other invisible characters as ``⟨U+XXXX⟩``; see the module docstring.
        An empty string stays empty.

    Examples:
        >>> visible_piece(" the")
        '␣the'
        >>> visible_piece("\\n\\tx")
        '↵→x'
    """
    if text.isascii() and text.isprintable() and " " not in text:
        return text  # the common case: nothing to replace
    return "".join(_visible_char(char) for char in text)


def visible_bytes(data: bytes) -> str:
    """Raw token bytes made visible, like `visible_piece`.

    Args:
        data: A token's bytes (possibly part of a multi-byte character).

    Returns:
        The bytes decoded as UTF-8 and made visible; every byte that is not part of a
        complete UTF-8 character is shown as ``⟨0xNN⟩``.

    Examples:
        >>> visible_bytes(" 👋".encode()[:3])
        '␣⟨0xF0⟩⟨0x9F⟩'
    """
    return "".join(_visible_char(char) for char in data.decode("utf-8", errors="surrogateescape"))
