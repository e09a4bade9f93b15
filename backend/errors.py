"""Errors the backend reports to the user."""

from __future__ import annotations

from sampling.errors import SamplescopeError


class ModelFileError(SamplescopeError):
    """A model file is missing, unreadable, not GGUF, truncated or corrupt.

    The message names the file and the problem, so it can be shown as is.
    """


class FileAccessError(SamplescopeError):
    """A file the app may not open (the served app opens only its own folders' files).

    The message names the file and the folders it may open.
    """
