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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.message import Message

from backend.chat.protocol import LiveSettings, ModelInfo
from backend.config.model_catalog import LocalModel
from backend.session.backend import SessionBackend
from backend.store.store import ChatStore
from sampling.samplers.logit_bias import LogitBiasParams
from sampling.settings.registry import Registry, registry_of
from sampling.settings.text import BiasPairs
from tui.models.loading import load_backend
from tui.models.picker import ListModels, ModelPickerScreen
from tui.runner import GenerationRunner
from tui.widgets.token_text import TextEncoder, TokenBytes, TokenPieces

if TYPE_CHECKING:
    from tui.chat.view import ChatView

OTHER_SCREEN_OPEN = "Close the other screen first: another model opens from the chat."

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
    registry: Registry,
) -> None:
    """Load `path`, free `previous`, post `BackendReady`; or post `ModelSwitchFailed`
    (worker thread)."""

    def load() -> SessionBackend:
        backend = open_model(path)
        if previous is not None and not runner.close_after_use(previous):
            post(PreviousModelKept(previous.info.name))
        return backend

    load_backend(
        load,
        store,
        post,
        failed=lambda error: ModelSwitchFailed(error, previous),
        registry=registry,
    )


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


class ModelSwitcher:
    """The app's side of the model picker: which model to open, when, and what the
    chat keeps of the one before (UI thread only).

    Args:
        app: The app (it shows the picker and the notices, and runs the workers).
        runner: The one model thread; its `loading` names the model being opened.
        chat: The chat view (a running reply is stopped first).
        live: The settings (a logit bias is carried to the new model's tokens).
        pieces: The token texts of the model loaded now.
        store: The chat database the new model's replies go to.
        list_models: Lists the models on disk (None: the app has a fixed model).
        open_model: Loads one with the app's options (None: fixed model).
    """

    def __init__(
        self,
        app: App[None],
        runner: GenerationRunner,
        chat: ChatView,
        live: LiveSettings,
        pieces: TokenPieces,
        store: ChatStore | None,
        list_models: ListModels | None,
        open_model: OpenModel | None,
    ) -> None:
        self.app = app
        self.runner = runner
        self.chat = chat
        self.live = live
        self.pieces = pieces
        self.store = store
        self.list_models = list_models
        self.open_model = open_model
        self.first_load = True
        """Whether the model given at startup is still loading."""

    @property
    def switching(self) -> str | None:
        """The name of the model being opened (None: no switch runs)."""
        return self.runner.loading

    def pick(self) -> None:
        """Show the models on disk; the one chosen opens and the chat goes on."""
        app = self.app
        if self.list_models is None or self.open_model is None:
            app.notify("This app was started with a fixed model.", severity="warning")
            return
        if self.switching is not None or self.first_load:
            app.notify(f"{self.switching or 'The model'} is loading.")
            return
        if len(app.screen_stack) > 1:  # the palette calls this on any screen
            app.notify(OTHER_SCREEN_OPEN, severity="warning")
            return
        backend = self.runner.backend
        current = None if backend is None else Path(backend.info.path)
        app.push_screen(ModelPickerScreen(self.list_models, current=current), self._picked)

    def _picked(self, model: LocalModel | None) -> None:
        open_model = self.open_model
        if model is None or open_model is None or self.switching is not None:
            return
        if len(self.app.screen_stack) > 1:
            self.app.notify(OTHER_SCREEN_OPEN, severity="warning")
            return
        if self.chat.stop_then(lambda: self._picked(model)):
            return
        self.runner.loading = model.name  # from now on no job starts
        self.runner.cancel()  # a what-if rebuild, say
        self.app.notify(f"Loading {model.name}…", timeout=10)
        self.app.run_worker(self._switch_when_idle(open_model, model.path), group="switch")

    async def _switch_when_idle(self, open_model: OpenModel, path: Path) -> None:
        """Load `path` once no job uses the model any more."""
        await self.runner.wait_idle()
        previous, self.runner.backend = self.runner.backend, None
        load = partial(
            switch_model,
            open_model,
            path,
            previous,
            self.runner,
            self.store,
            self.app.post_message,
            registry_of(self.live.current),
        )
        self.app.run_worker(load, thread=True, exclusive=True, group="load")

    def opened(self, encode: TextEncoder | None, info: ModelInfo) -> None:
        """The model picked is loaded (before the app makes it the chat's)."""
        self.runner.loading = None
        self.carry_bias(encode, info)
        self.pieces.forget()
        self.app.notify(f"Opened {info.name}: the chat goes on with it.", timeout=10)

    def carry_bias(self, encode: TextEncoder | None, info: ModelInfo) -> None:
        """Another model opened: the logit bias names its tokens, or loses the entries
        it cannot (said in a notice)."""
        bias = self.live.current.of(LogitBiasParams).logit_bias
        if not bias:
            return
        carried, dropped = carried_bias(bias, self.pieces.token_bytes, encode, info.n_vocab)
        if carried == bias:
            return
        self.live.current = self.live.current.with_changes(logit_bias=carried)
        self.chat.show_settings(self.live.current)
        lost = ", ".join(f"#{token}" for token in dropped)
        self.app.notify(
            f"The logit bias now names {info.name}'s tokens ({len(carried)} kept"
            + (f"; dropped {lost}: not one token of {info.name})." if dropped else ")."),
            timeout=15,
        )

    def kept(self, name: str) -> None:
        """The model before could not be freed."""
        self.app.notify(
            f"{name} could not be freed (a job still held it): it stays in memory"
            " until samplescope quits.",
            severity="warning",
            timeout=20,
        )

    def failed(self, message: ModelSwitchFailed) -> None:
        """The model picked did not load: the one before stays."""
        self.runner.backend = message.previous
        name, self.runner.loading = self.runner.loading, None
        self.app.notify(
            f"Could not open {name}: {message.error}. The model before stays.",
            severity="error",
            timeout=20,
        )
