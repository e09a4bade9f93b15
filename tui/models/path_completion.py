"""Completing a GGUF's path as it is typed: the folders and GGUF files a prefix names.

`complete_path("~/mod")` is "~/models/" when that is the one entry starting so; with
several, the longest prefix they share (the text itself when they share no more).
Hidden entries are offered only when the typed name starts with a dot. When the app is
served, a folder outside samplescope's own folders is never listed (`user_file`): its
entries would tell the browser's user what the machine holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from textual.suggester import Suggester

from backend.config.paths import user_file
from backend.errors import FileAccessError

GGUF_SUFFIX = ".gguf"
PATH_STARTS = ("/", "~", "./", "../")
"""How typed text that is a path starts (anything else filters the list)."""
MOST_ENTRIES = 5000
"""The most entries of one folder read to complete a name (a huge folder is cut)."""


def is_path(text: str) -> bool:
    """Whether typed text names a file rather than filtering the list by name."""
    return text.startswith(PATH_STARTS) or text in (".", "..")


def complete_path(text: str) -> str:
    """`text` completed as far as the folder's entries agree (folders end in "/")."""
    if "/" not in text:  # "~", ".", "..": the folder itself
        if not _may_list(Path(text)):
            return text
        return text + "/" if os.path.isdir(os.path.expanduser(text)) else text
    folder_text, _, name = text.rpartition("/")
    folder = Path(os.path.expanduser(folder_text + "/"))
    if not _may_list(folder):
        return text
    matches: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= MOST_ENTRIES:
                    break
                if not entry.name.startswith(name) or (
                    entry.name.startswith(".") and not name.startswith(".")
                ):
                    continue
                if _is_dir(entry):
                    matches.append(entry.name + "/")
                elif entry.name.lower().endswith(GGUF_SUFFIX):
                    matches.append(entry.name)
    except OSError:
        return text
    if not matches:
        return text
    shared = _shared_start(matches)
    head = text[: len(text) - len(name)]
    return head + shared if len(shared) > len(name) else text


def _may_list(folder: Path) -> bool:
    """Whether the folder's entries may be read (served: only samplescope's own)."""
    try:
        user_file(folder)
    except FileAccessError:
        return False
    return True


def _shared_start(names: list[str]) -> str:
    """The longest start every name has."""
    first, last = min(names), max(names)
    length = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first)
    )
    return first[:length]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


class GgufPathSuggester(Suggester):
    """Suggests the completed path while a path is typed (right arrow or Tab takes it)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        """The completion of `value` when it is a path and can be completed."""
        if not is_path(value):
            return None
        completed = complete_path(value)
        return completed if completed != value else None
