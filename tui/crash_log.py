"""The app's word on an error nobody foresaw.

Raised in a handler once the app runs (a message or event handler, an action, of any
screen or widget), its traceback goes to the errors log (`backend.error_log`,
as the commands' do) and a notice says so in one line: the app, its chat and the
widget whose handler raised go on. Textual 8.2.8 would end the app, and stop the
message loop of the widget that raised, so each message is dispatched through
`_guarded_dispatch`, which catches what its handlers raise for a `CrashLoggingApp`
that is running.

Anything else (composing or mounting a screen or widget, a timer's or a callback's
error) still ends the app, with one line saying where the traceback was logged
instead of a screenful of traceback. The chat is kept: the store saves it as it goes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual import events
from textual.app import App
from textual.message import Message
from textual.message_pump import MessagePump

from backend.error_log import logged_line

_FATAL = (events.Compose, events.Mount)
"""The messages a failure of which stays fatal: a widget that did not compose or
mount is not there to go on."""


class CrashLoggingApp(App[None]):
    """A Textual app whose handlers' unforeseen errors are logged and told as a notice,
    and whose other unhandled errors are logged and told in one line as it ends."""

    _crash_line = "samplescope: unexpected error"

    def _handle_exception(self, error: Exception) -> None:
        line = logged_line(error)
        self._crash_line = f"samplescope: {line[:-1]}; the chat is saved)"
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        self.bell()
        self._exit_renderables.append(Text(self._crash_line))
        self._close_messages_no_wait()

    def handler_failed(self, error: Exception) -> None:
        """A handler raised `error` while the app ran: log it, say so, go on."""
        line = logged_line(error)
        self.notify(f"{line}; the chat goes on", severity="error", timeout=30)


_dispatch: Callable[[MessagePump, Message], Awaitable[None]] = MessagePump._dispatch_message


async def _guarded_dispatch(pump: MessagePump, message: Message) -> None:
    """Textual's dispatch of one message, its handlers' errors caught for a running
    `CrashLoggingApp` (compose and mount excepted)."""
    try:
        await _dispatch(pump, message)
    except Exception as error:
        app = pump.app
        if not isinstance(app, CrashLoggingApp) or not app.is_running:
            raise
        if isinstance(message, _FATAL):
            raise
        app.handler_failed(error)


# Every pump's dispatch (the app's, its screens', their widgets'): for any other app
# it does what Textual's does.
setattr(MessagePump, "_dispatch_message", _guarded_dispatch)  # noqa: B010
