"""The chat template's switches in the app: thinking on and off, and a turn's prompt.

"Thinking off" gives the template `enable_thinking=false` from the next prompt on
(Qwen3's template then opens and closes an empty thinking block itself); "Thinking
on" gives it `true`. "Show the prompt" shows the prompt of the reply under the token
cursor, else of the next reply (the conversation ends with a message not answered
yet), else of the last reply: rendered by the chat template with the switches in
force now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from backend.chat.completion import Mode
from backend.chat.protocol import ChatMessage
from backend.chat.template import ChatTemplateError
from backend.chat.template_switches import TemplateSwitches
from backend.session.backend import SessionBackend
from tui.widgets.text_view import TextViewScreen


class TemplateHost(Protocol):
    """What the commands need of the app."""

    template_switches: TemplateSwitches

    @property
    def loaded_backend(self) -> SessionBackend | None:
        """The model, once loaded."""
        ...

    def notify(self, message: str, **options: Any) -> None:
        """Show a message."""
        ...

    def push_screen(self, screen: Any) -> Any:
        """Show a screen."""
        ...


def use_switches(host: TemplateHost, switches: TemplateSwitches) -> None:
    """Make `switches` the template's from the next prompt on."""
    host.template_switches = switches
    backend = host.loaded_backend
    if backend is not None:
        backend.template.switches = switches


def toggle_thinking(host: TemplateHost) -> None:
    """Thinking off when it is on (or the template's default), else on."""
    enabled = host.template_switches.enable_thinking is False
    use_switches(host, host.template_switches.with_thinking(enabled))
    word = "on" if enabled else "off"
    message = (
        f"Thinking {word}: the next prompt gives the chat template"
        f" enable_thinking={'true' if enabled else 'false'}."
    )
    backend = host.loaded_backend
    if backend is not None and "enable_thinking" not in backend.template.source:
        message += " This model's template does not read it: nothing changes."
        host.notify(message, severity="warning", timeout=10)
        return
    host.notify(message, timeout=8)


def turn_prompt(
    messages: Sequence[ChatMessage], turns: Sequence[int], cursor_reply: int | None
) -> tuple[str, list[ChatMessage]] | None:
    """Which prompt "Show the prompt" shows: (its title, the messages before it).

    Args:
        messages: The conversation.
        turns: Each of this session's replies' turn (its index in `messages`).
        cursor_reply: The reply under the token cursor (None: none).

    Returns:
        None when nothing has been said yet.
    """
    if cursor_reply is not None and 0 <= cursor_reply < len(turns):
        turn = min(max(turns[cursor_reply], 0), len(messages))
        return f"The prompt of reply {cursor_reply + 1}", list(messages[:turn])
    if messages and messages[-1].role == "user":
        return "The prompt of the next reply", list(messages)
    if messages and messages[-1].role == "assistant":
        return "The prompt of the last reply", list(messages[:-1])
    return None


def show_prompt(
    host: TemplateHost,
    mode: Mode,
    messages: Sequence[ChatMessage],
    turns: Sequence[int],
    cursor_reply: int | None,
) -> None:
    """Show a turn's prompt as the chat template renders it now."""
    backend = host.loaded_backend
    if backend is None:
        host.notify("The model is not loaded yet.")
        return
    if mode == "completion":
        host.notify("Completion mode has no chat template: the text is the prompt.")
        return
    chosen = turn_prompt(messages, turns, cursor_reply)
    if chosen is None:
        host.notify("Nothing to show yet: send a message first.")
        return
    title, before = chosen
    try:
        text = backend.template.render(before)
    except ChatTemplateError as error:
        host.notify(str(error), severity="error", timeout=15)
        return
    switches = host.template_switches.described()
    note = "as the chat template renders it now" + (f", with {switches}" if switches else "")
    kept = host.template_switches.reasoning_preserve
    note += "; earlier replies' thinking " + ("kept" if kept else "left out")
    host.push_screen(TextViewScreen(title, text, note))
