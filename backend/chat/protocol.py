"""The backend protocol: what the TUI and the command line need from a model."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from backend.chat.events import GenerationEvent
from sampling.settings.record import SamplerSettings

StepSink = Callable[..., None]
"""Called by the generating thread after each sampled step with (the token's index
in the reply, the logits the sampler saw, the history it saw), for a guided step a
fourth argument, the negative prompt's logits (None when unguided), and with a
contrast model a fifth, the smaller model's logits: zero-copy views and a live list,
so it must copy what it keeps before returning."""

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn of a conversation."""

    role: Role
    content: str


class LiveSettings:
    """Settings that the UI thread may replace while a generation runs.

    The generating thread reads `current` before every token, so a slider change
    applies from the next token; the random stream is kept (only `reset` re-seeds).
    A single attribute assignment is atomic in CPython, so no lock is needed.
    """

    def __init__(self, settings: SamplerSettings) -> None:
        self.current = settings
        self.tail_ranks = 0
        """How many top ranks each step records for the tail plot (0 while hidden)."""
        self.step_sink: StepSink | None = None
        """Keeps each step's logits for a later "what if" (None: nothing kept)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the status line shows about the loaded model."""

    name: str
    path: str
    n_ctx: int
    n_threads: int
    n_vocab: int
    n_batch: int
    #: Where the layers are: "" on this machine, else e.g. "2 RPC servers".
    placement: str = ""
    #: Whether a sequence decoded in lockstep beside others gets exactly its tokens
    #: alone (the load's self-check; None: one sequence at a time, nothing to check).
    batch_invariant: bool | None = None
    #: Whether the weights are repacked for llama.cpp's faster batched kernels.
    repack: bool = False
    #: The control vectors every context applies: each file with its scale.
    control_vectors: tuple[tuple[str, float], ...] = ()
    #: The first and last layer they steer (None: every layer).
    control_layers: tuple[int, int] | None = None
    #: The smaller model contrast decodes beside it ("": none).
    contrast_model: str = ""


@runtime_checkable
class ChatBackend(Protocol):
    """A model that turns a conversation into a stream of generation events.

    Exactly one thread may call `generate` at a time (a llama context is not
    thread-safe); other threads may read `info` and set `cancel`.
    """

    @property
    def info(self) -> ModelInfo:
        """The loaded model."""
        ...

    @property
    def context_used(self) -> int:
        """Tokens currently held in the KV cache."""
        ...

    def generate(
        self,
        messages: Sequence[ChatMessage],
        settings: LiveSettings,
        *,
        max_tokens: int = 512,
        cancel: threading.Event | None = None,
        raw: bool = False,
    ) -> Iterator[GenerationEvent]:
        """Generate the assistant's reply to `messages`.

        The sampler is seeded from `settings.current.seed` at the start of each
        generation, so the same conversation, settings and seed reproduce a reply.

        Args:
            messages: The conversation so far, ending with a user turn.
            settings: Sampler settings, read again before every token.
            max_tokens: Stop after this many sampled tokens.
            cancel: When set, stop within one token or one prefill chunk.
            raw: Feed the last message's text without the chat template.

        Yields:
            PhaseEvent, PrefillProgress, TokenEvent and NoticeEvent values, and one
            FinishedEvent last (errors during generation end in FinishedEvent with
            reason "error" rather than an exception).
        """
        ...

    def reset(self) -> None:
        """Forget the KV cache (a new chat)."""
        ...

    def close(self) -> None:
        """Free the model."""
        ...
