"""The contexts one model decodes in: the chat's, and a lockstep one sized by need.

A sequence decoded beside others gives exactly the tokens it gives alone when each
sequence has its own KV stream and the weights are not repacked (measured on
llama.cpp's CPU backend; the load's probe checks it: `Contexts.batch_invariant`).
Streams cost memory: llama.cpp gives each of n_seq_max streams n_ctx / n_seq_max
cells, so a context of four full-size streams holds four times the chat's cells. So
the chat keeps one stream of the whole context, and a job of several sequences
(compare, explore, beams, a lockstep replay) gets a second context of as many
streams as it uses, each as long as it needs (`reserve`), freed when the next
one-sequence job comes back to the chat, whose memory is left as it was. The load's
probe decodes its lockstep half before the chat's context is made, so the two KV
caches are never held at once.

`Layout.legacy` rebuilds how lockstep replies were decoded before: one unified KV
stream and repacked weights (a second copy of the model, loaded for the time; where
repacked weights crash a batch, `backend.llama.repack_probe`, the plain ones).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from backend.llama.context import BatchToken, Layout, LlamaError, LocalContext, Switch, load_model
from backend.llama.control_vector import ControlBuffer
from backend.llama.repack_probe import repack_survives

#: The fewest cells llama.cpp gives a stream (it rounds each up to a multiple).
STREAM_CELLS_STEP = 256
#: The probe `check_invariance` decodes: sequences beside each other, steps.
PROBE_SEQS = 4
PROBE_STEPS = 3
PROBE_TEXT = "The quick brown fox jumps over the lazy dog, and then"


ProbeKey = tuple[str, int, int, int, bool, bool, int, int, tuple[int, ...]]
"""What the probe's answer depends on: the weights (the file's path, size and change
time), the layers offloaded, repacked or not, flash attention, the batch, the probe's
cells and tokens."""

_PROBE_ANSWERS: dict[ProbeKey, bool] = {}
"""The probe's answers in this process: the same weights decoded the same way give the
same answer, so a model loaded again (another chat's model, the picker, a command run
in-process) is not probed again. A model with control vectors is probed every time."""


def _probe_key(
    path: Path,
    gpu_layers: int,
    repack: bool,
    flash_attn: bool,
    n_batch: int,
    n_ctx: int,
    probe: Sequence[int],
) -> ProbeKey | None:
    """The key of the probe's answer for these weights and this layout (None: the
    file cannot be read, so nothing is remembered)."""
    try:
        resolved = path.resolve()
        stat = os.stat(resolved)
    except OSError:
        return None
    return (
        str(resolved),
        stat.st_size,
        stat.st_mtime_ns,
        gpu_layers,
        repack,
        flash_attn,
        n_batch,
        probe_cells(len(probe), n_ctx),
        tuple(probe),
    )


def stream_cells(cells: int) -> int:
    """`cells` rounded up as llama.cpp rounds a stream's size."""
    step = STREAM_CELLS_STEP
    return max(step, -(-cells // step) * step)


def probe_cells(n_tokens: int, n_ctx: int) -> int:
    """The cells each of the probe's streams has for a probe of `n_tokens`."""
    return min(stream_cells(n_tokens), n_ctx)


class Contexts:
    """One model's contexts behind the runtime's `Context` interface (see the module doc).

    Args:
        model: The loaded model (not owned).
        path: Its GGUF file (a copy with other weights is loaded from it when asked).
        repack: Whether `model` was loaded with repacked weights.
        n_ctx: The chat's context size.
        n_batch: Largest batch.
        n_threads: Threads for decode and prefill.
        n_seq_max: The most sequences a job may decode at once.
        flash_attn: Flash attention as llama.cpp decides it (else off), in every context.
        probe: A short text's tokens to check batch invariance with (see
            `batch_invariant`); empty: no check.
        gpu_layers: The layers `model` has on other devices than the CPU.
        control: Control vectors every context of the model applies (None: none).

    Attributes:
        batch_invariant: Whether a sequence's logits beside others equal its logits
            alone, bit for bit (the probe's answer; None when there was no probe).

    Raises:
        LlamaError: llama.cpp could not create the chat's context.
    """

    def __init__(
        self,
        model: Any,
        path: Path,
        repack: bool,
        n_ctx: int,
        n_batch: int,
        n_threads: int,
        n_seq_max: int,
        *,
        flash_attn: bool = False,
        probe: Sequence[int] = (),
        gpu_layers: int = 0,
        control: ControlBuffer | None = None,
    ) -> None:
        self._model = model
        self._control = control
        self._path = path
        self._repack = repack
        self._n_threads = n_threads
        self._flash_attn = flash_attn
        self.n_batch = n_batch
        self.n_seq_max = n_seq_max
        key = None
        if probe and control is None:
            key = _probe_key(path, gpu_layers, repack, flash_attn, n_batch, n_ctx, probe)
        known = _PROBE_ANSWERS.get(key) if key is not None else None
        # The probe's lockstep half runs before the chat's context exists: their KV
        # caches never coexist, so the load's peak memory is the chat's alone.
        beside = self._decode_beside(probe, n_ctx) if probe and known is None else None
        self.chat = LocalContext(
            model, n_ctx, n_batch, n_threads, 1, flash_attn=flash_attn, control=control
        )
        self.n_ctx = self.chat.n_ctx
        self.n_vocab = self.chat.n_vocab
        self.batch_invariant: bool | None = known
        if probe and known is None:
            self.batch_invariant = beside is not None and self._matches_alone(probe, beside)
            if key is not None:
                _PROBE_ANSWERS[key] = self.batch_invariant
        self.placement = ""
        self.lost = False
        self._active: LocalContext = self.chat
        self._lockstep: LocalContext | None = None
        self._shape: tuple[int, int, Layout] | None = None
        self._other_model: Any = None  # the model with the other repack, while used

    # ---- layouts ------------------------------------------------------------------

    @property
    def seq_cells(self) -> int:
        """The cells one sequence may hold in the context in use."""
        return self._active.seq_cells

    def reserve(self, n_seqs: int, cells: int, layout: Layout | None = None) -> Switch:
        """Decode `n_seqs` sequences of up to `cells` tokens each from now on.

        One sequence in the model's own layout decodes in the chat's context; more (or
        another layout) in a lockstep context of `n_seqs` streams of `cells` cells
        (rounded up), kept while it is large enough.

        Raises:
            LlamaError: llama.cpp could not create the context (or load the weights).
        """
        layout = layout or Layout(repack=self._repack)
        if n_seqs <= 1 and layout.repack == self._repack and not layout.legacy:
            if self._active is self.chat:
                return "kept"
            self._free_lockstep()
            self._active = self.chat
            return "chat"
        cells = min(stream_cells(cells), self.n_ctx) if layout.streams else self.n_ctx
        if self._active is self._lockstep and self._shape is not None:
            held_seqs, held_cells, held_layout = self._shape
            if held_layout == layout and held_seqs >= n_seqs and held_cells >= cells:
                return "kept"
        self._free_lockstep()
        model = self._model
        if layout.repack != self._repack and (not layout.repack or repack_survives(self._path)):
            # Repacked weights only where they survive a batch (else the plain ones: the
            # closest this machine can rebuild).
            self._other_model = load_model(self._path, repack=layout.repack)
            model = self._other_model
        n_seqs = max(n_seqs, 1)
        self._lockstep = LocalContext(
            model,
            cells * n_seqs if layout.streams else cells,
            self.n_batch,
            self._n_threads,
            n_seqs,
            unified=not layout.streams,
            flash_attn=self._flash_attn,
            control=self._control,
        )
        self._shape = (n_seqs, self._lockstep.seq_cells, layout)
        self._active = self._lockstep
        return "fresh"

    def set_control(self, control: ControlBuffer) -> None:
        """Apply other control vectors in every context of the model, and in those it
        makes from now on (the memory then holds stale tokens: the caller clears it).

        Raises:
            ControlVectorError: llama.cpp refused them.
        """
        self._control = control
        self.chat.set_control(control)
        if self._lockstep is not None:
            self._lockstep.set_control(control)

    def _free_lockstep(self) -> None:
        if self._lockstep is not None:
            self._lockstep.close()
            self._lockstep, self._shape = None, None
        if self._other_model is not None:
            llama_cpp.llama_model_free(self._other_model)
            self._other_model = None
        self._active = self.chat

    def _decode_beside(
        self, tokens: Sequence[int], n_ctx: int
    ) -> list[npt.NDArray[np.float32]] | None:
        """The probe's first half: sequence 1's logits decoded beside others.

        All but the last `PROBE_STEPS` of `tokens` are a prompt prefilled in a context
        of `PROBE_SEQS` streams (fewer when the batch is smaller) and copied to every
        sequence, which then take `PROBE_STEPS` steps in one batch each, every
        sequence its own tokens (the probe's, shifted through the vocabulary). The
        context is freed before returning.

        The probe decodes on one thread: with OpenMP, a thread that has run a parallel
        decode makes every later decode from another thread ~2.8x slower, and the check
        runs at load, often on another thread than the one that generates (the app's).
        One thread's sums are the same as several threads' (each row is one thread's).

        Returns:
            Sequence 1's logits at each step ([] when a batch cannot hold two
            sequences: nothing to check), or None if llama.cpp failed.
        """
        steps, seqs = PROBE_STEPS, min(PROBE_SEQS, self.n_batch)
        if seqs < 2:
            return []
        prompt = list(tokens[:-steps])
        cells = probe_cells(len(tokens), n_ctx)
        try:
            context = LocalContext(
                self._model, cells * seqs, self.n_batch, 1, seqs, flash_attn=self._flash_attn
            )
        except LlamaError:
            return None
        try:
            if not _prefill(context, prompt, self.n_batch):
                return None
            for seq in range(1, seqs):
                context.seq_cp(0, seq, 0, -1)
            fed = _probe_feeds(tokens, seqs, context.n_vocab)
            beside: list[npt.NDArray[np.float32]] = []
            for step in range(steps):
                pos = len(prompt) + step
                batch = [_Entry(fed[seq][step], pos, seq) for seq in range(seqs)]
                if context.decode_batch(batch) != 0:
                    return None
                beside.append(context.logits(1).copy())
            return beside
        except LlamaError:
            return None
        finally:
            context.close()

    def _matches_alone(
        self, tokens: Sequence[int], beside: Sequence[npt.NDArray[np.float32]]
    ) -> bool:
        """The probe's second half: whether sequence 1's tokens decoded alone in the
        chat's context (on one thread, left empty) give exactly the logits `beside`."""
        if not beside:
            return True
        steps = len(beside)
        prompt = list(tokens[:-steps])
        fed = _probe_feeds(tokens, 2, self.n_vocab)[1]
        chat = self.chat
        chat.set_threads(1)
        try:
            if not _prefill(chat, prompt, self.n_batch):
                return False
            for step in range(steps):
                if chat.decode([fed[step]], len(prompt) + step, 0) != 0:
                    return False
                if not np.array_equal(chat.logits(-1), beside[step]):
                    return False
            return True
        except LlamaError:
            return False
        finally:
            chat.clear()
            chat.set_threads(self._n_threads)

    # ---- the Context interface: the context in use ----------------------------------

    def reconnect(self) -> None:
        """Nothing to do: an in-process context is never lost."""

    def decode(self, tokens: Sequence[int], start: int, seq: int) -> int:
        """`LocalContext.decode` in the context in use."""
        return self._active.decode(tokens, start, seq)

    def decode_batch(self, batch: Sequence[BatchToken]) -> int:
        """`LocalContext.decode_batch` in the context in use."""
        return self._active.decode_batch(batch)

    def decode_all(self, tokens: Sequence[int], start: int, first_row: int = 0) -> int:
        """`LocalContext.decode_all` in the chat's context (scoring a text)."""
        self.reserve(1, 0)
        return self.chat.decode_all(tokens, start, first_row)

    def logits(self, row: int) -> npt.NDArray[np.float32]:
        """`LocalContext.logits` of the context in use."""
        return self._active.logits(row)

    def all_logits(self, n: int) -> npt.NDArray[np.float32]:
        """`LocalContext.all_logits` of the chat's context."""
        return self.chat.all_logits(n)

    def seq_rm(self, seq: int, p0: int, p1: int) -> bool:
        """`LocalContext.seq_rm` in the context in use."""
        return self._active.seq_rm(seq, p0, p1)

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        """`LocalContext.seq_cp` in the context in use (across streams llama.cpp copies
        the whole stream, cell for cell)."""
        self._active.seq_cp(src, dst, p0, p1)

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        """`LocalContext.seq_add` in the context in use."""
        self._active.seq_add(seq, p0, p1, delta)

    def can_shift(self) -> bool:
        """`LocalContext.can_shift` of the context in use."""
        return self._active.can_shift()

    def clear(self) -> None:
        """Empty every context's memory."""
        self.chat.clear()
        if self._lockstep is not None:
            self._lockstep.clear()

    def close(self) -> None:
        """Free every context (idempotent; the model is the caller's)."""
        self._free_lockstep()
        self.chat.close()


def _probe_feeds(tokens: Sequence[int], seqs: int, n_vocab: int) -> list[list[int]]:
    """The tokens each probe sequence takes step by step: the probe's last
    `PROBE_STEPS`, shifted through the vocabulary by the sequence's number."""
    given = list(tokens[-PROBE_STEPS:])
    return [[(t + 7919 * seq) % n_vocab for t in given] for seq in range(seqs)]


def _prefill(context: LocalContext, tokens: Sequence[int], n_batch: int) -> bool:
    """Decode `tokens` into sequence 0 in chunks of `n_batch`; False if one failed."""
    for start in range(0, len(tokens), n_batch):
        if context.decode(tokens[start : start + n_batch], start, 0) != 0:
            return False
    return True


@dataclass(frozen=True, slots=True)
class _Entry:
    """A `BatchToken`."""

    token: int
    pos: int
    seq_id: int
