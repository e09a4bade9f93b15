"""An error nobody foresaw, as a command's last word: one line on stderr, the full
traceback appended to the errors log (`backend.error_log`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from backend.error_log import log_traceback, one_line


def report_unexpected(error: BaseException, argv: Sequence[str]) -> int:
    """Say in one line that `error` ended the command and where its traceback went;
    the exit code (1)."""
    print(f"samplescope: {one_line(error, log_traceback(error, argv))}", file=sys.stderr)
    return 1
