"""Route llama.cpp's (and ggml's) log to a file instead of the terminal.

llama.cpp logs to stderr, where it would scribble over the Textual screen, and
llama-cpp-python's `verbose=False` silences it by redirecting file descriptors 1 and
2, which blanks the screen. Instead we install a log callback with `llama_log_set`
that appends each message to a log file. The ctypes callback object is kept at module
level: if it were garbage-collected, llama.cpp would call freed memory.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from pathlib import Path
from typing import IO

import llama_cpp

from backend.error_log import log_dir
from backend.private_files import private_file, private_folder
from sampling.errors import SamplescopeError

#: ggml log levels (enum ggml_log_level in the ggml that llama-cpp-python 0.3.36 ships;
#: the comment in llama_cpp/_logger.py gives an older order).
LEVEL_NONE, LEVEL_DEBUG, LEVEL_INFO, LEVEL_WARN, LEVEL_ERROR, LEVEL_CONT = range(6)
#: An existing log larger than this is moved to `<name>.1` when the log is installed.
ROTATE_BYTES = 8 * 1024 * 1024


class LogFileError(SamplescopeError):
    """The log file cannot be opened for writing; the message names it."""


_lock = threading.Lock()
_file: IO[str] | None = None
_path: Path | None = None
_last_level = LEVEL_INFO
_recent: deque[str] = deque(maxlen=50)  # recent warnings and errors, for error messages


def default_log_path() -> Path:
    """``llama.log`` in samplescope's log folder (`backend.error_log.log_dir`: the
    ``SAMPLESCOPE_LOG_DIR`` environment variable, else e.g.
    ``~/.local/state/samplescope/log``), beside ``errors.log``."""
    return log_dir() / "llama.log"


def _on_log(level: int, text: bytes | None, _user_data: ctypes.c_void_p) -> None:
    """Called by llama.cpp (on whichever thread logs) with one message or fragment."""
    global _last_level
    if level == LEVEL_CONT:
        level = _last_level  # a continuation of the previous message
    _last_level = level
    if level == LEVEL_DEBUG or not text:
        return
    message = text.decode("utf-8", errors="replace")
    with _lock:
        if _file is not None:
            try:
                _file.write(message)
                if message.endswith("\n"):
                    _file.flush()
            except (OSError, ValueError):
                pass  # a full disk or closed file must never reach llama.cpp
        if level in (LEVEL_WARN, LEVEL_ERROR) and message.strip():
            _recent.append(message.strip())


# Kept alive for the life of the process (llama.cpp holds a raw pointer to it).
_CALLBACK = llama_cpp.llama_log_callback(_on_log)


def install_llama_log(path: Path | None = None) -> Path:
    """Send llama.cpp's log to `path` (appending), from now on, process-wide.

    Calling it again switches to the new path. File descriptors 1 and 2 are never
    touched.

    Args:
        path: The log file; `default_log_path()` when None. Its directory is created.

    Returns:
        The log file's path.

    Raises:
        LogFileError: The file cannot be opened (a directory, no permission).
    """
    global _file, _path
    target = Path(path) if path is not None else default_log_path()
    try:
        private_folder(target.parent)  # the errors log's folder too: 0700
    except OSError as error:
        raise LogFileError(
            f"cannot write llama.cpp's log to {target}: {error.strerror or error}"
        ) from None
    with _lock:
        if _path != target or _file is None:
            if _file is not None:
                _file.close()
                _file, _path = None, None
            try:
                if target.stat().st_size > ROTATE_BYTES:
                    target.replace(target.with_name(target.name + ".1"))
            except OSError:
                pass  # no previous log
            try:
                private_file(target)
                _file = target.open("a", encoding="utf-8")
            except OSError as error:
                raise LogFileError(
                    f"cannot write llama.cpp's log to {target}: {error.strerror}"
                ) from None
            _path = target
    llama_cpp.llama_log_set(_CALLBACK, ctypes.c_void_p(0))
    return target


def current_log_path() -> Path | None:
    """The file the log goes to, or None before `install_llama_log`."""
    return _path


def recent_problems(count: int = 5) -> list[str]:
    """The last `count` warning and error messages llama.cpp logged (for error reports)."""
    with _lock:
        return list(_recent)[-count:]
