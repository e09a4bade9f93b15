"""Beam search, a strategy of the loop: W sequences decoded in lockstep, forked by `seq_cp`.

Beams are ranked by their cumulative log-probability under the chain's
probabilities: at each step a beam's next-token distribution is the one the
sampler would draw from with the reply's settings (`sampling.sampler.probabilities`:
penalties, filters and temperature applied, cut tokens at 0), so temperature 1 with
nothing cut ranks by the model's own probabilities, and the filters bound which
tokens a beam may take. A token's probability is its step record's `prob`: a beam's
log-probability is the sum of the logs of its steps' `prob`.

The prompt is prepared as every generation's is (`Session.prepare`: fitted, then
prefilled into sequence 0 reusing what the memory holds). Then the search is a strategy
of the loop (`backend.session.strategy`): each step it names the next token of every
live beam, and the loop decodes them in one batch (one `llama_decode`); a beam whose
parent has another child already gets a free sequence that copies the parent's
(llama.cpp's `seq_cp`: the cells are shared, not computed again).

As in Hugging Face's beam search, every step looks at the 2W best continuations:
an end-of-generation token among the first W finishes a hypothesis, the others
carry on until W beams do; a finished hypothesis scores `logprob / length **
length_penalty` (the length counts its end token). The search stops when W
hypotheses are finished and no live beam's score can beat the worst of them (exact
with no length penalty: a log-probability only falls), or at max_tokens.

Phrase bans (`backend.session.phrase_bans.PhraseBans`) need no going back here: a
continuation whose text would complete a banned phrase is not a candidate (the next
most probable ones are looked at instead), so no beam ever holds one. A beam whose
every continuation would is a dead end; when every beam is, the search ends there
(reason "banned") with the best of them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from backend.chat.events import GenerationStats
from backend.chat.protocol import ChatMessage
from backend.llama.utf8 import Utf8Stream
from backend.session.backend import SessionBackend
from backend.session.beam_result import Beam, BeamEnd, BeamSearch, BeamSearchError, SearchEnd
from backend.session.model import Model
from backend.session.one_distribution import refuse_second_distribution
from backend.session.phrase_bans import PhraseBans
from backend.session.session import Room
from backend.session.strategy import Decodes, Extend, Plan, run_quietly
from sampling.chain import build_chain
from sampling.records import Step
from sampling.sampler import Sampler, probabilities
from sampling.settings.record import SamplerSettings


@dataclass(slots=True)
class _Live:
    """A live beam: its sequence, its tokens and steps so far, and its text."""

    seq_id: int
    token_ids: list[int]
    steps: list[Step]
    logprob: float
    logits: np.ndarray | None = None
    """Its next token's logits (None until its last token is decoded)."""
    fork_from: int | None = None
    """The sequence its own copies (its parent's) before its last token is decoded."""
    text: str = ""
    pending: bytes = b""
    """The bytes of a character its last tokens began and did not finish."""


def beam_search(
    backend: SessionBackend,
    messages: Sequence[ChatMessage],
    settings: SamplerSettings,
    *,
    width: int,
    max_tokens: int,
    length_penalty: float = 0.0,
    raw: bool = False,
    cancel: threading.Event | None = None,
    on_step: Callable[[int, Sequence[Beam]], None] | None = None,
    bans: PhraseBans | None = None,
    lockstep: bool = True,
) -> BeamSearch:
    """Search the `width` most probable replies to `messages` (see the module doc).

    Args:
        backend: The model and its memory (sequence 0 ends up holding the prompt).
        messages: The conversation.
        settings: The chain whose probabilities rank the beams.
        width: How many beams (at most the model's sequences).
        max_tokens: The longest hypothesis.
        length_penalty: The exponent of the length dividing a finished
            hypothesis's log-probability (0: none; above 0 favours longer ones).
        raw: The last message's text is continued without the chat template.
        cancel: When set, stop after the current step.
        on_step: Called after each step with the step's number and the live beams.
        bans: Phrases no beam may hold (continuations completing one are passed over).
        lockstep: Decode every live beam in one batch a step (else one beam a
            `llama_decode`: the reference the lockstep search equals, each beam in its
            own KV stream).

    Raises:
        BeamSearchError: The width or the settings cannot be searched with.
        SamplescopeError: The prompt or the model failed.
    """
    check_beam_search(backend.model, settings, width, max_tokens, length_penalty)
    search = _Search(backend, settings, width, max_tokens, length_penalty, cancel, on_step)
    search.bans = bans if bans else None
    search.lockstep = lockstep
    return search.run(messages, raw)


def check_beam_search(
    model: Model,
    settings: SamplerSettings,
    width: int,
    max_tokens: int,
    length_penalty: float = 0.0,
) -> None:
    """Refuse a search `beam_search` cannot run (before anything is decoded or saved).

    Raises:
        BeamSearchError: The width, the length or the settings cannot be searched with.
    """
    if not 1 <= width <= model.n_seq_max:
        raise BeamSearchError(
            f"invalid width {width}: this model holds 1 to {model.n_seq_max} sequences at once"
        )
    if max_tokens < 1:
        raise BeamSearchError(f"invalid max_tokens={max_tokens}: expected at least 1")
    if not math.isfinite(length_penalty):
        raise BeamSearchError(f"invalid length_penalty={length_penalty}: expected a finite number")
    if settings.greedy:
        raise BeamSearchError(
            "beam search ranks by the chain's probabilities, and at temperature 0 the chain "
            "keeps one token: use a temperature above 0 (1: the model's own probabilities)"
        )
    refuse_second_distribution(settings, "beam search", BeamSearchError)
    keeping = build_chain(settings).keeping_state
    if keeping:
        raise BeamSearchError(
            "beam search needs a chain without state, and "
            + " and ".join(keeping)
            + (" keeps" if len(keeping) == 1 else " keep")
            + " state from draw to draw: switch "
            + ("it" if len(keeping) == 1 else "them")
            + " off"
        )


class _Search:
    """One beam search's state (see `beam_search`)."""

    def __init__(
        self,
        backend: SessionBackend,
        settings: SamplerSettings,
        width: int,
        max_tokens: int,
        length_penalty: float,
        cancel: threading.Event | None,
        on_step: Callable[[int, Sequence[Beam]], None] | None,
    ) -> None:
        self.backend = backend
        self.model = backend.model
        self.memory = backend.session.memory
        self.clock = backend.session.clock
        self.settings = settings
        self.width = width
        self.max_tokens = max_tokens
        self.length_penalty = length_penalty
        self.cancel = cancel
        self.on_step = on_step
        self.sampler = Sampler(settings, vocab_size=self.model.n_vocab, vocabulary=self.model)
        self.finished: list[Beam] = []
        self.pruned: list[Beam] = []
        self.sampler_us = 0.0
        self.bans: PhraseBans | None = None
        self.banned = 0
        self.dead_ends: list[Beam] = []
        self.lockstep = True

    def score(self, logprob: float, length: int) -> float:
        """A hypothesis's rank: its log-probability over its length to the penalty."""
        return logprob / (length**self.length_penalty) if self.length_penalty else logprob

    def _beam(self, live: _Live, reason: BeamEnd, pruned_at: int | None = None) -> Beam:
        return Beam(
            tuple(live.token_ids),
            tuple(live.steps),
            live.logprob,
            self.score(live.logprob, len(live.token_ids)),
            reason,
            pruned_at,
        )

    def run(self, messages: Sequence[ChatMessage], raw: bool) -> BeamSearch:
        backend, memory = self.backend, self.memory
        started = self.clock()
        prepared, notices = backend.session.prepare_quietly(
            lambda: backend.fit_prompt(messages, self.max_tokens, raw),
            self.max_tokens,
            Room(streams=self.width),
        )
        prompt = prepared.prompt
        prefill_ms = (self.clock() - started) * 1000
        decode_started = self.clock()
        counts = Decodes()
        try:
            reason, live, step = run_quietly(
                memory, self._search(), lockstep=self.lockstep, counts=counts
            )
        finally:
            memory.drop_others()
            memory.keep(len(prompt))
            cached = len(memory.tokens())
            memory.reserve(1, 0)  # the beams' context is freed: the chat's comes back
        if reason == "eos":  # the finished ones cannot be beaten: the live ones go
            self.pruned += [self._beam(b, "pruned", len(b.token_ids)) for b in live]
            live = []
        ended = [self._beam(b, reason) for b in live]
        ranked = sorted(self.finished + ended, key=lambda b: b.score, reverse=True)
        if not ranked:  # every beam ran into banned phrases: the best of them, there
            ranked = sorted(self.dead_ends, key=lambda b: b.score, reverse=True)
            self.pruned = [b for b in self.pruned if b.reason != "banned"]
            reason = "banned"
        kept = ranked[: self.width]
        self.pruned += [
            replace(b, reason="pruned", pruned_at=len(b.token_ids)) for b in ranked[self.width :]
        ]
        best = kept[0]
        decode_ms = (self.clock() - decode_started) * 1000
        n = len(best.token_ids)
        stats = GenerationStats(
            prompt_tokens=len(prompt),
            prefilled_tokens=prepared.prefilled,
            prefill_ms=prefill_ms,
            ttft_ms=prefill_ms,
            decode_tokens=n,
            decode_ms=decode_ms,
            decode_tps=counts.tokens / (decode_ms / 1000) if decode_ms > 0 else 0.0,
            sampler_us=self.sampler_us,
            cached_tokens=cached,
            discarded_tokens=max(0, counts.tokens - n),
        )
        return BeamSearch(
            tuple(kept),
            tuple(self.pruned),
            stats,
            step,
            notices,
            reason,
            self.banned,
            self.length_penalty,
        )

    def _search(self) -> Generator[Plan, list[np.ndarray], tuple[SearchEnd, list[_Live], int]]:
        """The strategy: each step the live beams' next tokens, until the search ends.

        Returns (as the generator's value): why it ended, the live beams then, and how
        many steps ran.
        """
        live = [_Live(0, [], [], 0.0, logits=self.model.logits(-1))]
        step = 0
        while True:
            live = self._expand(live)
            step += 1
            if self.on_step is not None:
                self.on_step(step, [self._beam(b, "live") for b in live])
            if not live or self._done(live):
                return "eos", live, step
            if step >= self.max_tokens:
                return "max_tokens", live, step
            if self.cancel is not None and self.cancel.is_set():
                return "cancelled", live, step
            # A copy holds as many cells as the sequence it copies.
            held = {b.seq_id if b.fork_from is None else b.fork_from: 1 for b in live}
            if not self.memory.fits(held):
                return "context_full", live, step
            plan = [Extend(b.seq_id, (b.token_ids[-1],), b.fork_from) for b in live]
            logits = yield Plan(plan)
            for beam, row in zip(live, logits, strict=True):
                beam.logits, beam.fork_from = row, None

    def _done(self, live: list[_Live]) -> bool:
        """Whether W hypotheses are finished and no live beam can beat the worst."""
        if len(self.finished) < self.width:
            return False
        worst = sorted((b.score for b in self.finished), reverse=True)[self.width - 1]
        best_live = max(self.score(b.logprob, len(b.token_ids) + 1) for b in live)
        return best_live <= worst

    def _expand(self, live: list[_Live]) -> list[_Live]:
        """The next beams: the best continuations of the live ones (one token each)."""
        model, width = self.model, self.width
        scored: list[tuple[float, int, int, float]] = []  # (logprob, beam, token, prob)
        for number, beam in enumerate(live):
            assert beam.logits is not None
            logits = beam.logits
            history = self.memory.tokens(beam.seq_id)
            probs = probabilities(
                logits,
                self.settings,
                history,
                vocabulary=model,
                generated=len(beam.token_ids),
                end_of_generation=model.eog_ids,
            )
            for token, p in self._candidates(beam, probs):
                scored.append((beam.logprob + math.log(p), number, token, p))
        scored.sort(key=lambda c: (-c[0], c[1], c[2]))
        chosen: list[tuple[int, int, float, float]] = []  # (beam, token, prob, logprob)
        for rank, (logprob, number, token, p) in enumerate(scored[: 2 * width]):
            if model.is_eog(token):
                if rank < width:
                    chosen.append((number, token, p, logprob))
            elif sum(1 for c in chosen if not model.is_eog(c[1])) < width:
                chosen.append((number, token, p, logprob))
        steps = self._steps(live, {c[0] for c in chosen})
        children: list[_Live] = []
        taken: set[int] = set()
        for number, token, p, logprob in chosen:
            parent = live[number]
            step = _as_taken(steps[number], token, p)
            text, pending = _grown_text(model, parent, token)
            grown = _Live(
                parent.seq_id,
                [*parent.token_ids, token],
                [*parent.steps, step],
                logprob,
                text=text,
                pending=pending,
            )
            if model.is_eog(token):
                self.finished.append(self._beam(grown, "eos"))
            else:
                children.append(grown)
                taken.add(number)
        offered = {number for _, number, _, _ in scored}
        for number, beam in enumerate(live):
            if number not in offered:  # every continuation held a banned phrase
                dead = self._beam(beam, "banned", len(beam.token_ids))
                self.dead_ends.append(replace(dead, pruned_at=None))
                self.pruned.append(dead)
            elif number not in taken:
                self.pruned.append(self._beam(beam, "pruned", len(beam.token_ids)))
        self._assign(live, children)
        return children

    def _candidates(self, beam: _Live, probs: np.ndarray) -> list[tuple[int, float]]:
        """A beam's 2W most probable continuations, those completing a banned phrase
        passed over (each counted in `banned`)."""
        wanted = 2 * self.width
        nonzero = int(np.count_nonzero(probs))
        if self.bans is None:
            count = min(wanted, nonzero)
            top = np.argpartition(probs, -count)[-count:]
            return [(int(t), float(probs[t])) for t in top if probs[t] > 0.0]
        found: list[tuple[int, float]] = []
        for token in _most_probable(probs, nonzero, wanted + 32):
            text, _ = _grown_text(self.model, beam, token)
            if self.bans.find(text, len(beam.text)) is not None:
                self.banned += 1
                continue
            found.append((token, float(probs[token])))
            if len(found) == wanted:
                break
        return found

    def _steps(self, live: list[_Live], numbers: set[int]) -> dict[int, Step]:
        """The step record of each beam in `numbers` (its logits' candidate table)."""
        steps: dict[int, Step] = {}
        for number in sorted(numbers):
            beam = live[number]
            # One sampler serves every beam: it continues this beam's reply at its length
            # (min_tokens and a grammar count the reply's tokens).
            self.sampler.resume(len(beam.token_ids))
            assert beam.logits is not None
            step = self.sampler.sample(beam.logits, self.memory.tokens(beam.seq_id))
            self.sampler_us += step.elapsed_us
            steps[number] = step
        return steps

    def _assign(self, live: list[_Live], children: list[_Live]) -> None:
        """Give each child a sequence holding its parent's: the first child of a parent
        keeps the parent's, the others copy it (with the step) into one no beam holds
        any more."""
        parent_seqs = {beam.seq_id for beam in live}
        kept = {child.seq_id for child in children}
        free = [s for s in range(self.width) if s not in kept]
        free.sort(key=lambda s: s in parent_seqs)  # never held first, then childless parents
        seen: set[int] = set()
        copies: list[tuple[_Live, int]] = []
        for child in children:
            if child.seq_id in seen:
                copies.append((child, child.seq_id))
            seen.add(child.seq_id)
        for child, source in copies:
            child.seq_id, child.fork_from = free.pop(0), source


def _most_probable(probs: np.ndarray, nonzero: int, first: int) -> Iterator[int]:
    """The tokens of nonzero probability, most probable first (the first `first`
    sorted alone: the rest only when asked for)."""
    first = min(first, nonzero)
    top = np.argpartition(probs, -first)[-first:]
    yield from (int(t) for t in top[np.argsort(probs[top])[::-1]])
    if first < nonzero:
        rest = np.argsort(probs)[::-1][first:nonzero]
        yield from (int(t) for t in rest)


def _grown_text(model: Model, beam: _Live, token: int) -> tuple[str, bytes]:
    """The beam's text with `token` after it, and the bytes of a character left open."""
    if model.is_eog(token):
        return beam.text, beam.pending
    stream = Utf8Stream()
    stream.feed(beam.pending)
    text = beam.text + stream.feed(model.token_bytes(token))
    return text, stream.pending


def _as_taken(step: Step, token: int, prob: float) -> Step:
    """`step` (its candidate table) with `token` taken at `prob`, nothing drawn."""
    table = step.table
    rows = np.flatnonzero(table.token_ids == token)
    logit = float(table.logits[rows[0]]) if rows.size else None
    return replace(step, token_id=token, prob=prob, draw=None, logit=logit)
