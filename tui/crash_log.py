"""The app's last word on an error nobody foresaw: its traceback goes to the errors
log (`backend.config.error_log`, as the commands' do) and the app ends with one line saying
where, instead of a screenful of traceback. The chat is kept: the store saves it as it
goes."""

from __future__ import annotations

import sys

from rich.text import Text
from textual.app import App

from backend.config.error_log import log_traceback, one_line


class CrashLoggingApp(App[None]):
    """A Textual app whose unhandled errors are logged and told in one line."""

    _crash_line = "samplescope: unexpected error"

    def _handle_exception(self, error: Exception) -> None:
        line = one_line(error, log_traceback(error, sys.argv[1:]))
        self._crash_line = f"samplescope: {line[:-1]}; the chat is saved)"
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        self.bell()
        self._exit_renderables.append(Text(self._crash_line))
        self._close_messages_no_wait()
