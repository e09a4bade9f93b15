"""Steer a saved reply: recompute a past step ("what if"), explore the continuations
there, and branch from it.

All three rebuild exactly what the sampler saw at step `index` of a branch: the KV cache
as the reply's generation started from (`backend.session.replay_cache`), then the
prompt prefilled and the branch's earlier tokens decoded one at a time, as
the generation loop does (`SessionBackend.step_input`). So the logits are the
generation's own, and with the step's own settings the recomputed probabilities are
the stored ones.

A branch starts a fresh random stream from its settings' seed at the fork, so the same
command on the same chat gives the same tokens.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from backend.chat.events import FinishedEvent, NoticeEvent
from backend.chat.protocol import LiveSettings
from backend.session.backend import SessionBackend
from backend.session.explore import explore
from backend.session.explore_tree import Tree, TreeShape
from backend.session.replay import decoding_of, prompt_messages
from backend.session.replay_cache import prepare_cache
from backend.session.run import Steer, StepInput
from backend.store.branches import turn_of
from backend.store.recorded import recorded
from backend.store.recorder import ChatRecorder
from backend.store.records import ChatRecord, ReplyRecord, StoreError
from backend.store.store import ChatStore
from sampling.errors import SamplescopeError
from sampling.records import Step
from sampling.sampler import Sampler
from sampling.samplers.base import Report
from sampling.settings.record import SamplerSettings

DEFAULT_MAX_TOKENS = 512
Choice = Literal["rank", "token", "resample"]


class SteerError(SamplescopeError):
    """A step cannot be recomputed or branched from (the message says why)."""


@dataclass(frozen=True, slots=True)
class BranchResult:
    """A new branch, stored.

    Attributes:
        reply: The new branch as stored.
        parent: The branch it forks from.
        at: 0-based index of its first own token.
        notices: Backend notices (e.g. the cache could not be rebuilt exactly).
    """

    reply: ReplyRecord
    parent: ReplyRecord
    at: int
    notices: tuple[str, ...]


def _limit(reply: ReplyRecord) -> int:
    return max(reply.max_tokens or DEFAULT_MAX_TOKENS, len(reply.token_ids))


def rebuild_step(
    backend: SessionBackend, chat: ChatRecord, reply: ReplyRecord, index: int
) -> tuple[StepInput, tuple[str, ...]]:
    """What the sampler saw at step `index` of a branch: its logits and history,
    rebuilt through the replay path (nothing is generated), in lockstep with its
    siblings when it was decoded so (its recorded `decoding`).

    Returns:
        (the step's input; notices about rebuilding the cache).

    Raises:
        SamplescopeError: The step's input cannot be rebuilt.
    """
    notices = tuple(prepare_cache(backend, chat, reply))
    given = backend.step_input(
        prompt_messages(chat, reply),
        reply.token_ids[:index],
        max_tokens=_limit(reply),
        raw=reply.mode == "completion",
        decoding=decoding_of(reply),
        guidance=reply.settings_at(index),
    )
    return given, notices


def recompute(
    backend: SessionBackend,
    chat: ChatRecord,
    reply: ReplyRecord,
    index: int,
    settings: SamplerSettings,
    uniform: float | None = None,
    recorded: Mapping[str, Report] | None = None,
) -> tuple[Step, tuple[str, ...]]:
    """Step `index` of a branch recomputed under `settings` (nothing is generated).

    Args:
        uniform: The uniform to draw with: the stored step's own (the same
            randomness under other settings), or None for the first of a fresh stream.
        recorded: The stored step's reports (`Step.reports`): the units run with the
            state it reported (mirostat's mu, adaptive-p's target); None: afresh.

    Returns:
        (the step's record: candidates, kept count, cut; its `token_id` is what
        these settings draw with `uniform`; notices about rebuilding the cache).

    Raises:
        SamplescopeError: The step's input cannot be rebuilt.
    """
    given, notices = rebuild_step(backend, chat, reply, index)
    sampler = Sampler(
        settings,
        vocab_size=backend.info.n_vocab,
        vocabulary=backend.model,
        thinking_tags=backend.thinking_tags(reply.mode == "completion"),
    )
    sampler.resume(index, recorded)
    step = sampler.sample(
        given.logits, given.history, uniform=uniform, second=given.second, small=given.small
    )
    return step, notices


def pick_token(step: Step, choice: Choice, value: int | None) -> int | None:
    """The token a branch forces: the `value`-th candidate (rank, from 1), token
    `value` itself, or None (re-sample).

    Raises:
        SteerError: The rank is beyond the step's candidates.
    """
    if choice == "resample":
        return None
    assert value is not None
    if choice == "token":
        return value
    count = int(step.table.token_ids.shape[0])
    if not 1 <= value <= count:
        raise SteerError(f"the step lists {count} candidates: the rank must be 1 to {count}")
    return int(step.table.token_ids[value - 1])


def make_branch(
    backend: SessionBackend,
    store: ChatStore,
    chat: ChatRecord,
    reply: ReplyRecord,
    index: int,
    settings: SamplerSettings,
    force: int | None,
    max_tokens: int | None = None,
) -> BranchResult:
    """Generate and store a branch of `reply` from token `index`.

    Tokens before `index` are the parent's; token `index` is `force` (or drawn
    under `settings` when None); the rest is sampled under `settings`, up to
    `max_tokens` in all (None: the reply's own limit). The conversation follows the
    new branch when the reply is the chat's last turn.

    Raises:
        SamplescopeError: The generation failed or the store cannot be written.
    """
    notices = list(prepare_cache(backend, chat, reply))
    prefix = reply.token_ids[:index]
    head = b"".join(backend.model.token_bytes(t) for t in prefix)
    info = backend.info
    recorder = ChatRecorder.of_model(store, info, lambda: backend.template.switches.to_json())
    recorder.open_chat(chat.id)
    recorder.begin_branch(
        reply.id,
        index,
        settings,
        text=head.decode("utf-8", errors="ignore"),
        follow=chat.messages[-1].id == reply.message_id,  # the chat's last turn
    )
    if recorder.error is not None:
        raise StoreError(recorder.error)
    finished: FinishedEvent | None = None
    events = backend.generate(
        prompt_messages(chat, reply),
        LiveSettings(settings),
        max_tokens=_limit(reply) if max_tokens is None else max_tokens,
        raw=reply.mode == "completion",
        steer=Steer(tuple(prefix), force),
    )
    for event in recorded(events, recorder):
        if isinstance(event, NoticeEvent):
            notices.append(event.message)
        elif isinstance(event, FinishedEvent):
            finished = event
    if recorder.error is not None:
        raise StoreError(recorder.error)
    if finished is None or finished.reason == "error":
        error = "no result" if finished is None else finished.error
        raise SteerError(f"the branch could not be generated: {error}")
    again = store.load_chat(chat.id)
    branch = next(b for b in turn_of(again, reply) if b.id == recorder.reply_id)
    return BranchResult(branch, reply, index, tuple(notices))


def explore_step(
    backend: SessionBackend,
    chat: ChatRecord,
    reply: ReplyRecord,
    index: int,
    settings: SamplerSettings,
    shape: TreeShape,
    *,
    path: Sequence[int] = (),
    uniform: float | None = None,
    lockstep: bool = True,
    cancel: threading.Event | None = None,
) -> tuple[Tree, tuple[str, ...]]:
    """The tree of continuations at step `index` of a branch (nothing is stored).

    The step is rebuilt as `recompute` rebuilds it (the model at the step's control
    strength), so a root child's probability is what-if's `after` for that candidate.
    `path` goes deeper first: the tree starts after those tokens (decoded alone), at
    step `index + len(path)`.

    Returns:
        (the tree; notices about rebuilding the cache).

    Raises:
        SamplescopeError: The step cannot be rebuilt or the tree does not fit.
    """
    backend.prepare_model(reply.settings_at(index))  # its control strength, before the cache
    notices = tuple(prepare_cache(backend, chat, reply))
    tree = explore(
        backend,
        prompt_messages(chat, reply),
        (*reply.token_ids[:index], *path),
        settings,
        shape,
        max_tokens=_limit(reply),
        raw=reply.mode == "completion",
        decoding=None if path else decoding_of(reply),
        uniform=uniform,
        lockstep=lockstep,
        cancel=cancel,
    )
    return tree, notices
