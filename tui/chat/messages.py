"""Messages the app's workers post to the UI thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.message import Message

from backend.chat.protocol import ChatBackend
from backend.llama.pieces import visible_piece


class GenerationUpdate(Message):
    """The worker put an event other than a token in the app's inbox: handle it now.

    Attributes:
        generation: The id of the generation it belongs to.
    """

    def __init__(self, generation: int) -> None:
        super().__init__()
        self.generation = generation


class BackendReady(Message):
    """The model finished loading; `pieces` shows any token id (None: ids only)."""

    def __init__(self, backend: ChatBackend, pieces: Callable[[int], str] | None) -> None:
        super().__init__()
        self.backend = backend
        self.pieces = pieces


class BackendFailed(Message):
    """The model could not be loaded; `error` is the user-facing message."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


def piece_lookup(backend: ChatBackend) -> Callable[[int], str] | None:
    """A function giving the visible text of any token id of `backend`'s model.

    The fake backend has its own; a GGUF model gets a UI-side tokenizer (safe to use
    while the model thread generates). Called on a worker thread: building the
    tokenizer takes a fraction of a second.
    """
    own = getattr(backend, "token_piece", None)
    if callable(own):
        return lambda token_id: str(own(token_id))
    path = Path(backend.info.path)
    if not path.is_file():
        return None
    from backend.llama.ui_tokenizer import UiTokenizer

    try:
        tokenizer = UiTokenizer.from_gguf(path)
    except Exception:  # pieces are decoration; the panel falls back to ids
        return None
    return lambda token_id: visible_piece(tokenizer.piece(token_id))
