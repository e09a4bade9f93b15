"""Switching the chat between chat mode and completion mode (a key, and `--mode`)."""

from __future__ import annotations

from backend.chat.completion import Mode
from tui.chat.conversation import Conversation

MODE_NOTICES: dict[Mode, str] = {
    "completion": (
        "Completion mode: the conversation is one plain-text document the model "
        "continues, without the chat template (f6: back to chat mode)."
    ),
    "chat": "Chat mode: replies are turns of the model's chat template (f6: completion mode).",
}
"""What the app says when the mode changes to each."""


def switch_mode(conversation: Conversation) -> str:
    """Switch the conversation to the other mode from its next reply; the notice to show."""
    conversation.mode = "chat" if conversation.mode == "completion" else "completion"
    return MODE_NOTICES[conversation.mode]
