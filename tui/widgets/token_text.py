"""Token → visible text, for every view of the TUI.

Two questions, answered here and nowhere else:

- `token_text`: what a sampled token adds to a reply on screen (the chat's replies
  and the compare columns);
- `TokenPieces`: how any token id reads in a candidate list (the probability panel).

Both show model text literally: control characters are made inert (`display_text`),
and a token's own piece is `backend.llama.pieces.visible_piece` form (``␣``, ``↵``,
``⟨0xF0⟩``), which the backend puts in every `TokenEvent`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from backend.chat.events import TokenEvent
from backend.llama.pieces import visible_piece
from backend.session.backend import SessionBackend
from tui.display import display_text

EMPTY_PIECE = "∅"
"""What a marked token with no bytes at all shows."""


def token_text(event: TokenEvent, *, marked: bool = False) -> str:
    """The text a sampled token adds to a reply, ready to draw.

    Args:
        event: The token.
        marked: Whether the view points at it (token cursor, divergence). A marked
            token that would draw as nothing but whitespace (a space, a newline, half
            of a multi-byte character) shows its visible piece instead, so that the
            mark can be seen; a newline in it still ends the line.

    Returns:
        The token's text with control characters made inert (never markup).
    """
    text = display_text(event.text)
    if marked and not text.strip():
        return (event.piece or EMPTY_PIECE) + ("\n" if "\n" in event.text else "")
    return text


@runtime_checkable
class TokenPieceSource(Protocol):
    """A backend that can show any token id itself (the fake backend of the tests)."""

    def token_piece(self, token_id: int) -> str:
        """The visible piece of `token_id`."""
        ...


@runtime_checkable
class TextEncoderSource(Protocol):
    """A backend that can turn text into its token ids itself (the fake backend)."""

    def encode_text(self, text: str) -> list[int]:
        """The token ids of `text` (no BOS, special tokens not recognized)."""
        ...


@runtime_checkable
class TokenBytesSource(Protocol):
    """A backend that can give any token's bytes itself (the fake backend)."""

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes `token_id` adds to a text."""
        ...


TextEncoder = Callable[[str], list[int]]
"""Text → the model's token ids, safe to call on the UI thread."""

TokenBytes = Callable[[int], bytes]
"""Token id → its bytes, safe to call on the UI thread (a saved reply's text per token)."""


def ui_vocabulary(
    backend: SessionBackend,
) -> tuple[Callable[[int], str] | None, TextEncoder | None, TokenBytes | None]:
    """Token id → visible piece, text → token ids, token id → bytes, for the UI thread.

    A GGUF model gets a UI-side tokenizer (safe to use while the model thread
    generates). Call it on a worker thread: building the tokenizer takes a fraction
    of a second.

    Returns:
        (pieces, encode, token_bytes); each is None when the model's vocabulary
        cannot be read (then only the pieces of sampled tokens are known, text cannot
        be turned into token ids, and a saved reply is shown as plain text).
    """
    pieces = backend.token_piece if isinstance(backend, TokenPieceSource) else None
    encode = backend.encode_text if isinstance(backend, TextEncoderSource) else None
    data = backend.token_bytes if isinstance(backend, TokenBytesSource) else None
    if pieces is not None and encode is not None and data is not None:
        return pieces, encode, data
    path = Path(backend.info.path)
    if not path.is_file():
        return pieces, encode, data
    from backend.llama.ui_tokenizer import UiTokenizer

    try:
        tokenizer = UiTokenizer.from_gguf(path)
    except Exception:  # pieces are decoration: the panel falls back to ids
        return pieces, encode, data
    if pieces is None:
        pieces = lambda token_id: visible_piece(tokenizer.piece(token_id))  # noqa: E731
    if encode is None:
        encode = lambda text: tokenizer.encode(text, special=False)  # noqa: E731
    return pieces, encode, data or tokenizer.piece_bytes


class TokenPieces:
    """The visible piece of any token id, for the candidate lists.

    A sampled token's piece is learnt from its event (exact: the backend's own
    bytes); any other id is looked up in the model's vocabulary once and kept;
    ``#id`` when neither knows it.

    Args:
        lookup: Gives the piece of any id (see `ui_vocabulary`), or None.
    """

    def __init__(self, lookup: Callable[[int], str] | None = None) -> None:
        self.lookup = lookup
        self.token_bytes: TokenBytes | None = None
        """Any token's bytes (rebuilds a saved reply's tokens), or None."""
        self._known: dict[int, str] = {}

    def forget(self) -> None:
        """Another model is loaded: the pieces learnt are of the one before."""
        self._known.clear()

    def learn(self, event: TokenEvent) -> None:
        """Remember the piece of a sampled token."""
        self._known[event.step.token_id] = event.piece

    def __call__(self, token_id: int) -> str:
        """The visible piece of `token_id`."""
        known = self._known.get(token_id)
        if known is not None:
            return known
        if self.lookup is None:
            return f"#{token_id}"
        try:
            text = self.lookup(token_id)
        except Exception:  # a piece is decoration: never fail the panel over it
            text = f"#{token_id}"
        self._known[token_id] = text
        return text
