"""The errors log: the full traceback of an error nobody foresaw, appended to
`<log dir>/errors.log` for a bug report (the user is told one line and where).

The log is its owner's alone (0600 in a 0700 folder: it holds command lines, prompts
included) and bounded: past `MAX_LOG_BYTES` it becomes `errors.log.1` (the one before
is dropped) and a new one starts, the standard library's `RotatingFileHandler` doing
the turning, so the newest tracebacks are always kept.

A module of its own at the top of `backend`, below every other unit: the generation
loop logs here as the commands and the app do.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from logging.handlers import RotatingFileHandler
from pathlib import Path

import platformdirs

from backend.private_files import private_file, private_folder

ERRORS_LOG = "errors.log"
MAX_LOG_BYTES = 1 << 20
"""Past this size (1 MiB) the log is turned over: at most twice this is kept."""
LOG_DIR_ENV = "SAMPLESCOPE_LOG_DIR"
"""Overrides the log directory (tests use it to stay out of the real home directory)."""


def log_dir() -> Path:
    """The directory of samplescope's logs (not created here)."""
    override = os.environ.get(LOG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_log_dir("samplescope", appauthor=False))


def log_traceback(error: BaseException, argv: Sequence[str]) -> Path | None:
    """Append the error's traceback (with the time and the arguments) to the errors
    log; the log's path, or None when it cannot be written."""
    path = log_dir() / ERRORS_LOG
    lines = traceback.format_exception(error)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    entry = f"--- {stamp} samplescope {' '.join(argv)}\n{''.join(lines)}"
    try:
        private_folder(path.parent)
        private_file(path)
        handler = _PrivateRotatingLog(path)
        try:
            handler.emit(logging.makeLogRecord({"msg": entry}))
        finally:
            handler.close()
    except OSError:
        return None
    return path


class _PrivateRotatingLog(RotatingFileHandler):
    """The log file, turned over past `MAX_LOG_BYTES`; each new file is made 0600
    before it is opened, and a failed write raises (the caller says it was not logged)
    instead of the handler's report on stderr."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            path, maxBytes=MAX_LOG_BYTES, backupCount=1, encoding="utf-8", errors="replace"
        )
        self.rotator = _rotate_privately

    def handleError(self, record: logging.LogRecord) -> None:
        """Raise the error being handled (emit calls this inside its `except`)."""
        raise


def _rotate_privately(source: str, dest: str) -> None:
    """Turn the log over: the full one becomes `dest`, an empty 0600 one takes its place."""
    os.replace(source, dest)
    private_file(Path(source))


def one_line(error: BaseException, path: Path | None) -> str:
    """The error in a few words, and where its traceback went."""
    where = f"the traceback is in {path}" if path else "the traceback could not be logged"
    text = " ".join(str(error).split())[:300]
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return f"unexpected error: {detail} ({where})"


def logged_line(error: BaseException) -> str:
    """Log the error's traceback (with this process's arguments) and return its one
    line (`one_line`): what a handler of an unforeseen error tells the user."""
    return one_line(error, log_traceback(error, sys.argv[1:]))
