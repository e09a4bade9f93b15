"""A text scored against a second model in the app, as `samplescope kld` scores it.

The app's model is the base (the reference) and the second model the test, as in
`samplescope kld TEXT --model SECOND --base APP_MODEL`: both are loaded for the text
the way `kld` loads them (`load_scorer`: one sequence, chunks of `KLD_CTX` tokens,
batches of `KLD_BATCH`, llama.cpp's default flash attention, the weights as
llama-perplexity loads them where they run), in the same order and with the same
contexts, so the figures are `kld`'s to the last digit. The app's own context (flash
attention off, several sequences) is left as it is; both models are freed before
returning. The rule is `kld`'s: every position of a text under two chunks,
llama-perplexity's chunks otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from backend.llama.repack_probe import Weights, one_sequence_weights
from backend.llama.rpc import Endpoint
from backend.llama.utf8 import Utf8Stream
from backend.llama.vocab_match import check_same_vocabulary
from backend.score.kld import (
    KLD_BATCH,
    KLD_CTX,
    KldError,
    KldResult,
    ModelBase,
    bos_of,
    load_scorer,
    plan_kld,
    run_kld,
    text_tokens,
)
from sampling.analysis.divergence import DivergenceSummary, summarize

if TYPE_CHECKING:
    from backend.llama.runtime import LlamaRuntime
    from backend.session.llama_backend import LlamaBackend

#: Candidates kept of each model at each position.
PAIR_TOP = 5


@dataclass(frozen=True, slots=True)
class PairScore:
    """A text under two models.

    Attributes:
        result: Every scored position.
        summary: llama-perplexity's statistics (None under 2 positions).
        texts: The text each token of `result.plan.tokens` adds.
        shown: Every candidate's visible text, by token id.
        base_name: The base's file name (the reference: the app's model).
        test_name: The test model's file name (the second model).
        weights: How each was loaded, by role ("test", "base").
    """

    result: KldResult
    summary: DivergenceSummary | None
    texts: tuple[str, ...]
    shown: dict[int, str]
    base_name: str
    test_name: str
    weights: dict[str, Weights]


def token_texts(runtime: LlamaRuntime, tokens: tuple[int, ...]) -> tuple[str, ...]:
    """The text each token adds (a character split across tokens on its last one)."""
    stream = Utf8Stream()
    texts = [stream.feed(runtime.token_bytes(t)) for t in tokens]
    if texts:
        texts[-1] += stream.flush()
    return tuple(texts)


def score_pair(
    base_path: Path,
    test_path: Path,
    text: str,
    *,
    n_threads: int | None = None,
    log_path: str | Path | None = None,
    rpc: Sequence[Endpoint] = (),
    top_n: int = PAIR_TOP,
) -> PairScore:
    """Score `text` with the model at `test_path` against the one at `base_path`, as
    `samplescope kld TEXT --model TEST --base BASE` does with its defaults.

    Raises:
        ModelFileError: A model cannot be loaded.
        VocabularyMismatch: The two vocabularies differ.
        KldError: The text has nothing to score or does not fit a context.
        LlamaError: llama.cpp failed.
    """
    remote = bool(rpc)
    weights = {
        "test": one_sequence_weights(test_path, None, remote=remote),
        "base": one_sequence_weights(base_path, None, remote=remote),
    }

    def load(path: Path, n_ctx: int, role: str) -> LlamaBackend:
        return load_scorer(
            path,
            n_ctx,
            n_batch=KLD_BATCH,
            n_threads=n_threads,
            log_path=log_path,
            rpc=rpc,
            repack=weights[role].repack,
        )

    backends: list[LlamaBackend] = []
    try:
        test = load(test_path, KLD_CTX, "test")
        backends.append(test)
        tokens = text_tokens(test.runtime, text)
        plan = plan_kld(tokens, KLD_CTX, bos_of(test.runtime))
        if plan.n_ctx > test.runtime.n_ctx:  # a short text longer than one context
            backends.remove(test)
            test.close()
            test = load(test_path, plan.n_ctx, "test")
            backends.append(test)
        if plan.n_ctx > test.runtime.n_ctx:
            raise KldError(
                f"a chunk of {plan.n_ctx} tokens is more than {test_path.name}'s context"
                f" ({test.runtime.n_ctx})"
            )
        base = load(base_path, plan.n_ctx, "base")
        backends.append(base)
        check_same_vocabulary(base.runtime, test.runtime, ("the model", test_path.name))
        result = run_kld(test, ModelBase(base, plan), plan, top_n=top_n)
        texts = token_texts(test.runtime, plan.tokens)
        ids: set[int] = set()
        if result.candidates is not None:
            ids.update(int(t) for t in result.candidates.test_ids.ravel())
            ids.update(int(t) for t in result.candidates.base_ids.ravel())
        shown = {token: test.runtime.shown_piece(token) for token in ids}
    finally:
        for backend in backends:
            backend.close()
    summary = summarize(result.totals) if result.totals.count >= 2 else None
    return PairScore(result, summary, texts, shown, base_path.name, test_path.name, weights)
