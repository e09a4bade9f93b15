"""A reply's text streamed under phrase bans (`generate`): what a rewind may still take
back is held."""

from __future__ import annotations

from backend.chat.events import RewindEvent, TokenEvent
from backend.session.phrase_bans import PhraseBans, token_at


class HeldBackText:
    """A reply's text streamed under phrase bans: what a rewind may still take back
    is held until it cannot be (plain phrases) or until the end (regular expressions).

    A phrase found later ends in text not out yet, so it begins at most its length
    less one characters before the end; the token holding that character, and those
    after it, are held.

    Args:
        bans: The phrase bans in force.
    """

    def __init__(self, bans: PhraseBans) -> None:
        self._hold = None if bans.regex else max(len(p) for p in bans.phrases) - 1
        self._texts: list[str] = []
        self._shown = 0  # characters given out

    def token(self, event: TokenEvent) -> str:
        """Take a token; returns the text that can no longer be taken back."""
        del self._texts[event.index :]
        self._texts.append(event.text)
        if self._hold is None:
            return ""
        end = sum(len(text) for text in self._texts) - self._hold
        safe = sum(len(text) for text in self._texts[: token_at(self._texts, max(end, 0))])
        if safe <= self._shown:
            return ""
        out = "".join(self._texts)[self._shown : safe]
        self._shown = safe
        return out

    def rewind(self, event: RewindEvent) -> None:
        """The reply went back to token `event.index`."""
        del self._texts[event.index :]

    def rest(self, final_text: str) -> str:
        """What is left to show of the finished reply's text."""
        return final_text[self._shown :]
