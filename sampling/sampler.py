"""The sampler: one generator, live settings, one immutable record per token."""

from __future__ import annotations

import math
import time

import numpy as np

from sampling.chain import Chain, build_chain
from sampling.engine import Candidates, Float64Array, Kept
from sampling.logits import FloatArray, checked_logits
from sampling.ordering import token_at_mass
from sampling.penalties import History
from sampling.records import Step
from sampling.rng import UniformSource, make_source
from sampling.settings import SamplerSettings
from sampling.table import candidate_table
from sampling.vocabulary import Vocabulary
from sampling.workspace import Workspace

DEFAULT_CANDIDATES = 20


def probabilities(
    logits: object,
    settings: SamplerSettings,
    history: History = (),
    *,
    vocabulary: Vocabulary | None = None,
    mirostat_mu: float | None = None,
) -> Float64Array:
    """The exact distribution a draw uses: float64 over the whole vocabulary.

    Cut tokens have probability 0.0; the rest sum to 1. XTC applies as on a step
    whose coin says so (as with `xtc_probability` 1).

    Args:
        logits: One score per vocabulary token (never modified).
        settings: The settings.
        history: Token ids so far, for the penalties and DRY.
        vocabulary: The model's token texts, for DRY's sequence breakers (without
            it no token breaks a repeat).
        mirostat_mu: Mirostat's state; 2 * mirostat_tau (its start) when None.

    Raises:
        LogitsError: The logits or the history cannot be sampled from.
    """
    candidates = Candidates(*checked_logits(logits), history, Workspace())
    candidates.vocabulary = vocabulary
    if settings.mirostat:
        candidates.mirostat_mu = 2.0 * settings.mirostat_tau if mirostat_mu is None else mirostat_mu
    kept = build_chain(settings).run(candidates)
    if kept.ids is None:
        return kept.probs
    result = np.zeros(candidates.logits.shape[0], dtype=np.float64)
    result[kept.ids] = kept.probs
    return result


class Sampler:
    """Chooses tokens from logits and reports why.

    One sampler owns one random generator. `settings` may be replaced between
    tokens (live sliders) without touching the random stream; `reset()` re-seeds
    it from `settings.seed` and restarts mirostat's mu at 2 * tau.

    Args:
        settings: The sampler's settings.
        vocab_size: When given, logits of another length are an error.
        n_candidates: How many top tokens each step's record lists.
        vocabulary: The model's token texts, for DRY's sequence breakers.
    """

    def __init__(
        self,
        settings: SamplerSettings,
        *,
        vocab_size: int | None = None,
        n_candidates: int = DEFAULT_CANDIDATES,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        if not isinstance(settings, SamplerSettings):
            raise TypeError(f"settings must be SamplerSettings, not {type(settings).__name__}")
        self._settings = settings
        self.vocab_size = vocab_size
        self.n_candidates = n_candidates
        self.tail_ranks = 0
        """How many top ranks each step also records as a `RankTail` (0: none).

        The tail plot sets it while shown: deeper ranks cost a partial sort per
        token, which a hidden plot should not make every token pay."""
        self._chain: Chain = build_chain(settings)
        self._sources: dict[str, UniformSource] = {}
        self._workspace = Workspace()
        self.vocabulary = vocabulary
        self._mu: float | None = None

    @property
    def settings(self) -> SamplerSettings:
        """The settings in force; assigning keeps the random stream going."""
        return self._settings

    @settings.setter
    def settings(self, settings: SamplerSettings) -> None:
        if not isinstance(settings, SamplerSettings):
            raise TypeError(f"settings must be SamplerSettings, not {type(settings).__name__}")
        self._chain = build_chain(settings)
        if settings.mirostat != self._settings.mirostat:
            self._mu = None  # another mirostat (or none): it starts afresh
        self._settings = settings

    @property
    def mirostat_mu(self) -> float | None:
        """Mirostat's state mu for the next step (None when mirostat is off)."""
        if not self._settings.mirostat:
            return None
        return 2.0 * self._settings.mirostat_tau if self._mu is None else self._mu

    @property
    def chain(self) -> Chain:
        """The units each step runs, built from the settings in force."""
        return self._chain

    def reset(self) -> None:
        """Re-seed the generator from `settings.seed`; restart mirostat's mu."""
        self._sources.clear()
        self._mu = None

    def _source(self) -> UniformSource:
        kind = self._settings.rng
        source = self._sources.get(kind)
        if source is None:
            source = make_source(kind, self._settings.seed)
            self._sources[kind] = source
        return source

    def sample(
        self, logits: object, history: History = (), *, uniform: float | None = None
    ) -> Step:
        """Choose the next token.

        Args:
            logits: One score per vocabulary token (never modified).
            history: Token ids so far, prompt included; the penalties see the last
                `repeat_last_n` of them.
            uniform: Draw with this uniform in [0, 1) instead of the generator's next
                one (what-if: a past step's randomness under other settings). A
                Gumbel draw, which needs one variate per token, ignores it.

        Returns:
            The step's record.

        Raises:
            LogitsError: The logits or the history cannot be sampled from.
        """
        started = time.perf_counter_ns()
        settings = self._settings
        chain = self._chain
        candidates = Candidates(*checked_logits(logits, self.vocab_size), history, self._workspace)
        candidates.vocabulary = self.vocabulary
        mu = None
        if settings.mirostat:
            mu = candidates.mirostat_mu = self.mirostat_mu
        if 0.0 < settings.xtc_probability < 1.0 and settings.xtc_threshold <= 0.5:
            candidates.xtc_roll = self._source().uniform()
        kept = chain.run(candidates)
        penalized = candidates.logits
        maximum = candidates.maximum
        draw: float | None = None
        if chain.greedy:
            token_id, prob = candidates.argmax, 1.0
        elif settings.draw == "gumbel":
            token_id, prob = self._gumbel(kept)
        elif settings.rng == "xorshift128":
            draw = self._source().uniform() if uniform is None else uniform
            token_id, prob = _roulette_in_id_order(kept, draw)
        else:
            draw = self._source().uniform() if uniform is None else uniform
            token_id, prob = _inverse_cdf(
                kept, penalized, maximum, candidates.temperature, draw, self._workspace
            )
        if mu is not None and not chain.greedy:
            # mu moves toward the target surprise: mu -= eta * (-log2 p - tau).
            self._mu = mu - settings.mirostat_eta * (-math.log2(prob) - settings.mirostat_tau)
        table, entropy, tail = candidate_table(
            penalized, maximum, kept, self.n_candidates, self._workspace, self.tail_ranks
        )
        return Step(
            token_id=token_id,
            prob=prob,
            draw=draw,
            n_kept=kept.n_kept,
            cut_by=kept.cut_by,
            entropy=entropy,
            table=table,
            elapsed_us=(time.perf_counter_ns() - started) / 1000.0,
            settings=settings,
            temperature=settings.temperature if chain.greedy else kept.temperature,
            mirostat_mu=candidates.mirostat_mu,
            tail=tail,
        )

    def _gumbel(self, kept: Kept) -> tuple[int, float]:
        """Gumbel-max over the kept tokens, with noise from the seeded generator.

        argmax(log p_i + G_i) with G_i = -log E_i (E_i standard exponential) is
        argmin(E_i / p_i): the same draw without two logarithms per token.
        """
        size = kept.probs.shape[0]
        exponentials = self._workspace.array("exponentials", size, np.float64)
        self._source().exponentials(exponentials)
        # A zero or denormal probability gives inf: that token is never the argmin.
        with np.errstate(divide="ignore", over="ignore"):
            np.divide(exponentials, kept.probs, out=exponentials)
        position = int(np.argmin(exponentials))
        token_id = position if kept.ids is None else int(kept.ids[position])
        return token_id, float(kept.probs[position])


def _inverse_cdf(
    kept: Kept,
    penalized: FloatArray,
    maximum: float,
    temperature: float,
    uniform: float,
    workspace: Workspace,
) -> tuple[int, float]:
    """The first token, in descending order, whose cumulative mass exceeds u."""
    if kept.ids is not None:
        cumulative = np.cumsum(kept.probs)
        target = uniform * float(cumulative[-1])
        position = min(int(np.searchsorted(cumulative, target, side="right")), kept.n_kept - 1)
        return int(kept.ids[position]), float(kept.probs[position])
    token_id = token_at_mass(
        penalized, maximum, temperature, kept.probs, uniform * float(kept.probs.sum()), workspace
    )
    return token_id, float(kept.probs[token_id])


def _roulette_in_id_order(kept: Kept, uniform: float) -> tuple[int, float]:
    """run.c's roulette: walk the kept tokens in token-id order."""
    if kept.ids is None:
        ids = None
        probs = kept.probs
    else:
        order = np.argsort(kept.ids)
        ids = kept.ids[order]
        probs = kept.probs[order]
    cumulative = np.cumsum(probs)
    target = uniform * float(cumulative[-1])
    position = int(np.searchsorted(cumulative, target, side="right"))
    if position >= probs.shape[0]:
        position = int(np.flatnonzero(probs)[-1])  # u * total rounded past the end
    token_id = position if ids is None else int(ids[position])
    return token_id, float(probs[position])
