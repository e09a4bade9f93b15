"""The samplers that rewrite logits before any order is read: logit bias and DRY.

Both follow llama.cpp (src/llama-sampling.cpp): `LogitBias` adds each bias to its
token's logit (-inf bans it) and always runs first; `Dry` ("Don't Repeat Yourself",
ported there from KoboldCpp) penalises every token that would extend a sequence
already seen in the last `dry_penalty_last_n` tokens by
multiplier * base ** (repeat length - allowed length), a repeat being cut short by
a sequence breaker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from sampling.engine import Candidates
from sampling.errors import LogitsError
from sampling.settings import SamplerSettings
from sampling.vocabulary import BreakerHeads, Vocabulary, breaker_heads

UnitKind = Literal["logits", "candidates"]
_FLOAT_MAX_LOG = 88.7228391


def _replace_logits(candidates: Candidates, logits: np.ndarray) -> None:
    """Hand the later units a rewritten copy of the logits, with its new maximum."""
    argmax = int(np.argmax(logits))
    maximum = float(logits[argmax])
    if maximum == -math.inf:
        raise LogitsError("the logit bias bans every token: nothing is left to sample")
    candidates.logits = logits
    candidates.argmax = argmax
    candidates.maximum = maximum


@dataclass(frozen=True, slots=True)
class LogitBias:
    """Add a bias to some tokens' logits; -inf bans a token.

    Attributes:
        token_ids: The biased tokens.
        biases: Their biases (same order).
    """

    name: ClassVar[str] = "logit_bias"
    kind: ClassVar[UnitKind] = "logits"
    token_ids: tuple[int, ...]
    biases: tuple[float, ...]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> LogitBias | None:
        """Built when some token has a bias."""
        if not settings.logit_bias:
            return None
        ids, biases = zip(*settings.logit_bias, strict=True)
        return cls(tuple(ids), tuple(biases))

    def apply(self, candidates: Candidates) -> None:
        """Replace the logits by a biased copy.

        Raises:
            LogitsError: A token id lies outside the vocabulary, or every token is banned.
        """
        logits = candidates.logits
        if self.token_ids[-1] >= logits.shape[0]:
            raise LogitsError(
                f"logit bias names token id {self.token_ids[-1]}, outside the vocabulary"
                f" of {logits.shape[0]} tokens"
            )
        biased = logits.copy()
        ids = np.asarray(self.token_ids, dtype=np.intp)
        biased[ids] += np.asarray(self.biases, dtype=logits.dtype)
        _replace_logits(candidates, biased)
        if any(bias == -math.inf for bias in self.biases):
            candidates.cut_by = self.name


@dataclass(frozen=True, slots=True)
class Dry:
    """DRY: penalise tokens that would extend a repeat of the recent history.

    Attributes:
        multiplier: The penalty's scale (> 0).
        base: The penalty's growth per token of repeat (>= 1).
        allowed_length: Repeats up to this long are not penalised.
        last_n: How many recent tokens are scanned (-1: the whole history).
        breakers: The sequence breakers, as text.
    """

    name: ClassVar[str] = "dry"
    kind: ClassVar[UnitKind] = "logits"
    multiplier: float
    base: float
    allowed_length: int
    last_n: int
    breakers: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: SamplerSettings) -> Dry | None:
        """Built when DRY is on (multiplier > 0, last-n not 0)."""
        if settings.dry_multiplier == 0.0 or settings.dry_penalty_last_n == 0:
            return None
        return cls(
            settings.dry_multiplier,
            settings.dry_base,
            settings.dry_allowed_length,
            settings.dry_penalty_last_n,
            settings.dry_sequence_breakers,
        )

    def apply(self, candidates: Candidates) -> None:
        """Subtract each extending token's penalty from a copy of the logits."""
        history = candidates.history
        window = history if self.last_n < 0 else history[len(history) - self.last_n :]
        tokens = [int(token) for token in window]
        vocabulary = candidates.vocabulary
        heads: BreakerHeads = {}
        if vocabulary is not None and self.breakers:
            heads = breaker_heads(vocabulary, self.breakers)  # type: ignore[arg-type]
        penalties = dry_penalties(tokens, heads, self.allowed_length)
        if not penalties:
            return
        max_exponent = int(_FLOAT_MAX_LOG / math.log(self.base)) if self.base > 1.000001 else 0
        logits = candidates.logits
        rewritten = logits.copy()
        for token, length in penalties.items():
            if token >= logits.shape[0]:
                continue
            exponent = length - self.allowed_length
            if max_exponent > 0 and exponent > max_exponent:
                exponent = max_exponent
            penalty = np.float32(self.multiplier * self.base**exponent)
            rewritten[token] -= penalty
        _replace_logits(candidates, rewritten)


def dry_penalties(tokens: list[int], heads: BreakerHeads, allowed_length: int) -> dict[int, int]:
    """Each token that would extend a repeat, with the longest such repeat's length.

    A port of llama.cpp's `llama_sampler_dry_apply` steps 1 to 3: the repeat is cut
    at the most recent sequence breaker, suffix matches are found with the
    Z-algorithm run backwards, and a token that is itself a whole breaker is never
    penalised.

    Args:
        tokens: The scanned window of the history, oldest first.
        heads: The breakers' head tokens and tails (see `sampling.vocabulary`).
        allowed_length: Repeats up to this long are not penalised.
    """
    count = len(tokens)
    if count <= allowed_length:
        return {}

    def rat(i: int) -> int:  # the i-th token from the end
        return tokens[count - 1 - i]

    rep_limit = count
    for i in range(count):
        tails = heads.get(rat(i))
        if tails is None:
            continue
        longest = -1
        for tail in tails:
            length = len(tail)
            if longest < length <= i and all(
                tail[offset] == rat(i - offset - 1) for offset in range(length)
            ):
                longest = length
        if longest >= 0:
            rep_limit = i - longest
            break
    if rep_limit < allowed_length:
        return {}

    repeat = [0] * count
    last = count - 1
    right = left = 0
    for k in range(1, count):
        if k > right:
            n = 0
            while n + k < count and rat(n) == rat(n + k):
                n += 1
            repeat[last - k] = min(n, rep_limit)
            if n > 0:
                left, right = k, k + n - 1
        else:
            pair = k - left
            right_part = right - k + 1
            if repeat[last - pair] < right_part:
                repeat[last - k] = min(repeat[last - pair], rep_limit)
            else:
                i = right + 1
                while i < count and rat(i) == rat(i - k):
                    i += 1
                repeat[last - k] = min(i - k, rep_limit)
                left, right = k, i - 1

    longest_by_token: dict[int, int] = {}
    for i in range(count - 1):
        length = repeat[i]
        if length >= allowed_length:
            token = rat(count - 2 - i)
            if longest_by_token.get(token, -1) < length:
                longest_by_token[token] = length
    return {
        token: length
        for token, length in longest_by_token.items()
        if () not in heads.get(token, ())
    }


__all__ = ["Dry", "LogitBias", "Vocabulary", "dry_penalties"]
