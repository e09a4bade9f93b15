"""Errors the backend reports to the user."""

from __future__ import annotations

from sampling.errors import SamplescopeError


class ModelFileError(SamplescopeError):
    """A model file is missing, unreadable, not GGUF, truncated or corrupt.

    The message names the file and the problem, so it can be shown as is.
    """
