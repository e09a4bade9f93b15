"""llama-perplexity's `--kl-divergence-base` file, read and written chunk by chunk.

The layout (tools/perplexity/perplexity.cpp, all little-endian as written on x86 and
ARM): the 8 bytes `_logits_`; int32 n_ctx, int32 n_vocab, int32 n_chunk; the
n_chunk * n_ctx int32 tokens the text was cut into (BOS first, each chunk's first
token as the text has it, not the BOS that replaced it in the decode); then, for each
chunk, the n_ctx - 1 - n_ctx // 2 scored positions' rows of
`sampling.analysis.logprob_codec.row_width(n_vocab)` uint16. A file written here is read by
llama-perplexity and the other way round. Only one chunk's rows are in memory at once.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from backend.config.user_files import UserFileError, open_user_file
from sampling.analysis.logprob_codec import row_headers, row_width
from sampling.errors import SamplescopeError

MAGIC = b"_logits_"
_HEADER = np.dtype([("n_ctx", "<i4"), ("n_vocab", "<i4"), ("n_chunk", "<i4")])


class BaseFileError(SamplescopeError):
    """A base log-probability file cannot be read or written; the message says why."""


@dataclass(frozen=True, slots=True)
class BaseFileLayout:
    """What a base file holds besides its rows.

    Attributes:
        n_ctx: Tokens per chunk.
        n_vocab: The vocabulary size of the model that wrote it.
        n_chunk: Chunks stored.
        tokens: The n_chunk * n_ctx tokens, in order.
    """

    n_ctx: int
    n_vocab: int
    n_chunk: int
    tokens: tuple[int, ...]

    @property
    def rows_per_chunk(self) -> int:
        """Scored positions per chunk: the second half of it, less its last token."""
        return self.n_ctx - 1 - self.n_ctx // 2

    @property
    def chunk_bytes(self) -> int:
        """Bytes of one chunk's rows."""
        return chunk_bytes(self.n_ctx, self.n_vocab)

    @property
    def header_bytes(self) -> int:
        """Bytes before the first chunk's rows."""
        return header_bytes(len(self.tokens))

    @property
    def file_bytes(self) -> int:
        """The size of the whole file."""
        return self.header_bytes + self.n_chunk * self.chunk_bytes


def chunk_bytes(n_ctx: int, n_vocab: int) -> int:
    """Bytes of one chunk's rows: its scored positions' rows of uint16."""
    return (n_ctx - 1 - n_ctx // 2) * row_width(n_vocab) * 2


def header_bytes(n_tokens: int) -> int:
    """Bytes before the first chunk's rows: the magic, the three counts, the tokens."""
    return len(MAGIC) + _HEADER.itemsize + 4 * n_tokens


def check_save_target(path: Path, inputs: Sequence[Path], *, force: bool = False) -> None:
    """Refuse to write a base file over one of the run's `inputs` (the text, the
    models: a model replaced while it is mapped kills the process), over a file that
    is not a regular file, or over any existing file unless `force`.

    Raises:
        BaseFileError: Naming the file and why (one line).
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise BaseFileError(f"cannot write {path}: {error.strerror or error}") from None
    for given in inputs:
        try:
            same = os.path.samefile(path, given)
        except OSError:
            continue
        if same:
            raise BaseFileError(
                f"cannot write {path}: it is {given}, which this run reads; name another file"
            )
    if not stat.S_ISREG(status.st_mode):
        raise BaseFileError(f"cannot write {path}: it exists and is not a regular file")
    if not force:
        raise BaseFileError(f"cannot write {path}: it exists (--force replaces it)")


class BaseFileWriter:
    """Write a base file: the layout first, then each chunk's rows in order.

    The bytes go to a new file beside `path` (".NAME.*.part"), renamed to `path` once
    the last chunk is written: a run that fails or is killed leaves no partial file
    under the name, and a file it replaces stays whole until then. Only that new
    file is ever removed.

    Raises:
        BaseFileError: The file cannot be created or written (one line, naming it), or
            `check_save_target` refuses `path`.
    """

    def __init__(self, path: Path, layout: BaseFileLayout, *, force: bool = False) -> None:
        if layout.n_ctx < 2 or len(layout.tokens) != layout.n_chunk * layout.n_ctx:
            raise BaseFileError(
                f"internal: {len(layout.tokens)} tokens for {layout.n_chunk} chunks of"
                f" {layout.n_ctx}"
            )
        check_save_target(path, (), force=force)
        self.path = path
        self.layout = layout
        self._written = 0
        try:
            fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        except OSError as error:
            raise BaseFileError(
                f"cannot write {path}: cannot create a file in {path.parent}:"
                f" {error.strerror or error}"
            ) from None
        self._part: Path | None = Path(part)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")
        header = np.array([(layout.n_ctx, layout.n_vocab, layout.n_chunk)], dtype=_HEADER)
        self._write(MAGIC + header.tobytes() + np.asarray(layout.tokens, "<i4").tobytes())

    def write_chunk(self, rows: npt.NDArray[np.uint16]) -> None:
        """Append the next chunk's rows.

        Raises:
            BaseFileError: The rows have the wrong shape, every chunk is written, or
                the disk refused.
        """
        layout = self.layout
        expected = (layout.rows_per_chunk, row_width(layout.n_vocab))
        if rows.shape != expected or self._written >= layout.n_chunk:
            raise BaseFileError(
                f"internal: chunk {self._written + 1} of {layout.n_chunk} with rows"
                f" {rows.shape}, expected {expected}"
            )
        self._write(np.ascontiguousarray(rows, dtype="<u2").tobytes())
        self._written += 1

    def close(self) -> None:
        """Close the file: with every chunk written it takes its name, else it is
        removed (idempotent).

        Raises:
            BaseFileError: The last bytes or the rename failed (the new file removed).
        """
        handle, part = self._file, self._part
        if handle is None or part is None:
            return
        if self._written != self.layout.n_chunk:
            self._discard()
            return
        self._file = self._part = None
        try:
            handle.close()
            os.replace(part, self.path)
        except OSError as error:
            part.unlink(missing_ok=True)
            raise BaseFileError(f"cannot write {self.path}: {error.strerror or error}") from None

    def _discard(self) -> None:
        """Close and remove the new file (only it: never `path`)."""
        handle, part = self._file, self._part
        self._file = self._part = None
        if handle is not None:
            with contextlib.suppress(OSError):  # the bytes left unwritten are dropped
                handle.close()
        if part is not None:
            part.unlink(missing_ok=True)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        try:
            self._file.write(data)
        except OSError as error:
            self._discard()
            raise BaseFileError(f"cannot write {self.path}: {error.strerror or error}") from None


class BaseFileReader:
    """Read a base file: its layout at once (checked against the file's size before
    anything the header counts is read), each chunk's rows on demand (each row's
    scale and floor checked to be finite).

    Raises:
        BaseFileError: The file is missing, not a regular file, not a base file, or
            not the size its header says (one line, naming it).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file: BinaryIO | None = open_user_file(path)
        except UserFileError as error:
            raise BaseFileError(str(error)) from None
        try:
            self.layout = self._read_layout()
        except BaseException:
            self.close()
            raise

    def _read_layout(self) -> BaseFileLayout:
        path = self.path
        assert self._file is not None
        head = self._file.read(len(MAGIC) + _HEADER.itemsize)
        if head[: len(MAGIC)] != MAGIC:
            raise BaseFileError(
                f"{path} is not a base log-probability file (llama-perplexity's"
                " --kl-divergence-base): it does not begin with _logits_"
            )
        if len(head) < len(MAGIC) + _HEADER.itemsize:
            raise BaseFileError(f"{path} is truncated: its header is incomplete")
        fields = np.frombuffer(head[len(MAGIC) :], dtype=_HEADER)[0]
        n_ctx, n_vocab, n_chunk = (int(fields[name]) for name in ("n_ctx", "n_vocab", "n_chunk"))
        if n_ctx < 3 or n_vocab < 1 or n_chunk < 1:  # n_ctx 3: one scored row a chunk
            raise BaseFileError(
                f"{path} has an impossible header: n_ctx {n_ctx}, n_vocab {n_vocab},"
                f" n_chunk {n_chunk}"
            )
        # The size the counts make, compared before any of it is read or allocated.
        size = os.fstat(self._file.fileno()).st_size
        n_tokens = n_ctx * n_chunk
        expected = header_bytes(n_tokens) + n_chunk * chunk_bytes(n_ctx, n_vocab)
        if size != expected:
            held = (size - header_bytes(n_tokens)) / chunk_bytes(n_ctx, n_vocab)
            holds = f"{held:.2f} chunks' rows" if held >= 0 else "less than its tokens"
            raise BaseFileError(
                f"{path} is {size} bytes where its header ({n_chunk} chunks of {n_ctx},"
                f" vocabulary {n_vocab}) makes {expected}: it holds {holds}"
            )
        token_bytes = self._file.read(4 * n_tokens)
        if len(token_bytes) < 4 * n_tokens:
            raise BaseFileError(f"{path} is truncated: it ends in its tokens")
        tokens = np.frombuffer(token_bytes, dtype="<i4")
        if int(tokens.min()) < 0 or int(tokens.max()) >= n_vocab:
            raise BaseFileError(f"{path} holds a token outside its vocabulary of {n_vocab}")
        return BaseFileLayout(n_ctx, n_vocab, n_chunk, tuple(int(t) for t in tokens))

    def read_chunk(self, index: int) -> npt.NDArray[np.uint16]:
        """Chunk `index`'s rows, (rows_per_chunk, row width) uint16.

        Raises:
            BaseFileError: The index is out of range or the file cannot be read.
        """
        layout = self.layout
        if not 0 <= index < layout.n_chunk or self._file is None:
            raise BaseFileError(f"internal: chunk {index} of {layout.n_chunk} in {self.path}")
        count = layout.chunk_bytes // 2
        try:
            self._file.seek(layout.header_bytes + index * layout.chunk_bytes)
            rows = np.fromfile(self._file, dtype="<u2", count=count)
        except OSError as error:
            raise BaseFileError(f"cannot read {self.path}: {error.strerror or error}") from None
        if rows.size != count:
            raise BaseFileError(f"{self.path} is truncated in chunk {index + 1}")
        shaped = rows.astype(np.uint16, copy=False).reshape(
            layout.rows_per_chunk, row_width(layout.n_vocab)
        )
        scale, floor = row_headers(shaped)
        bad = ~(np.isfinite(scale) & np.isfinite(floor))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise BaseFileError(
                f"{self.path} is damaged in chunk {index + 1}: row {row + 1} has scale"
                f" {float(scale[row]):g} and floor {float(floor[row]):g}, where both must be"
                " finite"
            )
        return shaped

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
