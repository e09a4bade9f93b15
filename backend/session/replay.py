"""Regenerate a stored reply with its recorded settings schedule and compare tokens.

A reply is reproducible from: the conversation before it, the model file, the
settings at token 0 (seed and generator included) and every later settings change
with the index it took effect at. `replay` feeds the backend a `LiveSettings` and
switches `.current` right after the TokenEvent that precedes each recorded change, so
the backend (which reads `.current` before every token) samples token i with exactly
the settings recorded for i, on the same random stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from backend.chat.compare import first_divergence
from backend.chat.completion import as_document
from backend.chat.events import Decoding, FinishedEvent, NoticeEvent, TokenEvent
from backend.chat.protocol import ChatMessage, LiveSettings
from backend.llama.context import Layout
from backend.session.backend import SessionBackend
from backend.session.beam_result import beam_record
from backend.session.replay_cache import prepare_cache
from backend.session.run import Steer
from backend.store.records import ChatRecord, ReplyRecord
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.samplers.guidance import Guidance
from sampling.settings.record import SamplerSettings
from sampling.settings.registry import registry_of


class ReplayError(SamplescopeError):
    """A reply cannot be replayed (nothing to replay, or the generation failed)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """How a regenerated reply compares with the stored one.

    Attributes:
        stored: The stored token ids.
        replayed: The regenerated token ids.
        finish_reason: Why the regeneration ended ("cancelled" when it was stopped
            after as many tokens as an interrupted or cancelled reply had stored).
        text: The regenerated text.
        notices: Backend notices (e.g. old turns dropped to fit the context).
    """

    stored: tuple[int, ...]
    replayed: tuple[int, ...]
    finish_reason: str
    text: str
    notices: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        """Whether the token ids match one for one."""
        return self.stored == self.replayed

    @property
    def first_difference(self) -> int | None:
        """The first index where the sequences differ (None when identical)."""
        return first_divergence(self.stored, self.replayed)


def prompt_messages(chat: ChatRecord, reply: ReplyRecord) -> list[ChatMessage]:
    """What `generate` was given for the reply: the turns before it, or in completion
    mode the one document they make."""
    turns = chat.conversation_before(reply)
    return as_document(turns) if reply.mode == "completion" else turns


def branch_steer(reply: ReplyRecord, then: tuple[int, ...] = ()) -> Steer | None:
    """For a branch: the steer that starts it like the original did (None: none).

    The parent's tokens before the fork are given; the token at the fork is forced
    (whether it was chosen or drawn, the sampler drew one uniform there, so the
    stream stays aligned), and the tokens `then` after it (a path chosen in an
    explore tree: see `forced_path`).
    """
    at = reply.fork_at
    if at is None or at >= len(reply.token_ids):
        return None
    return Steer(reply.token_ids[:at], reply.token_ids[at], then)


def forced_path(reply: ReplyRecord, steps: Mapping[int, Step]) -> tuple[int, ...]:
    """The tokens a branch forced after its fork token (an explore path), from its
    stored steps: a forced step keeps no uniform though its settings draw with one.

    Greedy and Gumbel steps draw no uniform either: a run of them is not taken for a
    forced one (a greedy path is what greedy sampling gives anyway).
    """
    at = reply.fork_at
    if at is None:
        return ()
    forced: list[int] = []
    for index in range(at + 1, len(reply.token_ids)):
        step = steps.get(index)
        if step is None or step.draw is not None or step.cut_by == "greedy":
            break
        if step.settings.draw == "gumbel":
            break
        forced.append(reply.token_ids[index])
    return tuple(forced)


def decoding_of(reply: ReplyRecord) -> Decoding | None:
    """How the reply was decoded when beside siblings (None: alone).

    Raises:
        ReplayError: The record cannot be read.
    """
    if reply.decoding is None or beam_record(reply.decoding) is not None:
        return None  # a beam's step is rebuilt alone
    try:
        return Decoding.from_json(reply.decoding, registry_of(reply.settings_at(0)))
    except ValueError as error:
        raise ReplayError(f"reply {reply.number}: {error}") from None


def sequences_of(reply: ReplyRecord) -> int:
    """How many sequences rebuilding `reply` decodes at once: its lockstep siblings and
    itself (a sweep's batch, a compare's columns), with a negative prompt beside each
    guided one; 1 for a reply decoded alone.

    Raises:
        ReplayError: The record cannot be read.
    """
    decoding = decoding_of(reply)
    if decoding is None:
        return 1
    return sum(2 if Guidance.is_on(settings) else 1 for settings in decoding.settings)


def replay(
    backend: SessionBackend,
    chat: ChatRecord,
    reply: ReplyRecord,
    *,
    on_token: Callable[[TokenEvent], None] | None = None,
    forced: tuple[int, ...] = (),
) -> ReplayResult:
    """Regenerate `reply` of `chat` on `backend` and compare its tokens.

    The backend's memory is reset, then rebuilt the way the
    original session built it when the reply started from a warm cache (see
    `backend.session.replay_cache`): llama.cpp computes a token decoded alone slightly
    differently from one in a prefill batch, enough to change sampled tokens. The
    generation runs with the recorded max_tokens (prompt fitting depends on it) and
    stops once as many tokens as were stored came out, so an interrupted or
    cancelled reply is compared on the part that exists.

    `forced`: the tokens the branch forced after its fork token (`forced_path`).

    A reply decoded in lockstep with siblings (its recorded `decoding`: a compare
    column's sequence) is rebuilt the same way: every sibling runs again beside it, each with its
    settings, in the memory layout it records (one unified KV stream and repacked
    weights for a reply stored before streams: a token's logits then depend on the
    batch it was decoded in).

    Raises:
        ReplayError: The reply has no tokens, or the generation ended in an error.
    """
    if not reply.token_ids:
        raise ReplayError(f"reply {reply.number} has no tokens to replay")
    if reply.replay_problem is not None:
        raise ReplayError(f"reply {reply.number} cannot run again: {reply.replay_problem}")
    beams = beam_record(reply.decoding)
    if beams is not None:
        raise ReplayError(
            f"reply {reply.number} is beam {beams.get('rank')} of a beam search of "
            f"{beams.get('beams')}: its tokens were ranked, not drawn, so it does not replay"
        )
    decoding = decoding_of(reply)
    schedule: dict[int, SamplerSettings] = {
        change.from_index: change.settings for change in reply.settings_changes
    }
    live = LiveSettings(reply.settings_at(0))
    backend.prepare_model(live.current)  # before the cache is rebuilt under it
    notices = prepare_cache(backend, chat, reply)
    stored = len(reply.token_ids)
    stop = threading.Event()
    replayed: list[int] = list(reply.token_ids[: reply.fork_at or 0])
    finished: FinishedEvent | None = None
    max_tokens = max(reply.max_tokens or stored, stored)
    lives, number, steer = [live], 0, branch_steer(reply, forced)
    layout = None
    if decoding is not None:
        layout = Layout(decoding.streams, decoding.repack)
        number = decoding.number
        lives = [LiveSettings(settings) for settings in decoding.settings]
        lives[number] = live
        # A compare column made the reply of its turn is a branch from its first token, drawn
        # by its own sampler: nothing is forced, or its siblings would be too.
        steer = None if not reply.fork_at else steer
    generation = backend.generate_many(
        prompt_messages(chat, reply),
        lives,
        max_tokens=max_tokens,
        cancel=stop,
        raw=reply.mode == "completion",
        steer=steer,
        layout=layout,
    )
    for at, event in generation:
        if at != number:
            continue
        if isinstance(event, TokenEvent):
            replayed.append(event.step.token_id)
            upcoming = schedule.get(event.index + 1)
            if upcoming is not None:
                live.current = upcoming
            if len(replayed) >= stored:
                stop.set()
            if on_token is not None:
                on_token(event)
        elif isinstance(event, NoticeEvent):
            notices.append(event.message)
        elif isinstance(event, FinishedEvent):
            finished = event
    if finished is None:
        raise ReplayError("the backend ended without finishing the replay")
    if finished.reason == "error":
        raise ReplayError(f"the replay failed: {finished.error}")
    return ReplayResult(
        stored=reply.token_ids,
        replayed=tuple(replayed),
        finish_reason=finished.reason,
        text=finished.text,
        notices=tuple(notices),
    )
