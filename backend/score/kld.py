"""KL divergence of a test model from a base model on a text, as `llama-perplexity
--kl-divergence` computes it, token by token.

The rule is llama-perplexity's: the text (BOS first when the model adds one) is cut
into chunks of n_ctx tokens; each chunk is decoded alone from an empty memory with
its first token replaced by BOS, and only its second half is scored (the rows of
positions n_ctx // 2 .. n_ctx - 2, each predicting the next token), so every scored
token has at least half a context before it. A text under two contexts is scored on
every position instead, in one pass from BOS. The base's rows are compressed as
llama-perplexity stores them (`sampling.analysis.logprob_codec`) whether they come from a
model or from its file, so both give the same figures.

Memory: the base's compressed rows of one chunk, and one batch of the test model's
logits at a time; the per-position results are a few numbers each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from backend.llama.repack_probe import one_sequence_weights
from backend.llama.rpc import Endpoint
from backend.score.base_file import BaseFileLayout, BaseFileReader, BaseFileWriter
from sampling.analysis.candidate_pairs import CandidatePairs, candidate_pairs
from sampling.analysis.divergence import DivergenceTotals, PositionDivergence, compare_rows
from sampling.analysis.logprob_codec import encode_rows, row_width
from sampling.errors import SamplescopeError

if TYPE_CHECKING:
    from backend.llama.runtime import LlamaRuntime
    from backend.session.llama_backend import LlamaBackend


class KldError(SamplescopeError):
    """A KL divergence cannot be computed as asked; the message says why."""


#: The smallest context samplescope creates (a shorter chunk runs in one of these).
MIN_CONTEXT = 16
#: Tokens a chunk by default (llama-perplexity's default context).
KLD_CTX = 512
#: Tokens decoded at once by default (llama-perplexity's micro-batch: a chunk of 512
#: is decoded in one).
KLD_BATCH = 512


def load_scorer(
    path: Path,
    n_ctx: int,
    *,
    n_batch: int,
    n_threads: int | None = None,
    n_gpu_layers: int | None = None,
    log_path: str | Path | None = None,
    rpc: Sequence[Endpoint] = (),
    flash_attn: bool = True,
    repack: bool | None = None,
) -> LlamaBackend:
    """A model that scores chunks of `n_ctx` as llama-perplexity does: one sequence,
    llama.cpp's default flash attention (`flash_attn` False: off, as the app's own
    model decodes), batches of at most `n_batch`, the weights repacked for llama.cpp's
    CPU kernels (`repack` None: as llama-perplexity loads them, where the repacked
    kernels run here, `one_sequence_weights`; True or False: as asked).

    Raises:
        ModelFileError: The file is missing or not a usable GGUF.
        LlamaError: llama.cpp could not load it.
    """
    size = max(n_ctx, MIN_CONTEXT)
    if repack is None:
        repack = one_sequence_weights(path, None, remote=bool(rpc)).repack
    from backend.session.llama_backend import LlamaBackend  # llama.cpp: only to load one

    return LlamaBackend.load(
        path,
        n_threads=n_threads,
        n_ctx=size,
        n_batch=min(n_batch, size),
        n_gpu_layers=n_gpu_layers,
        log_path=log_path,
        rpc=rpc,
        n_seq_max=1,
        flash_attn=flash_attn,
        repack=repack,
    )


@dataclass(frozen=True, slots=True)
class KldPlan:
    """How a text is cut and which positions are scored.

    Attributes:
        tokens: The text's tokens as llama-perplexity lists them (BOS first when the
            model adds one); only the first n_chunk * n_ctx are used.
        n_ctx: Tokens per chunk.
        n_chunk: Chunks.
        first: The first scored row of a chunk (it predicts the token after it).
        bos: The token each chunk's first position is decoded as (None: as it is).
        every_position: The short-text rule: one chunk, every position scored.
    """

    tokens: tuple[int, ...]
    n_ctx: int
    n_chunk: int
    first: int
    bos: int | None
    every_position: bool

    @property
    def rows_per_chunk(self) -> int:
        """Scored positions per chunk."""
        return self.n_ctx - 1 - self.first

    @property
    def n_scored(self) -> int:
        """Scored positions in all."""
        return self.n_chunk * self.rows_per_chunk

    def chunk(self, index: int) -> list[int]:
        """Chunk `index` as decoded: its first token replaced by BOS."""
        start = index * self.n_ctx
        tokens = list(self.tokens[start : start + self.n_ctx])
        if self.bos is not None:
            tokens[0] = self.bos
        return tokens

    def targets(self, index: int) -> npt.NDArray[np.int64]:
        """The tokens chunk `index`'s scored rows predict."""
        start = index * self.n_ctx
        return np.asarray(self.tokens[start + self.first + 1 : start + self.n_ctx], np.int64)

    def positions(self, index: int) -> npt.NDArray[np.int64]:
        """Where in `tokens` the tokens chunk `index` scores are."""
        start = index * self.n_ctx + self.first + 1
        return np.arange(start, start + self.rows_per_chunk, dtype=np.int64)

    def layout(self, n_vocab: int) -> BaseFileLayout:
        """The base file this plan writes (the chunk rule only)."""
        return BaseFileLayout(
            self.n_ctx, n_vocab, self.n_chunk, self.tokens[: self.n_chunk * self.n_ctx]
        )

    def describe(self) -> str:
        """Which rule was used, in one line."""
        if self.every_position:
            return (
                f"every position: the text ({len(self.tokens)} tokens, under two contexts) in"
                f" one pass{' from BOS' if self.bos is not None else ''},"
                f" {self.n_scored} tokens scored"
            )
        return (
            f"llama-perplexity's: {self.n_chunk} chunks of {self.n_ctx} tokens, each decoded"
            f"{' from BOS' if self.bos is not None else ''}, the second half of each scored"
            f" ({self.rows_per_chunk} a chunk, {self.n_scored} in all)"
        )


def text_tokens(runtime: LlamaRuntime, text: str) -> list[int]:
    """`text`'s tokens as llama-perplexity takes them: BOS first when the model adds
    one, the text as plain text (no special markers)."""
    prefix = [runtime.bos] if runtime.add_bos and runtime.bos >= 0 else []
    return prefix + runtime.tokenize(text, special=False)


def bos_of(runtime: LlamaRuntime) -> int | None:
    """The token a chunk starts with (None: the model adds no BOS)."""
    return runtime.bos if runtime.add_bos and runtime.bos >= 0 else None


def plan_kld(tokens: Sequence[int], n_ctx: int, bos: int | None) -> KldPlan:
    """llama-perplexity's chunks for a text of at least two contexts, else every position.

    Raises:
        KldError: The context is too small or the text has nothing to score.
    """
    if n_ctx < 4:
        raise KldError(f"invalid context {n_ctx}: expected at least 4 tokens a chunk")
    if len(tokens) >= 2 * n_ctx:
        return KldPlan(tuple(tokens), n_ctx, len(tokens) // n_ctx, n_ctx // 2, bos, False)
    if len(tokens) < 2:
        raise KldError(
            f"the text is {len(tokens)} token{'s' if len(tokens) != 1 else ''}"
            f"{' with BOS' if bos is not None else ''}: there is nothing to score"
        )
    return KldPlan(tuple(tokens), len(tokens), 1, 0, bos, True)


def plan_from_file(layout: BaseFileLayout, bos: int | None) -> KldPlan:
    """The plan a base file was written with."""
    return KldPlan(layout.tokens, layout.n_ctx, layout.n_chunk, layout.n_ctx // 2, bos, False)


class BaseRows(Protocol):
    """Where the base's stored rows of each chunk come from."""

    def chunk_rows(self, index: int) -> npt.NDArray[np.uint16]:
        """Chunk `index`'s (rows_per_chunk, row width) stored rows."""
        ...


class ModelBase:
    """The base's rows decoded from a model, optionally written to a base file."""

    def __init__(
        self, backend: LlamaBackend, plan: KldPlan, writer: BaseFileWriter | None = None
    ) -> None:
        self.backend = backend
        self.plan = plan
        self.writer = writer

    def chunk_rows(self, index: int) -> npt.NDArray[np.uint16]:
        """Decode chunk `index` and compress its scored rows (written to the file)."""
        plan = self.plan
        rows = np.empty((plan.rows_per_chunk, row_width(self.backend.runtime.n_vocab)), np.uint16)
        for offset, logits in chunk_logits(self.backend, plan, index):
            rows[offset : offset + logits.shape[0]] = encode_rows(logits)
        if self.writer is not None:
            self.writer.write_chunk(rows)
        return rows


class FileBase:
    """The base's rows read from a base file."""

    def __init__(self, reader: BaseFileReader) -> None:
        self.reader = reader

    def chunk_rows(self, index: int) -> npt.NDArray[np.uint16]:
        """Chunk `index`'s rows as stored."""
        return self.reader.read_chunk(index)


def chunk_logits(
    backend: LlamaBackend, plan: KldPlan, index: int
) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
    """Decode chunk `index` from an empty memory and yield its scored rows' logits in
    batches: (offset among the chunk's scored rows, a view valid until the next step).
    """
    runtime = backend.runtime
    chunk = plan.chunk(index)
    if len(chunk) > runtime.n_ctx:
        raise KldError(f"internal: a chunk of {len(chunk)} in a context of {runtime.n_ctx}")
    last = plan.n_ctx - 2  # the last row that predicts a token of the chunk
    backend.reset()
    for begin in range(0, len(chunk), runtime.n_batch):
        piece = chunk[begin : begin + runtime.n_batch]
        first_row = min(max(0, plan.first - begin), len(piece) - 1)
        runtime.decode_every_row(piece, begin, first_row)
        lo = begin + first_row  # position of the first row with logits
        hi = min(begin + len(piece) - 1, last)
        if lo < plan.first or lo > hi:
            continue
        rows = runtime.all_logits(len(piece) - first_row)
        yield lo - plan.first, rows[: hi - lo + 1]


@dataclass(frozen=True, slots=True)
class KldResult:
    """Every scored position and the running totals.

    Attributes:
        plan: How the text was cut.
        positions: Where in `plan.tokens` each scored token is.
        token_ids: The scored tokens.
        divergence: Their figures, one entry per scored token.
        totals: llama-perplexity's sums (`sampling.analysis.divergence.summarize` them).
        candidates: Both models' most probable tokens at each (None: not asked).
    """

    plan: KldPlan
    positions: npt.NDArray[np.int64]
    token_ids: npt.NDArray[np.int64]
    divergence: PositionDivergence
    totals: DivergenceTotals
    candidates: CandidatePairs | None = None


def run_kld(
    test: LlamaBackend,
    base: BaseRows,
    plan: KldPlan,
    on_chunk: Callable[[int, DivergenceTotals], None] | None = None,
    top_n: int = 0,
) -> KldResult:
    """Compare `test` with `base` on every chunk of `plan`.

    Args:
        test: The model under test (its context at least `plan.n_ctx`).
        base: The base's rows (a model's or a file's).
        plan: The chunks and scored positions.
        on_chunk: Called after each chunk with its index and the totals so far.
        top_n: Keep both models' `top_n` most probable tokens at each position (0: none).

    Raises:
        LlamaError: llama.cpp failed.
        BaseFileError: The base file cannot be read or written.
    """
    totals = DivergenceTotals()
    parts: list[PositionDivergence] = []
    tops: list[CandidatePairs] = []
    try:
        for index in range(plan.n_chunk):
            base_rows = base.chunk_rows(index)
            targets = plan.targets(index)
            for offset, logits in chunk_logits(test, plan, index):
                end = offset + logits.shape[0]
                part = compare_rows(logits, base_rows[offset:end], targets[offset:end])
                totals.add(part)
                parts.append(part)
                if top_n > 0:
                    tops.append(candidate_pairs(logits, base_rows[offset:end], top_n))
            if on_chunk is not None:
                on_chunk(index, totals)
    finally:
        test.reset()
    positions = np.concatenate([plan.positions(i) for i in range(plan.n_chunk)])
    tokens = np.asarray(plan.tokens, np.int64)[positions]
    divergence = PositionDivergence.concatenate(parts, test.runtime.n_vocab)
    candidates = CandidatePairs.concatenate(tops, top_n) if top_n > 0 else None
    return KldResult(plan, positions, tokens, divergence, totals, candidates)
