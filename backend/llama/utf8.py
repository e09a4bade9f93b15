"""Turn a stream of token bytes into text without ever splitting a character.

A token is a run of bytes, not of characters: an emoji or a CJK character can be cut
between two tokens. Decoding each token on its own would show U+FFFD for both halves;
this decoder holds an incomplete sequence back until the next token completes it.
"""

from __future__ import annotations

import codecs


class Utf8Stream:
    """An incremental UTF-8 decoder for token bytes.

    Incomplete trailing sequences are held back until the bytes that complete them
    arrive. Bytes that can never be valid UTF-8 (a model can emit them: byte-fallback
    tokens in a nonsensical order) become U+FFFD instead of raising, so a generation
    never fails on its own output; `invalid_bytes` counts how often that happened.
    """

    def __init__(self) -> None:
        self._strict = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self.invalid_bytes = 0

    def feed(self, data: bytes) -> str:
        """Add a token's bytes; return the text they complete (possibly "")."""
        try:
            return self._strict.decode(data)
        except UnicodeDecodeError:
            return self._recover(data)

    def flush(self) -> str:
        """End of stream: return what is left (U+FFFD for a dangling partial character)."""
        pending, _ = self._strict.getstate()
        self._strict.reset()
        if not pending:
            return ""
        self.invalid_bytes += len(pending)
        return pending.decode("utf-8", errors="replace")

    @property
    def pending(self) -> bytes:
        """The bytes held back, waiting for the rest of their character."""
        buffered, _ = self._strict.getstate()
        return bytes(buffered)

    def reset(self) -> None:
        """Forget any held-back bytes (a new generation)."""
        self._strict.reset()
        self.invalid_bytes = 0

    def _recover(self, data: bytes) -> str:
        # The strict decoder raised and its state is undefined: decode what it held plus
        # the new bytes with a "replace" decoder, which still holds back a trailing
        # incomplete sequence, then hand that tail back to a fresh strict decoder.
        # (The strict decoder raises before consuming anything, so its buffer is intact.)
        pending, _ = self._strict.getstate()
        self._strict.reset()
        lenient = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = lenient.decode(bytes(pending) + data)
        tail, _ = lenient.getstate()
        self.invalid_bytes += text.count("\ufffd")
        if tail:
            self._strict.decode(bytes(tail))
        return text
