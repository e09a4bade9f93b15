"""Fuzzing `score_text` on the real model: any text (control characters, NUL, lone
combining marks, emoji, long runs) and any window, stride and number of alternatives.

A score comes back with a finite, non-positive log-probability for every token it
scores and the text's tokens in order, or one `ScoreError` line says why not.
Examples per run: 25 (each scores up to a few hundred tokens on one thread).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.score.text_score import ScoreError, score_text

if TYPE_CHECKING:
    from backend.session.llama_backend import LlamaBackend

PIECES = ["\x00", "\x1b[31m", "\r\n", "\t", "\u0301", "\u200d", "😀", "é", "<|im_end|>",
          "<|endoftext|>", " ", "a", "The sky", "\ufeff", "\U0010ffff", "}", "\\"]  # fmt: skip
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.builds(lambda piece, count: piece * count, st.sampled_from(PIECES), st.integers(1, 300)),
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    texts,
    st.one_of(st.none(), st.integers(-1, 80), st.just(4096)),
    st.one_of(st.none(), st.integers(-1, 80)),
    st.integers(0, 5),
)
def test_any_text_is_scored_or_refused_in_one_line(
    llama_backend: LlamaBackend, text: str, window: int | None, stride: int | None, top: int
) -> None:
    try:
        score = score_text(llama_backend, text, window=window, stride=stride, top_n=top)
    except ScoreError as error:
        assert "\n" not in str(error), str(error)
        return
    assert score.tokens and score.n_tokens >= 1
    assert "".join(token.text for token in score.tokens) == text or "\ufffd" in "".join(
        token.text for token in score.tokens
    )
    for token in score.tokens:
        if token.logprob is not None:
            assert math.isfinite(token.logprob) and token.logprob <= 0.0
            assert len(token.top) <= top
    assert math.isfinite(score.perplexity) and score.perplexity >= 1.0
