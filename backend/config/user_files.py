"""One rule for reading a file the user names: presets, sampler files, grammars and
schemas, texts to score, a sweep's prompts and saved result, a base log-probability
file.

- Only a regular file is opened: a FIFO (which would hang), a device (`/dev/zero`,
  which never ends) or a directory is refused before it is read.
- At most `limit` bytes are read (a larger file is refused, not truncated).
- Text must be UTF-8: the error names the file and the byte's offset.
- JSON and YAML are nested at most `MAX_DEPTH` deep, and YAML is read safely with its
  aliases expanding to at most `MAX_YAML_NODES` values (an alias bomb is refused
  before anything walks it).

Every refusal is a `UserFileError` whose one-line message names the file.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from sampling.errors import SamplescopeError

DEFAULT_LIMIT = 16 << 20
"""The most bytes a user file may hold (a grammar, a schema, a text to score)."""
PRESET_LIMIT = 1 << 20
"""The most bytes a preset file may hold."""
MAX_DEPTH = 64
"""The deepest nesting of a JSON or YAML file's values."""
MAX_YAML_NODES = 100_000
"""The most values a YAML file may expand to, its aliases followed."""


class UserFileError(SamplescopeError, ValueError):
    """A user's file cannot be read as asked; the message names it and says why."""


def open_user_file(path: Path) -> BinaryIO:
    """A regular file opened for reading in binary, for a reader that takes it piece
    by piece (a file too large to read at once); the caller closes it.

    Raises:
        UserFileError: It is missing or unreadable, or not a regular file.
    """
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (then refused).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise UserFileError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError:  # a NUL in the name: no file has it
        raise UserFileError(f"cannot read {str(path)!r}: a file name holds no NUL") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UserFileError(f"cannot read {path}: {_kind(mode)}, not a regular file")
    return os.fdopen(fd, "rb")


def read_user_bytes(path: Path, limit: int = DEFAULT_LIMIT) -> bytes:
    """A regular file's bytes, at most `limit` of them.

    Raises:
        UserFileError: It is missing or unreadable, not a regular file, or too large.
    """
    with open_user_file(path) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise UserFileError(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise UserFileError(f"{path} is larger than {_size(limit)}")
    return data


def read_user_text(path: Path, limit: int = DEFAULT_LIMIT) -> str:
    """A regular file's text: UTF-8, at most `limit` bytes.

    Raises:
        UserFileError: As `read_user_bytes`, or the bytes are not UTF-8 (the
            message gives the first bad byte and its offset).
    """
    return decoded(read_user_bytes(path, limit), str(path))


def decoded(data: bytes, where: str) -> str:
    """Bytes as UTF-8 text.

    Raises:
        UserFileError: They are not UTF-8; the message names `where` and the offset.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserFileError(
            f"{where} is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def load_json(text: str, where: str) -> Any:
    """JSON text's value, nested at most `MAX_DEPTH` deep.

    Raises:
        UserFileError: It is not JSON, or nested deeper.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserFileError(f"{where}: not valid JSON: {error}") from None
    except ValueError:  # an integer past Python's 4,300 digits
        raise UserFileError(f"{where}: holds a number too long to read") from None
    except RecursionError:
        raise UserFileError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    _check_size(value, where)
    return value


def load_yaml(text: str, where: str) -> Any:
    """YAML text's value, read safely: nested at most `MAX_DEPTH` deep, its aliases
    expanding to at most `MAX_YAML_NODES` values.

    Raises:
        UserFileError: It is not YAML, nested deeper, or expands to more values.
    """
    try:
        value = yaml.load(text, Loader=_BoundedLoader)
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())[:300]
        raise UserFileError(f"{where}: not valid YAML: {reason}") from None
    except ValueError as error:  # a tagged value that is not its type (a date, a float)
        reason = " ".join(str(error).split())[:300]
        raise UserFileError(f"{where}: a value cannot be read: {reason}") from None
    except RecursionError:
        raise UserFileError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    _check_size(value, where)
    return value


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader, refusing nesting deeper than `MAX_DEPTH` as it composes."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        depth = getattr(self, "_depth", 0)
        if depth >= MAX_DEPTH:
            raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
        self._depth = depth + 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth


def _check_size(value: Any, where: str) -> None:
    """Refuse a value nested deeper than `MAX_DEPTH`, expanding to more than
    `MAX_YAML_NODES` values (shared values counted each time they appear), or holding
    itself (a YAML alias inside its own anchor), which nothing could walk to the end."""
    sizes: dict[int, int] = {}
    inside: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise UserFileError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict | list):
            return 1
        if id(node) in inside:
            raise UserFileError(f"{where}: a value holds itself (an alias inside its anchor)")
        known = sizes.get(id(node))
        if known is not None:
            return known
        inside.add(id(node))
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_YAML_NODES:
                raise UserFileError(
                    f"{where}: expands to more than {MAX_YAML_NODES:,} values (aliases)"
                )
        inside.discard(id(node))
        sizes[id(node)] = total
        return total

    size(value, 0)


def non_finite(value: Any, where: str = "") -> tuple[str, float] | None:
    """The first number in a loaded JSON or YAML value that is NaN or infinite, with
    where it is (`field.sub[2]`), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [
            (f"{where}.{_shown(key)}" if where else _shown(key), item)
            for key, item in value.items()
        ]
    elif isinstance(value, list):
        items = [(f"{where}[{n}]", item) for n, item in enumerate(value)]
    for place, item in items:
        found = non_finite(item, place)
        if found is not None:
            return found
    return None


def _shown(key: object) -> str:
    """A field's name as a message shows it: quoted when empty or holding a line break
    or another character that is not printable."""
    text = str(key)
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
