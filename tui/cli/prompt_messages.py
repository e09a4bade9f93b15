"""The conversation of a one-shot prompt (`generate`, `compare`, `explore`)."""

from __future__ import annotations

from backend.chat.protocol import ChatMessage


def build_messages(prompt: str, system: str | None) -> list[ChatMessage]:
    """The conversation for a one-shot prompt."""
    messages = [] if system is None else [ChatMessage("system", system)]
    messages.append(ChatMessage("user", prompt))
    return messages
