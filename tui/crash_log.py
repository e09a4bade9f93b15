"""The app's last word on an error nobody foresaw: its traceback goes to the errors
log (as the commands' do, `tui.cli.unexpected`) and the app ends with one line saying
where, instead of a screenful of traceback. The chat is kept: the store saves it as it
goes."""

from __future__ import annotations

import sys

from rich.text import Text
from textual.app import App

from tui.cli.unexpected import log_traceback


class CrashLoggingApp(App[None]):
    """A Textual app whose unhandled errors are logged and told in one line."""

    _crash_line = "samplescope: unexpected error"

    def _handle_exception(self, error: Exception) -> None:
        path = log_traceback(error, sys.argv[1:])
        where = f"the traceback is in {path}" if path else "the traceback could not be logged"
        text = " ".join(str(error).split())[:300]
        detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
        self._crash_line = f"samplescope: unexpected error: {detail} ({where}; the chat is saved)"
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        self.bell()
        self._exit_renderables.append(Text(self._crash_line))
        self._close_messages_no_wait()
