"""Score any text: each token's log-probability, rank, entropy and top alternatives
under the model's raw distribution (temperature 1, no filter), and the perplexity.

A text is decoded in batches with logits for every position (one batched pass, as
`llama-perplexity` and llama-cpp-python's `logits_all` do), so its figures are those
of a prefill, not of a token-at-a-time decode: the two differ in llama.cpp.

A text longer than the context is scored in windows of `window` tokens that advance
by `stride`: the first window scores every token it holds, each later one only the
`stride` tokens past the previous window, each with at least `window - stride` tokens
before it. With a BOS token, every window begins with it (as `llama-perplexity`
does), so the first token of the text is scored too.

A text with thinking tags (`backend.score.text_sections`) is scored whole and by
section: each section's scored tokens, log-probability and perplexity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from backend.llama.utf8 import Utf8Stream
from backend.score.text_sections import text_sections
from sampling.analysis.section_sums import SectionSum, section_sums
from sampling.analysis.token_scores import perplexity, score_rows
from sampling.errors import SamplescopeError
from sampling.sections import Section, SectionTracker

if TYPE_CHECKING:
    from backend.llama.runtime import LlamaRuntime
    from backend.session.llama_backend import LlamaBackend

#: Alternatives kept per token.
TOP_ALTERNATIVES = 5


class ScoreError(SamplescopeError):
    """A text cannot be scored as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class Alternative:
    """One of the most probable tokens at a position."""

    token_id: int
    text: str
    logprob: float


@dataclass(frozen=True, slots=True)
class TokenScore:
    """One token of the text and how the model judged it.

    Attributes:
        token_id: The token.
        text: The text it adds (a character split across tokens shows on the last one).
        logprob: log p(token | the tokens before it), nats; None for a first token
            nothing predicts (no BOS).
        rank: 1 for the most probable token (ties: lower id first); None when not scored.
        entropy: Entropy of the distribution it came from, nats; None when not scored.
        top: The most probable tokens at its position, most probable first.
    """

    token_id: int
    text: str
    logprob: float | None
    rank: int | None
    entropy: float | None
    top: tuple[Alternative, ...]


@dataclass(frozen=True, slots=True)
class TextScore:
    """A scored text.

    Attributes:
        tokens: Every token of the text, in order.
        window: Tokens per window (BOS included).
        stride: How far each window advances (0: one window held the whole text).
        bos: Whether each window began with a BOS token.
        sections: Each token's section when the text has a thinking; empty when not.
    """

    tokens: tuple[TokenScore, ...]
    window: int
    stride: int
    bos: bool
    sections: tuple[Section, ...] = ()

    @property
    def n_tokens(self) -> int:
        """How many tokens were scored."""
        return sum(1 for token in self.tokens if token.logprob is not None)

    @property
    def logprob(self) -> float:
        """The scored tokens' total log-probability, nats."""
        return sum(token.logprob for token in self.tokens if token.logprob is not None)

    @property
    def perplexity(self) -> float:
        """exp(−mean log-probability) over the scored tokens."""
        return perplexity(self.logprob, self.n_tokens)

    def section_logprobs(self) -> tuple[SectionSum, ...]:
        """The thinking's scored tokens and their log-probability, then the answer's;
        none for a text that does not think."""
        if not self.sections:
            return ()
        return section_sums(self.sections, (token.logprob for token in self.tokens))


def score_text(
    backend: LlamaBackend,
    text: str,
    *,
    window: int | None = None,
    stride: int | None = None,
    top_n: int = TOP_ALTERNATIVES,
    tracker: SectionTracker | None = None,
) -> TextScore:
    """Score `text` (tokenized as plain text, no special markers) with `runtime`'s model.

    The backend's memory is emptied before each window and after (through the
    backend, so that what its memory says it holds stays true for the next reply).

    Args:
        backend: The loaded model.
        text: The text.
        window: Tokens per window (default and most: the context size).
        stride: How far windows advance; None: the text must fit in one window.
        top_n: Alternatives kept per token.
        tracker: The thinking's tags, to score each section apart (None: not).

    Raises:
        ScoreError: The text is empty, has nothing to score, or is longer than one
            window and no stride was given; a window or stride is out of range.
        LlamaError: llama.cpp failed.
    """
    runtime = backend.runtime
    tokens = runtime.tokenize(text, special=False)
    if not tokens:
        raise ScoreError("the text is empty: there is nothing to score")
    prefix = [runtime.bos] if runtime.add_bos and runtime.bos >= 0 else []
    if not prefix and len(tokens) < 2:
        raise ScoreError(
            "the text is one token and the model has no BOS token to predict it from:"
            " there is nothing to score"
        )
    size = runtime.n_ctx if window is None else window
    if not len(prefix) + 2 <= size <= runtime.n_ctx:
        raise ScoreError(
            f"invalid window {size}: expected {len(prefix) + 2} to the context size {runtime.n_ctx}"
        )
    per_window = size - len(prefix)  # text tokens a window holds
    if stride is None:
        if len(tokens) > per_window:
            raise ScoreError(
                f"the text is {len(tokens)} tokens, more than a window of {size}"
                f" (the context is {runtime.n_ctx}): give --stride N to score it in windows"
                f" (e.g. --stride {max(1, size // 2)})"
            )
        step = 0
    else:
        # Without a BOS a window's first token is context only: it cannot be scored.
        largest = per_window - (0 if prefix else 1)
        if not 1 <= stride <= largest:
            raise ScoreError(
                f"invalid stride {stride}: expected 1 to {largest} for a window of {size}"
            )
        step = stride if len(tokens) > per_window else 0
    scored: dict[int, tuple[float, int, float, tuple[tuple[int, float], ...]]] = {}
    try:
        for start in _window_starts(len(tokens), per_window, step):
            end = min(start + per_window, len(tokens))
            _score_window(backend, prefix, tokens, start, end, scored, top_n)
    finally:
        backend.reset()
    sections = text_sections(tracker, text, (runtime.token_bytes(t) for t in tokens))
    return TextScore(_token_scores(runtime, tokens, scored), size, step, bool(prefix), sections)


def _window_starts(n_tokens: int, per_window: int, stride: int) -> list[int]:
    """Where each window's text begins: the last one reaches the end of the text."""
    if stride == 0 or n_tokens <= per_window:
        return [0]
    starts = [0]
    while starts[-1] + per_window < n_tokens:
        starts.append(starts[-1] + stride)
    return starts


def _score_window(
    backend: LlamaBackend,
    prefix: list[int],
    tokens: list[int],
    start: int,
    end: int,
    scored: dict[int, tuple[float, int, float, tuple[tuple[int, float], ...]]],
    top_n: int,
) -> None:
    """Decode prefix + tokens[start:end] and score the text tokens not yet scored."""
    backend.reset()
    runtime = backend.runtime
    window = prefix + tokens[start:end]
    offset = start - len(prefix)  # text index of window position 0
    for chunk in range(0, len(window), runtime.n_batch):
        piece = window[chunk : chunk + runtime.n_batch]
        runtime.decode_every_row(piece, chunk)
        rows = runtime.all_logits(len(piece))
        # Row j (window position chunk + j) predicts the window's next token; the
        # tokens scored so far are a prefix of the text, so the rows wanted are a run.
        first = max(0, len(scored) + (0 if prefix else 1) - offset - chunk - 1)
        last = min(len(piece), len(window) - 1 - chunk)
        if first >= last:
            continue
        wanted = range(first, last)
        targets = [window[chunk + j + 1] for j in wanted]
        result = score_rows(rows[first:last], targets, top_n)
        for k, j in enumerate(wanted):
            top = tuple(
                (int(t), float(lp))
                for t, lp in zip(result.top_ids[k], result.top_logprobs[k], strict=True)
            )
            scored[offset + chunk + j + 1] = (
                float(result.logprob[k]),
                int(result.rank[k]),
                float(result.entropy[k]),
                top,
            )


def _token_scores(
    runtime: LlamaRuntime,
    tokens: list[int],
    scored: dict[int, tuple[float, int, float, tuple[tuple[int, float], ...]]],
) -> tuple[TokenScore, ...]:
    stream = Utf8Stream()
    result = []
    for index, token in enumerate(tokens):
        text = stream.feed(runtime.token_bytes(token))
        if index == len(tokens) - 1:
            text += stream.flush()
        found = scored.get(index)
        if found is None:
            result.append(TokenScore(token, text, None, None, None, ()))
            continue
        logprob, rank, entropy, top = found
        alternatives = tuple(
            Alternative(t, runtime.token_bytes(t).decode("utf-8", "replace"), lp) for t, lp in top
        )
        result.append(TokenScore(token, text, logprob, rank, entropy, alternatives))
    return tuple(result)
