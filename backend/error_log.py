"""The errors log: the full traceback of an error nobody foresaw, appended to
`<log dir>/errors.log` for a bug report (the user is told one line and where).

A module of its own at the top of `backend`, below every other unit: the generation
loop logs here as the commands and the app do.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

ERRORS_LOG = "errors.log"
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8", errors="replace") as log:
            log.write(f"--- {stamp} samplescope {' '.join(argv)}\n{''.join(lines)}\n")
    except OSError:
        return None
    return path


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
