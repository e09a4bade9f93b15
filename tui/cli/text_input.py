"""Text a command reads from its arguments or stdin, checked to be valid UTF-8."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from sampling.errors import SamplescopeError


class TextInputError(SamplescopeError):
    """An argument or stdin is not valid UTF-8; the message says which and where."""


def _first_undecodable(text: str) -> int | None:
    """The index of the first byte Python could not decode (a lone surrogate), if any."""
    for index, char in enumerate(text):
        if "\udc80" <= char <= "\udcff":
            return index
    return None


def check_arguments(argv: Sequence[str]) -> None:
    """Raise unless every argument decoded as UTF-8.

    Python hands undecodable bytes of argv on as lone surrogates; they would fail
    much later with an error about "surrogates".

    Raises:
        TextInputError: Naming the argument and the first bad byte.
    """
    for number, argument in enumerate(argv, start=1):
        index = _first_undecodable(argument)
        if index is not None:
            byte = ord(argument[index]) - 0xDC00
            raise TextInputError(
                f"argument {number} is not valid UTF-8 (byte 0x{byte:02x} at character {index})"
            )


def read_stdin() -> str:
    """All of stdin as text.

    Raises:
        TextInputError: Stdin is not valid UTF-8; the message gives the byte offset.
    """
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TextInputError(
            f"stdin is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def read_text(name: str) -> str:
    """The text of FILE, or of stdin for "-".

    Raises:
        ScoreError: The file cannot be read or is not UTF-8 (one line, naming it).
        TextInputError: Stdin is not UTF-8.
    """
    from backend.config.user_files import UserFileError, read_user_text
    from backend.score.text_score import ScoreError

    if name == "-":
        return read_stdin()
    try:
        return read_user_text(Path(name))
    except UserFileError as error:
        raise ScoreError(str(error)) from None
