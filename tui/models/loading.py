"""Loading the model off the UI thread, and the messages that say how it went."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from textual.message import Message

from backend.error_log import logged_line
from backend.llama.model_sampling import NO_MODEL_SAMPLING, ModelSampling, read_model_sampling
from backend.session.backend import SessionBackend
from backend.store.store import ChatStore, StoreError
from sampling.built_in import chat_defaults
from sampling.errors import SamplescopeError
from sampling.settings.registry import Registry
from tui.widgets.token_text import TextEncoder, TokenBytes, ui_vocabulary


class BackendReady(Message):
    """The model finished loading.

    Attributes:
        backend: The model.
        pieces: Shows any token id (None: ids only).
        encode: Turns text into the model's token ids on the UI thread (None: the
            vocabulary could not be read).
        token_bytes: Any token's bytes, on the UI thread (None: not known).
        own_settings: The model file's own sampler settings (`general.sampling.*`).
    """

    def __init__(
        self,
        backend: SessionBackend,
        pieces: Callable[[int], str] | None,
        encode: TextEncoder | None = None,
        token_bytes: TokenBytes | None = None,
        own_settings: ModelSampling = NO_MODEL_SAMPLING,
    ) -> None:
        super().__init__()
        self.own_settings = own_settings
        self.backend = backend
        self.pieces = pieces
        self.encode = encode
        self.token_bytes = token_bytes


class BackendFailed(Message):
    """The model could not be loaded; `error` is the user-facing message."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


def load_backend(
    load: Callable[[], SessionBackend],
    store: ChatStore | None,
    post: Callable[[Message], object],
    failed: Callable[[str], Message] = BackendFailed,
    *,
    registry: Registry,
) -> None:
    """Load the model and post `BackendReady` or `failed` (worker thread).

    Args:
        load: Loads the model (a `SamplescopeError` it raises is shown as is).
        store: The chat database: it hashes the model file now, after the model is
            ready (seconds for a big GGUF, then cached), rather than before the first
            reply; a failure shows at the first reply.
        post: Posts a message to the UI thread.
        failed: The message a failure posts, given its user-facing text.
        registry: The app's: the model's own settings are read against its chat
            defaults.
    """
    try:
        backend = load()
    except SamplescopeError as error:
        post(failed(str(error)))
        return
    except Exception as error:  # an unexpected failure must still be shown, not crash
        post(failed(logged_line(error)))
        return
    own = read_model_sampling(backend.info.path, chat_defaults(registry))
    post(BackendReady(backend, *ui_vocabulary(backend), own_settings=own))
    if store is not None:
        with contextlib.suppress(StoreError):
            store.model_ref(backend.info.path)
