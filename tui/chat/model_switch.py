"""Opening another model while the app runs (the model picker): the chat goes on.

The new model loads on a thread worker while the old one stays loaded, so that a
failure leaves the app as it was; once the new one is loaded the old one is freed
(after the generation stopped for the switch has let go of it) and `BackendReady`
makes the new one the chat's. The conversation is kept: the next reply prefills it
on the new model, and is saved as a new chat of that model. Token ids are each
model's own: the replies made before cannot be steered by the new one (see
`Conversation.made_elsewhere`), and a logit bias is carried over by its tokens' text
(`carried_bias`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.message import Message

from backend.session.backend import SessionBackend
from backend.store.store import ChatStore
from sampling.setting_text import BiasPairs
from tui.chat.loading import load_backend
from tui.chat.runner import GenerationRunner
from tui.widgets.token_text import TextEncoder, TokenBytes

OpenModel = Callable[[Path], SessionBackend]
"""Loads a model file with the app's options (threads, context...); worker thread."""


class ModelSwitchFailed(Message):
    """The model picked could not be loaded; the one before stays.

    Attributes:
        error: The user-facing message.
        previous: The model still loaded (None: there was none).
    """

    def __init__(self, error: str, previous: SessionBackend | None) -> None:
        super().__init__()
        self.error = error
        self.previous = previous


class PreviousModelKept(Message):
    """The model before could not be freed (a job did not let go of it in time).

    Attributes:
        name: Its name.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


def switch_model(
    open_model: OpenModel,
    path: Path,
    previous: SessionBackend | None,
    runner: GenerationRunner,
    store: ChatStore | None,
    post: Callable[[Message], object],
) -> None:
    """Load `path`, free `previous`, post `BackendReady`; or post `ModelSwitchFailed`
    (worker thread)."""

    def load() -> SessionBackend:
        backend = open_model(path)
        if previous is not None and not runner.close_after_use(previous):
            post(PreviousModelKept(previous.info.name))
        return backend

    load_backend(load, store, post, failed=lambda error: ModelSwitchFailed(error, previous))


def carried_bias(
    bias: BiasPairs, old_bytes: TokenBytes | None, encode: TextEncoder | None, n_vocab: int
) -> tuple[BiasPairs, tuple[int, ...]]:
    """A logit bias made for one model, for the model opened in its place.

    Each entry goes to the new model's one token for the same text (the old token's
    bytes, encoded again); with either tokenizer unknown, an id within the new
    vocabulary is kept as it is. An entry whose text is not one token of the new
    model, or whose id is past its vocabulary, is dropped (as is a second entry
    landing on a token already biased).

    Returns:
        The new pairs, and the old ids dropped.
    """
    kept: dict[int, float] = {}
    dropped: list[int] = []
    for token, value in bias:
        new = _same_token(token, old_bytes, encode, n_vocab)
        if new is None or new in kept:
            dropped.append(token)
        else:
            kept[new] = value
    return tuple(sorted(kept.items())), tuple(dropped)


def _same_token(
    token: int, old_bytes: TokenBytes | None, encode: TextEncoder | None, n_vocab: int
) -> int | None:
    if old_bytes is None or encode is None:
        return token if token < n_vocab else None
    try:
        ids = encode(old_bytes(token).decode("utf-8"))
    except (IndexError, UnicodeDecodeError, ValueError):
        return None
    return ids[0] if len(ids) == 1 and ids[0] < n_vocab else None
