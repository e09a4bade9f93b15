"""Text made ready to show: model text literal with controls inert, stored times local."""

from __future__ import annotations

import re
from datetime import datetime

# C0 controls except tab and newline, DEL, and C1 controls: shown as Control Pictures
# (or U+2426 for the C1 range) so an escape sequence can never reach the terminal.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return "\u2426"


def display_text(text: str) -> str:
    """`text` with every control character except newline and tab made visible.

    Args:
        text: Model or user text.

    Returns:
        The same text where ESC, CR and the other controls are replaced by their
        Control Pictures glyph (ESC becomes U+241B), so escape codes stay inert.
    """
    if text.isprintable():
        return text
    return _CONTROL.sub(_picture, text)


def local_time(moment: datetime) -> str:
    """A stored (UTC) time in the local time zone, to the minute."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")
