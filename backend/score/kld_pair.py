"""A text scored by a loaded model against a second model, token by token (the app's
score screen with a second model).

The loaded model is the test; the second is loaded beside it, in its own context
with the loaded model's batch size and without flash attention, as the app's own
model decodes (`samplescope kld` runs both with llama.cpp's default flash attention,
as llama-perplexity does: its figures may differ in the last digits). The rule is
`samplescope kld`'s: every position of a text under two chunks of `ctx` tokens,
llama-perplexity's chunks otherwise. The second model is freed before returning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backend.llama.runtime import LlamaRuntime
from backend.llama.utf8 import Utf8Stream
from backend.llama.vocab_match import check_same_vocabulary
from backend.score.kld import (
    KldError,
    KldResult,
    ModelBase,
    bos_of,
    load_scorer,
    plan_kld,
    run_kld,
    text_tokens,
)
from backend.session.llama_backend import LlamaBackend
from sampling.divergence import DivergenceSummary, summarize

#: Tokens a chunk (llama-perplexity's default context).
PAIR_CTX = 512
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
        base_name: The second model's file name.
    """

    result: KldResult
    summary: DivergenceSummary | None
    texts: tuple[str, ...]
    shown: dict[int, str]
    base_name: str


def token_texts(runtime: LlamaRuntime, tokens: tuple[int, ...]) -> tuple[str, ...]:
    """The text each token adds (a character split across tokens on its last one)."""
    stream = Utf8Stream()
    texts = [stream.feed(runtime.token_bytes(t)) for t in tokens]
    if texts:
        texts[-1] += stream.flush()
    return tuple(texts)


def score_against(
    test: LlamaBackend,
    base_path: Path,
    text: str,
    *,
    ctx: int = PAIR_CTX,
    top_n: int = PAIR_TOP,
) -> PairScore:
    """Score `text` with `test` against the model at `base_path`.

    Raises:
        ModelFileError: The second model cannot be loaded.
        VocabularyMismatch: The two vocabularies differ.
        KldError: The text has nothing to score or does not fit the context.
        LlamaError: llama.cpp failed.
    """
    runtime = test.runtime
    plan = plan_kld(text_tokens(runtime, text), ctx, bos_of(runtime))
    if plan.n_ctx > runtime.n_ctx:
        raise KldError(
            f"a chunk of {plan.n_ctx} tokens is more than the model's context ({runtime.n_ctx})"
        )
    base = load_scorer(
        base_path,
        plan.n_ctx,
        n_batch=runtime.n_batch,
        n_threads=runtime.n_threads,
        log_path=test.log_path,
        flash_attn=False,
        repack=runtime.repack,
    )
    try:
        check_same_vocabulary(runtime, base.runtime, ("the model", base_path.name))
        result = run_kld(test, ModelBase(base, plan), plan, top_n=top_n)
    finally:
        base.close()
    summary = summarize(result.totals) if result.totals.count >= 2 else None
    ids: set[int] = set()
    if result.candidates is not None:
        ids.update(int(t) for t in result.candidates.test_ids.ravel())
        ids.update(int(t) for t in result.candidates.base_ids.ravel())
    shown = {token: runtime.shown_piece(token) for token in ids}
    return PairScore(result, summary, token_texts(runtime, plan.tokens), shown, base_path.name)
