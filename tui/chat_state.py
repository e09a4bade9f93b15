"""The chat's state as properties of the app, for tests and benchmarks."""

from __future__ import annotations

from backend.chat.events import FinishedEvent, GenerationEvent
from backend.chat.protocol import ChatMessage
from backend.store.recorder import ChatRecorder
from tui.chat.conversation import Conversation
from tui.chat.reply import Reply
from tui.chat.view import ChatView
from tui.widgets.status_line import StatusState


class ChatState:
    """Read access to the chat view and its conversation (mixed into the app)."""

    chat: ChatView
    conversation: Conversation

    @property
    def messages(self) -> list[ChatMessage]:
        """The conversation."""
        return self.conversation.messages

    @property
    def replies(self) -> list[Reply]:
        """This session's replies, with their tokens."""
        return self.conversation.replies

    @property
    def generating(self) -> bool:
        """Whether a chat reply is running."""
        return self.chat.generating

    @property
    def finished(self) -> list[FinishedEvent]:
        """Every FinishedEvent of a chat reply handled, in order."""
        return self.conversation.finished

    @property
    def event_log(self) -> list[GenerationEvent] | None:
        """Set to a list to record every event of the current reply handled."""
        return self.chat.event_log

    @event_log.setter
    def event_log(self, log: list[GenerationEvent] | None) -> None:
        self.chat.event_log = log

    @property
    def recorder(self) -> ChatRecorder | None:
        """Saves the conversation as it happens (None: nothing is saved)."""
        return self.conversation.recorder

    @property
    def status(self) -> StatusState:
        """What the status line shows."""
        return self.chat.status

    @property
    def cursor(self) -> tuple[int, int] | None:
        """The selected past token (reply, token), or None."""
        return self.chat.cursor

    def flush_now(self) -> None:
        """Draw what is pending now rather than at the next tick (tests, snapshots)."""
        self.chat.flush_now()
