"""The `Model` protocol: what the generation loop needs from a language model.

Narrow on purpose: tokens in, logits out, and the sequences' memory. The llama.cpp
runtime (`backend.llama.runtime.LlamaRuntime`) implements it, and so does the test
suite's fake, so every front end runs the same loop (`backend.session.loop`) over
either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from backend.llama.context import Layout, Switch


class BatchEntry(NamedTuple):
    """One token of a decode batch.

    Attributes:
        token: The token id.
        pos: Its position in its sequence.
        seq_id: The sequence it belongs to (0 .. n_seq_max - 1).
    """

    token: int
    pos: int
    seq_id: int


class Model(Protocol):
    """A model the loop decodes with. One thread owns it.

    Attributes:
        n_ctx: The context size (memory cells shared by every sequence).
        n_vocab: The vocabulary's size (the logits' length).
        n_batch: The most tokens one `decode` takes.
        n_seq_max: How many sequences the memory holds at once.
        repack: Whether the weights are repacked for batched kernels (a sequence's
            logits beside others may then differ from its logits alone).
    """

    n_ctx: int
    n_vocab: int
    n_batch: int
    n_seq_max: int
    repack: bool

    # ---- tokens -------------------------------------------------------------------

    @property
    def bos(self) -> int:
        """The beginning-of-sequence token id (-1 if none)."""
        ...

    @property
    def add_bos(self) -> bool:
        """Whether a prompt starts with `bos`."""
        ...

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Token ids of `text` (no BOS added); `special` parses markers as special tokens."""
        ...

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """The bytes of one token (control tokens give b"" unless `special`)."""
        ...

    def shown_piece(self, token: int) -> str:
        """A token's text made visible for the panels (control tokens by name)."""
        ...

    def special_texts(self) -> list[str]:
        """The texts of the control tokens (chat-template markers)."""
        ...

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation."""
        ...

    @property
    def eog_ids(self) -> tuple[int, ...]:
        """Every token that ends a generation (what min_tokens bans)."""
        ...

    # ---- decoding -----------------------------------------------------------------

    def decode(self, batch: Sequence[BatchEntry]) -> None:
        """Decode one batch (at most n_batch entries); logits are computed for the
        last entry of each sequence in it.

        Raises:
            SamplescopeError: The model failed; nothing past the batch's start
                positions is left in the memory.
        """
        ...

    def logits(self, row: int = -1) -> npt.NDArray[np.float32]:
        """The logits of entry `row` of the last batch (-1: its last entry): a view the
        next `decode` overwrites."""
        ...

    # ---- the sequences' memory ----------------------------------------------------

    @property
    def seq_cells(self) -> int:
        """The cells one sequence may hold now (n_ctx in the chat's context)."""
        ...

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """Decode `n_seqs` sequences of up to `cells` tokens each from now on, laid out
        as `layout` (None: the model's own). One sequence in the model's own layout is
        the chat's context; more may be another context, each sequence in its own KV
        stream so that its logits do not depend on its neighbours.

        Returns:
            "kept" (the memory as it was), "fresh" (an empty memory) or "chat" (back
            to the chat's memory as it was left).

        Raises:
            SamplescopeError: No such context can be made.
        """
        ...

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """Drop positions [p0, p1) of `seq` (seq -1: every sequence; p1 -1: to the
        end). False when the memory cannot drop a part (then nothing changed)."""
        ...

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """Make `dst` share positions [p0, p1) of `src` (p1 -1: to the end)."""
        ...

    def seq_shift(self, seq: int, p0: int, p1: int, delta: int) -> bool:
        """Move positions [p0, p1) of `seq` by `delta`; False when the memory cannot
        (nothing changed)."""
        ...

    def clear(self) -> None:
        """Empty the memory of every sequence."""
        ...

    @property
    def lost(self) -> bool:
        """Whether the memory is gone (an RPC server failed): every sequence is empty."""
        ...

    def recover(self) -> None:
        """Make a model whose memory was lost usable again (with an empty memory).

        Raises:
            SamplescopeError: It cannot be (the message says why).
        """
        ...
