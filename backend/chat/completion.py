"""Completion mode: the document is plain text the model continues (no chat template).

A base model has no chat template and no turn markers in its vocabulary: wrapping its
input in ChatML would show it markup it never learned. In completion mode the
conversation is one document (every turn's text, joined as it was written) that is
tokenized as plain text and continued; `LlamaBackend.generate(..., raw=True)` feeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from backend.chat.protocol import ChatMessage

Mode = Literal["chat", "completion"]
MODES: tuple[Mode, ...] = ("chat", "completion")

BASE_MODEL_NOTICE = (
    "the model has no chat template and no known turn tokens (a base model): "
    "completion mode, the text is continued as written (--mode chat to override)"
)


def has_turn_markers(special_texts: Sequence[str]) -> bool:
    """Whether a vocabulary's special tokens hold every turn token of a chat format
    samplescope has a built-in template for (the template it then falls back to)."""
    from backend.chat.template import builtin_template_for  # jinja2: not for `-h`

    return builtin_template_for(special_texts) is not None


def choose_mode(
    requested: Mode | None, has_template: bool, special_texts: Sequence[str]
) -> tuple[Mode, str | None]:
    """The mode to run in, and a notice when it was chosen for the user.

    Args:
        requested: The mode asked for (`--mode`), or None to choose.
        has_template: Whether the model's GGUF carries a chat template.
        special_texts: The texts of the vocabulary's special tokens.

    Returns:
        `requested` when given; else "completion" with `BASE_MODEL_NOTICE` for a
        model with neither a template nor turn markers, else "chat".
    """
    if requested is not None:
        return requested, None
    if not has_template and not has_turn_markers(special_texts):
        return "completion", BASE_MODEL_NOTICE
    return "chat", None


class TemplatedModel(Protocol):
    """What choosing a mode needs to know of a loaded model."""

    @property
    def has_own_template(self) -> bool:
        """Whether its GGUF carries a chat template."""
        ...

    @property
    def template_notice(self) -> str | None:
        """Why its template is not its GGUF's own (None when it is)."""
        ...

    def special_texts(self) -> list[str]:
        """The texts of its vocabulary's special tokens."""
        ...


def mode_for_backend(backend: TemplatedModel, requested: Mode | None) -> tuple[Mode, str | None]:
    """`choose_mode` for a loaded backend, with the template's own notice in chat mode.

    In chat mode, a model whose GGUF has no template says which built-in one it got.
    """
    has_template = backend.has_own_template
    mode, notice = choose_mode(requested, has_template, backend.special_texts())
    if mode == "chat" and notice is None and not has_template:
        notice = backend.template_notice
    return mode, notice


def document_text(messages: Sequence[ChatMessage]) -> str:
    """The document a completion-mode conversation is: every turn's text, joined."""
    return "".join(message.content for message in messages)


def as_document(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation as the one message `generate(..., raw=True)` continues."""
    return [ChatMessage("user", document_text(messages))]
