"""The errors log: the full traceback of an error nobody foresaw, appended to
`<log dir>/errors.log` for a bug report (the user is told one line and where)."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from backend.config.paths import log_dir

ERRORS_LOG = "errors.log"


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
